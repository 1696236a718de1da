#include "hosts.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "fast/core/error.hpp"

namespace fast::cli {

namespace {

// A host name or address: letters, digits and . - _ : [ ] (an IPv6 address in brackets).
bool valid_name(const std::string& name) {
  return !name.empty() && name.size() <= 255 && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           std::string_view(".-_:[]").find(c) != std::string_view::npos;
  });
}

// Slots from text: 1 to 1024.
int parse_slots(const std::string& text, const std::string& where) {
  const bool digits = !text.empty() && text.size() <= 4 &&
                      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  const int n = digits ? std::stoi(text) : 0;
  FAST_ENFORCE(n >= 1 && n <= 1024, "{}: expected a number of processes from 1 to 1024, got '{}'", where, text);
  return n;
}

// "NAME" or "NAME:N" (the last ':' separates N, so that "[::1]:2" works).
LaunchHost parse_entry(const std::string& entry, const std::string& where) {
  LaunchHost h;
  const std::size_t colon = entry.rfind(':');
  const bool has_slots = colon != std::string::npos && entry.find(']', colon) == std::string::npos &&
                         (entry.front() == '[' || entry.find(':') == colon);
  h.name = has_slots ? entry.substr(0, colon) : entry;
  if (has_slots) h.slots = parse_slots(entry.substr(colon + 1), where);
  FAST_ENFORCE(valid_name(h.name), "{}: expected a host name or address (letters, digits, . - _ : [ ]), got '{}'",
               where, h.name);
  h.address = h.name;
  return h;
}

}  // namespace

std::vector<LaunchHost> parse_hosts(const std::string& spec, const std::string& flag) {
  std::vector<LaunchHost> hosts;
  std::size_t begin = 0;
  for (int index = 1; begin <= spec.size(); ++index) {
    const std::size_t end = std::min(spec.find(',', begin), spec.size());
    hosts.push_back(parse_entry(spec.substr(begin, end - begin), fmt::format("{} '{}', host {}", flag, spec, index)));
    begin = end + 1;
  }
  return hosts;
}

std::vector<LaunchHost> read_hostfile(const std::string& path) {
  std::ifstream in(path);
  FAST_ENFORCE(in.good(), "--hostfile '{}': cannot read it ({})", path, std::strerror(errno));
  std::vector<LaunchHost> hosts;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (const std::size_t hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream words(line);
    std::string word;
    if (!(words >> word)) continue;
    const std::string where = fmt::format("--hostfile '{}' line {}", path, number);
    LaunchHost h = parse_entry(word, where);
    while (words >> word) {
      const std::size_t eq = word.find('=');
      const std::string key = word.substr(0, eq), value = eq == std::string::npos ? "" : word.substr(eq + 1);
      if (key == "slots") {
        h.slots = parse_slots(value, where + " slots");
      } else if (key == "address" || key == "advertise") {
        FAST_ENFORCE(valid_name(value), "{}: {}= expects a host name or address, got '{}'", where, key, value);
        (key == "address" ? h.address : h.advertise) = value;
      } else {
        FAST_THROW(core::InvalidArgument,
                   "{}: expected slots=N, address=ADDR or advertise=ADDR after the host, got '{}'", where, word);
      }
    }
    hosts.push_back(std::move(h));
  }
  FAST_ENFORCE(!hosts.empty(), "--hostfile '{}': expected one host per line (NAME[:N] or NAME slots=N), got none",
               path);
  return hosts;
}

std::vector<const LaunchHost*> place_processes(const std::vector<LaunchHost>& hosts, int processes) {
  int slots = 0;
  for (const LaunchHost& h : hosts) slots += h.slots;
  FAST_ENFORCE(processes <= slots, "fast launch: -n {} processes do not fit the {} slots of the hosts", processes,
               slots);
  std::vector<const LaunchHost*> placement;
  for (const LaunchHost& h : hosts)
    for (int k = 0; k < h.slots && static_cast<int>(placement.size()) < processes; ++k) placement.push_back(&h);
  return placement;
}

std::vector<std::string> launcher_words(const std::string& launcher, const LaunchHost& host) {
  std::vector<std::string> words;
  std::istringstream in(launcher);
  std::string word;
  while (in >> word) {
    for (std::size_t open = word.find('{'); open != std::string::npos; open = word.find('{', open)) {
      const std::size_t close = word.find('}', open);
      const std::string name = word.substr(open, close == std::string::npos ? std::string::npos : close - open + 1);
      FAST_ENFORCE(name == "{host}" || name == "{address}",
                   "--launcher '{}': expected the placeholders {{host}} and {{address}} only, got '{}'", launcher,
                   name);
      const std::string& value = name == "{host}" ? host.name : host.address;
      word.replace(open, name.size(), value);
      open += value.size();
    }
    words.push_back(word);
  }
  FAST_ENFORCE(!words.empty(), "--launcher: expected a command template such as 'ssh {{host}}', got '{}'", launcher);
  return words;
}

}  // namespace fast::cli
