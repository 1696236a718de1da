#pragma once
// The hosts of `fast launch --hosts a:4,b:4` and `--hostfile FILE` (docs/launch.md, "Across hosts"),
// and the launcher template that starts a process on one of them ("ssh {host}").
//
// Errors: InvalidArgument naming the flag or the file and line, what was expected and what was got,
// before anything starts (a host file that cannot be read too). No shared state.

#include <string>
#include <vector>

namespace fast::cli {

struct LaunchHost {
  std::string name;       // as given; what {host} of the launcher template becomes
  int slots = 1;          // processes on it, >= 1
  std::string address;    // where the others reach it (the rendezvous, if first); default: name
  std::string advertise;  // FAST_ADVERTISE of its processes; empty: none
};

// "NAME:N,NAME:N,..." (":N" may be left out: 1 slot). `flag` names the option in messages.
std::vector<LaunchHost> parse_hosts(const std::string& spec, const std::string& flag = "--hosts");

// One host per line: "NAME[:N]" or "NAME [slots=N] [address=ADDR] [advertise=ADDR]"; '#' starts a
// comment; blank lines are skipped. A file without hosts is refused.
std::vector<LaunchHost> read_hostfile(const std::string& path);

// Host of each process: the first host's slots first, then the next host's, ... (`processes`
// must not exceed the slots; InvalidArgument naming both otherwise).
std::vector<const LaunchHost*> place_processes(const std::vector<LaunchHost>& hosts, int processes);

// The launcher template split at spaces, with {host} replaced by host.name and {address} by
// host.address in each word. InvalidArgument for an empty template or an unknown {placeholder}.
std::vector<std::string> launcher_words(const std::string& launcher, const LaunchHost& host);

}  // namespace fast::cli
