// SimGrid platform files (`--cluster FILE.xml`, docs/clusters.md): what the sim runtime does with
// one before any actor starts (src/runtime/sim/platform.cpp, build_platform): SimGrid's parser,
// then FAST's checks (at least one host, a route between every pair of hosts). The input is the
// file. Each input is loaded in a child process with its own engine: SimGrid's parser keeps state
// across engines, and after a refused file FAST refuses every later platform file of the process
// (platform.cpp). The child's coverage does not reach libFuzzer, so this harness mutates its corpus
// without coverage guidance; a child that crashes, reports a sanitizer error or throws anything but
// a documented refusal fails the parent.

#include <simgrid/s4u/Engine.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <string>

#include "fast/runtime/cluster.hpp"
#include "harness.hpp"
#include "platform.hpp"

namespace {

void load(const std::string& file) {
  fast::runtime::Cluster cluster;
  cluster.source = file;
  cluster.platform_xml = file;
  cluster.name = "fuzz";
  // SimGrid's own messages off: a refused file is reported by FAST's exception.
  std::string program = "fuzz_platform", quiet = "--log=root.thresh:critical";
  std::array<char*, 3> argv{program.data(), quiet.data(), nullptr};
  int argc = 2;
  simgrid::s4u::Engine engine(&argc, argv.data());
  fast::fuzz::expect_accepted_or_refused([&] { (void)fast::runtime::sim::build_platform(cluster); });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string file = fast::fuzz::write_input_file(data, size, ".xml");
  const pid_t child = ::fork();
  if (child < 0) __builtin_trap();
  if (child == 0) {
    load(file);  // anything undocumented escapes: std::terminate, SIGABRT
    ::_exit(0);
  }
  int status = 0;
  pid_t waited = -1;
  do {
    waited = ::waitpid(child, &status, 0);  // libFuzzer's timer signal interrupts the wait
  } while (waited < 0 && errno == EINTR);
  if (waited != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "fuzz_platform: the child that loaded the input %s (status %d)\n",
                 waited != child ? "could not be waited for" : "failed", status);
    __builtin_trap();
  }
  return 0;
}
