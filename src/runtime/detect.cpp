#include "fast/runtime/detect.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fast/core/error.hpp"
#include "fast/runtime/registry.hpp"

namespace fast::runtime {

std::optional<LauncherWorld> detect_launcher(const Environment& env) {
  struct Candidate {
    const LauncherSignature* signature;
    std::string_view runtime;
  };
  std::vector<Candidate> all;
  for (const RuntimeBackend& b : runtime_backends())
    for (const LauncherSignature& s : b.launchers) all.push_back({&s, b.name});
  std::stable_sort(all.begin(), all.end(), [](const Candidate& a, const Candidate& b) {
    return a.signature->precedence < b.signature->precedence;
  });
  for (const Candidate& c : all) {
    std::optional<LauncherWorld> world = c.signature->recognise(env);
    if (!world) continue;
    world->source = c.signature->name;
    world->runtime = c.runtime;
    return world;
  }
  return std::nullopt;
}

namespace {

std::string world_text(int world) { return world > 0 ? std::to_string(world) : std::string("the launcher's"); }

// A launcher's world of more than one process (or of a size known only once the runtime starts).
bool several_processes(const LauncherWorld& w) { return w.world != 1; }

// Refusals of a runtime named explicitly under a launcher that implies another one.
void check_given_runtime(const WorldRequest& request, const LauncherWorld& w, const RuntimeBackend& backend) {
  FAST_ENFORCE(backend.multi_process,
               "runtime: '{}' runs every worker inside this process, but this process is one of {} processes that "
               "{} started ({}): they would train {} independent copies of the run. Drop the runtime setting "
               "(--runtime, a config file's `runtime`, fast.init's runtime=; the launcher implies '{}'), or start a "
               "single process",
               request.runtime, world_text(w.world), w.source, w.evidence, world_text(w.world), w.runtime);
  if (backend.name == w.runtime) return;
  const std::string refusal = fmt::format(
      "runtime: '{}' under {} ({}), whose processes join the '{}' runtime: each would start a world of "
      "its own. Drop the runtime setting (--runtime, a config file's `runtime`, fast.init's runtime=)",
      request.runtime, w.source, w.evidence, w.runtime);
  // A runtime that joins by rendezvous may be given one of its own; the others take their world
  // from their own launchers only.
  if (backend.joins_by_rendezvous)
    FAST_ENFORCE(!request.process.rendezvous.empty(),
                 "{}, or give the '{}' runtime its own rendezvous (--rendezvous, --world-size)", refusal,
                 request.runtime);
  std::vector<std::string_view> launchers;
  for (const LauncherSignature& s : backend.launchers) launchers.push_back(s.name);
  FAST_ENFORCE(backend.joins_by_rendezvous, "{}, or start the processes with a launcher of the '{}' runtime ({})",
               refusal, request.runtime, fmt::join(launchers, ", "));
}

// Fills what the request left open from the launcher of the same runtime. A world size or rank
// that contradicts the launcher's is refused (the processes would wait for ones that never come),
// unless the request names a rendezvous of its own: a world joined by several launches.
void complete_process(ProcessOptions& p, const LauncherWorld& w) {
  const bool own_rendezvous = !p.rendezvous.empty() && p.rendezvous != w.rendezvous;
  FAST_ENFORCE(own_rendezvous || p.world_size <= 0 || w.world <= 0 || p.world_size == w.world,
               "world_size: {} processes given (--world-size, a config file's `world_size`), but {} started {} ({}); "
               "the run would wait for processes that never come. Drop the world size, or start {} processes",
               p.world_size, w.source, w.world, w.evidence, p.world_size);
  FAST_ENFORCE(own_rendezvous || p.process_rank < 0 || w.rank < 0 || p.process_rank == w.rank,
               "process_rank: {} given (--process-rank, a config file's `process_rank`), but {} made this process "
               "rank {} ({}). Drop the rank: the launcher assigns it",
               p.process_rank, w.source, w.rank, w.evidence);
  if (p.rendezvous.empty()) p.rendezvous = w.rendezvous;
  if (p.world_size <= 0 && w.world > 0) p.world_size = w.world;
  if (p.process_rank < 0 && w.rank >= 0) p.process_rank = w.rank;
}

// A launcher that hands out no keys: the user's keys (flags or FAST_KEY_FILE) or an explicit insecure.
void check_keys(const ProcessOptions& p, const LauncherWorld& w, const Environment& env) {
  if (w.brings_keys || p.insecure || !p.key_file.empty()) return;
  const char* key = env("FAST_KEY_FILE");
  const char* insecure = env("FAST_INSECURE");
  const bool has_key = key != nullptr && *key != '\0';
  const bool said_insecure = insecure != nullptr && std::string(insecure) != "0" && *insecure != '\0';
  FAST_ENFORCE(has_key || said_insecure,
               "key: {} ({}) starts the processes but hands out no keys, and the zmq runtime authenticates its peers: "
               "set FAST_KEY_FILE and FAST_ALLOW_FILE on every process (make them with `fast keygen`), or pass "
               "--insecure (FAST_INSECURE=1; fast.init: the environment variable) on a network you trust",
               w.source, w.evidence);
}

}  // namespace

WorldChoice choose_world(const WorldRequest& request, const Environment& env) {
  WorldChoice choice;
  choice.launcher = detect_launcher(env);
  choice.process = request.process;
  choice.runtime_given = !request.runtime.empty();
  choice.runtime = choice.runtime_given
                       ? request.runtime
                       : (choice.launcher ? choice.launcher->runtime : runtime_backends().front().name);
  const RuntimeBackend& backend = find_runtime(choice.runtime);
  if (choice.launcher && several_processes(*choice.launcher) && choice.runtime_given)
    check_given_runtime(request, *choice.launcher, backend);
  if (backend.multi_process && request.workers > 1) {
    const std::string ignored = fmt::format(
        "workers: {} workers asked for in this process, but the {} runtime's world is made of processes{}, so the "
        "count would be ignored",
        request.workers, choice.runtime,
        choice.launcher
            ? fmt::format(" (here {}, started by {})", world_text(choice.launcher->world), choice.launcher->source)
            : std::string());
    FAST_ENFORCE(!request.workers_binding, "{}. Drop --workers and start more processes", ignored);
    choice.warnings.push_back(ignored + " (a config file's value)");
  }
  // A world of processes that only a launcher makes (mpi: mpirun, srun), and none started this one.
  if (backend.multi_process && !backend.joins_by_rendezvous && !choice.launcher)
    choice.warnings.push_back(fmt::format(
        "no launcher started this process, and the {} runtime takes its world from one (mpirun, srun): it runs "
        "alone, a world of 1 worker; start it with mpirun -np N or srun -n N for more",
        choice.runtime));
  if (choice.launcher && choice.launcher->runtime == choice.runtime) {
    complete_process(choice.process, *choice.launcher);
    check_keys(choice.process, *choice.launcher, env);
  }
  return choice;
}

void refuse_copies_of_one_run(std::string_view runtime, const Environment& env) {
  if (find_runtime(runtime).multi_process) return;
  const std::optional<LauncherWorld> w = detect_launcher(env);
  if (!w || !several_processes(*w)) return;
  FAST_THROW(InvalidArgument,
             "launch: runtime '{}' runs every worker inside this process, but this process is one of {} processes "
             "that {} started ({}): each would run a world of its own, {} independent copies of one run. Use the "
             "runtime '{}' (LaunchOptions::runtime; runtime::choose_world fills it in from the launcher), or start "
             "a single process",
             runtime, world_text(w->world), w->source, w->evidence, world_text(w->world), w->runtime);
}

std::string WorldChoice::describe() const {
  const std::string how = runtime_given ? "given" : (launcher ? "implied" : "the default");
  if (!launcher && runtime_given) return fmt::format("launcher: none; runtime {} (given)", runtime);
  if (!launcher) return fmt::format("launcher: none, a single process; runtime {} (the default)", runtime);
  const LauncherWorld& w = *launcher;
  const std::string rank = w.rank >= 0 ? std::to_string(w.rank) : std::string("(assigned)");
  const std::string where = process.rendezvous.empty() ? "" : fmt::format(", rendezvous {}", process.rendezvous);
  return fmt::format("launcher: {} ({}): process {} of {}{}; runtime {} ({})", w.source, w.evidence, rank,
                     world_text(w.world), where, runtime, how);
}

}  // namespace fast::runtime
