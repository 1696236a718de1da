// settings_difference (fast/runtime/launcher.hpp): the first setting two processes of a run do not
// share.

#include <set>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fast/runtime/launcher.hpp"

namespace fast::runtime {

std::string settings_difference(const std::string& mine, const std::string& mine_name, const std::string& theirs,
                                const std::string& theirs_name) {
  if (mine.empty() || theirs.empty() || mine == theirs) return "";
  const nlohmann::json a = nlohmann::json::parse(mine, nullptr, false);
  const nlohmann::json b = nlohmann::json::parse(theirs, nullptr, false);
  if (!a.is_object()) return fmt::format("the settings of {} cannot be read", mine_name);
  if (!b.is_object()) return fmt::format("the settings of {} cannot be read", theirs_name);
  std::set<std::string> names;
  for (const auto& [name, value] : a.items()) names.insert(name);
  for (const auto& [name, value] : b.items()) names.insert(name);
  const auto text = [](const nlohmann::json& j, const std::string& name) {
    if (!j.contains(name)) return std::string("(none)");
    return j[name].is_string() ? j[name].get<std::string>() : j[name].dump();
  };
  for (const std::string& name : names)
    if (text(a, name) != text(b, name))
      return fmt::format("{} = {} in {}, {} in {}", name, text(a, name), mine_name, text(b, name), theirs_name);
  return "";
}

}  // namespace fast::runtime
