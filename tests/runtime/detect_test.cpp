// Launcher detection (runtime/detect.hpp) on environments given as tables: each launcher's
// variables give its world and runtime, the precedence is fast launch, MPI's, torchrun's; explicit
// options win; contradictions and malformed variables are refused naming what is wrong.
#include "fast/runtime/detect.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>

#include "fast/core/error.hpp"
#include "fast/runtime/launcher.hpp"

namespace {

using fast::runtime::choose_world;
using fast::runtime::detect_launcher;
using fast::runtime::Environment;
using fast::runtime::WorldRequest;
using Vars = std::map<std::string, std::string>;

// An environment that holds `vars` only. The map outlives the lookup (the tests keep it).
Environment from(const Vars& vars) {
  return [&vars](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

bool has(const std::string& name) {
  const auto names = fast::runtime::runtime_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The message of the InvalidArgument that f throws ("" when it throws none).
template <typename F>
std::string refusal(F&& f) {
  try {
    f();
  } catch (const fast::InvalidArgument& e) {
    return e.what();
  }
  return "";
}

const Vars kFastLaunch = {{"FAST_WORLD_SIZE", "3"},
                          {"FAST_PROCESS_RANK", "2"},
                          {"FAST_RENDEZVOUS", "127.0.0.1:4000"},
                          {"FAST_LAUNCHED", "1"}};
const Vars kTorchrun = {{"RANK", "1"},
                        {"WORLD_SIZE", "4"},
                        {"LOCAL_RANK", "1"},
                        {"LOCAL_WORLD_SIZE", "2"},
                        {"MASTER_ADDR", "10.0.0.5"},
                        {"MASTER_PORT", "29500"}};
const Vars kOpenMpi = {{"OMPI_COMM_WORLD_RANK", "3"},
                       {"OMPI_COMM_WORLD_SIZE", "8"},
                       {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                       {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                       {"PMIX_RANK", "3"}};

TEST(DetectLauncher, NoneInAnEmptyEnvironmentIsASingleThreadsProcess) {
  const Vars none;
  EXPECT_FALSE(detect_launcher(from(none)).has_value());
  const auto world = choose_world({}, from(none));
  EXPECT_EQ(world.runtime, "threads");
  EXPECT_FALSE(world.launcher.has_value());
  EXPECT_NE(world.describe().find("launcher: none"), std::string::npos) << world.describe();
}

TEST(DetectLauncher, FastLaunchGivesItsWorldAndTheZmqRuntime) {
  if (!has("zmq")) GTEST_SKIP() << "no zmq runtime in this build";
  const auto w = detect_launcher(from(kFastLaunch));
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->source, "fast launch");
  EXPECT_EQ(w->runtime, "zmq");
  EXPECT_EQ(w->rank, 2);
  EXPECT_EQ(w->world, 3);
  EXPECT_EQ(w->local_world, 3);  // FAST_LAUNCHED: every process on this host
  EXPECT_EQ(w->rendezvous, "127.0.0.1:4000");
  const auto world = choose_world({}, from(kFastLaunch));
  EXPECT_EQ(world.runtime, "zmq");
  EXPECT_EQ(world.process.world_size, 3);
  EXPECT_EQ(world.process.process_rank, 2);
  EXPECT_EQ(world.process.rendezvous, "127.0.0.1:4000");
  EXPECT_NE(world.describe().find("fast launch"), std::string::npos) << world.describe();
  EXPECT_NE(world.describe().find("process 2 of 3"), std::string::npos) << world.describe();
}

TEST(DetectLauncher, FastLaunchAcrossHostsGivesEachProcessItsHostsProcesses) {
  if (!has("zmq")) GTEST_SKIP() << "no zmq runtime in this build";
  Vars vars = kFastLaunch;  // process 2 of 3, the first of the 2 that launch placed on its host
  vars.insert({{"FAST_LOCAL_RANK", "0"}, {"FAST_LOCAL_WORLD_SIZE", "2"}});
  const auto w = detect_launcher(from(vars));
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->world, 3);
  EXPECT_EQ(w->local_rank, 0);
  EXPECT_EQ(w->local_world, 2);
  vars["FAST_LOCAL_RANK"] = "2";  // past the 2 processes of its host
  EXPECT_NE(refusal([&] { (void)detect_launcher(from(vars)); }).find("FAST_LOCAL_RANK"), std::string::npos);
  vars["FAST_LOCAL_RANK"] = "0";
  vars["FAST_LOCAL_WORLD_SIZE"] = "4";  // more than the run's processes
  EXPECT_NE(refusal([&] { (void)detect_launcher(from(vars)); }).find("FAST_LOCAL_WORLD_SIZE"), std::string::npos);
}

TEST(DetectLauncher, TorchrunMasterAddressIsTheRendezvousAndItsRanksTheWorld) {
  if (!has("zmq")) GTEST_SKIP() << "no zmq runtime in this build";
  const auto w = detect_launcher(from(kTorchrun));
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->source, "torchrun");
  EXPECT_EQ(w->runtime, "zmq");
  EXPECT_EQ(w->rank, 1);
  EXPECT_EQ(w->world, 4);
  EXPECT_EQ(w->local_rank, 1);
  EXPECT_EQ(w->local_world, 2);
  EXPECT_EQ(w->rendezvous, "10.0.0.5:29500");
  EXPECT_FALSE(w->brings_keys);
  // torchrun's agent store holds MASTER_PORT: FAST meets on the next port.
  Vars agent = kTorchrun;
  agent["TORCHELASTIC_USE_AGENT_STORE"] = "True";
  EXPECT_EQ(detect_launcher(from(agent))->rendezvous, "10.0.0.5:29501");
  // An IPv6 address is bracketed; FAST_RENDEZVOUS (without FAST_WORLD_SIZE) overrides the master's.
  Vars v6 = kTorchrun;
  v6["MASTER_ADDR"] = "fd00::1";
  EXPECT_EQ(detect_launcher(from(v6))->rendezvous, "[fd00::1]:29500");
  v6["FAST_RENDEZVOUS"] = "10.0.0.9:7000";
  EXPECT_EQ(detect_launcher(from(v6))->rendezvous, "10.0.0.9:7000");
}

TEST(DetectLauncher, TorchrunWithoutKeysIsRefusedUnlessInsecureOrKeysAreGiven) {
  if (!has("zmq")) GTEST_SKIP() << "no zmq runtime in this build";
  const std::string message = refusal([&] { choose_world({}, from(kTorchrun)); });
  EXPECT_NE(message.find("torchrun"), std::string::npos) << message;
  EXPECT_NE(message.find("--insecure"), std::string::npos) << message;
  EXPECT_NE(message.find("FAST_KEY_FILE"), std::string::npos) << message;
  Vars insecure = kTorchrun;
  insecure["FAST_INSECURE"] = "1";
  const auto world = choose_world({}, from(insecure));
  EXPECT_EQ(world.runtime, "zmq");
  EXPECT_EQ(world.process.world_size, 4);
  EXPECT_EQ(world.process.process_rank, 1);
  EXPECT_EQ(world.process.rendezvous, "10.0.0.5:29500");
  Vars keyed = kTorchrun;
  keyed["FAST_KEY_FILE"] = "/keys/run.key";
  EXPECT_EQ(choose_world({}, from(keyed)).runtime, "zmq");
  WorldRequest flag;
  flag.process.insecure = true;
  EXPECT_EQ(choose_world(flag, from(kTorchrun)).runtime, "zmq");
}

TEST(DetectLauncher, MpiLaunchersGiveTheMpiRuntime) {
  if (!has("mpi")) GTEST_SKIP() << "no mpi runtime in this build";
  const auto ompi = detect_launcher(from(kOpenMpi));
  ASSERT_TRUE(ompi.has_value());
  EXPECT_EQ(ompi->runtime, "mpi");
  EXPECT_EQ(ompi->rank, 3);
  EXPECT_EQ(ompi->world, 8);
  EXPECT_EQ(ompi->local_world, 2);
  EXPECT_NE(ompi->source.find("OpenMPI"), std::string::npos);  // before PMIx, which tells no size
  const Vars pmi = {{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}};
  EXPECT_EQ(detect_launcher(from(pmi))->world, 2);
  const Vars pmix = {{"PMIX_RANK", "5"}};
  EXPECT_EQ(detect_launcher(from(pmix))->rank, 5);
  EXPECT_EQ(detect_launcher(from(pmix))->world, 0);  // known once MPI starts
  const Vars srun = {{"SLURM_PROCID", "1"},
                     {"SLURM_NTASKS", "6"},
                     {"SLURM_STEP_ID", "0"},
                     {"SLURM_LOCALID", "1"},
                     {"SLURM_NTASKS_PER_NODE", "3"}};
  const auto slurm = detect_launcher(from(srun));
  ASSERT_TRUE(slurm.has_value());
  EXPECT_EQ(slurm->runtime, "mpi");
  EXPECT_EQ(slurm->world, 6);
  EXPECT_EQ(slurm->rank, 1);
  EXPECT_EQ(slurm->local_world, 3);
  // A batch script's shell has SLURM_PROCID and SLURM_NTASKS but is no job step: a single process.
  const Vars batch = {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "6"}};
  EXPECT_FALSE(detect_launcher(from(batch)).has_value());
}

TEST(DetectLauncher, PrecedenceIsFastLaunchThenMpiThenTorchrun) {
  if (!has("mpi") || !has("zmq")) GTEST_SKIP() << "needs the zmq and mpi runtimes";
  Vars all = kTorchrun;
  all.insert(kOpenMpi.begin(), kOpenMpi.end());
  EXPECT_EQ(detect_launcher(from(all))->runtime, "mpi");
  all.insert(kFastLaunch.begin(), kFastLaunch.end());
  EXPECT_EQ(detect_launcher(from(all))->source, "fast launch");
}

TEST(DetectLauncher, ExplicitOptionsWinOverTheLaunchers) {
  if (!has("zmq")) GTEST_SKIP() << "no zmq runtime in this build";
  WorldRequest request;
  request.runtime = "zmq";
  request.process.world_size = 5;
  request.process.process_rank = 0;
  request.process.rendezvous = "10.1.1.1:9000";
  const auto world = choose_world(request, from(kFastLaunch));
  EXPECT_TRUE(world.runtime_given);
  EXPECT_EQ(world.process.world_size, 5);
  EXPECT_EQ(world.process.process_rank, 0);
  EXPECT_EQ(world.process.rendezvous, "10.1.1.1:9000");
  EXPECT_NE(world.describe().find("(given)"), std::string::npos) << world.describe();
}

TEST(DetectLauncher, ContradictionsAreRefusedNamingBothSides) {
  if (!has("zmq")) GTEST_SKIP() << "no zmq runtime in this build";
  WorldRequest threads;
  threads.runtime = "threads";
  const std::string copies = refusal([&] { choose_world(threads, from(kFastLaunch)); });
  EXPECT_NE(copies.find("independent copies"), std::string::npos) << copies;
  EXPECT_NE(copies.find("fast launch"), std::string::npos) << copies;
  WorldRequest workers;
  workers.workers = 4;
  const std::string ignored = refusal([&] { choose_world(workers, from(kFastLaunch)); });
  EXPECT_NE(ignored.find("workers: 4"), std::string::npos) << ignored;
  EXPECT_NE(ignored.find("ignored"), std::string::npos) << ignored;
  workers.workers_binding = false;  // a config file's count: a warning
  const auto warned = choose_world(workers, from(kFastLaunch));
  ASSERT_EQ(warned.warnings.size(), 1u);
  EXPECT_NE(warned.warnings[0].find("ignored"), std::string::npos) << warned.warnings[0];
  workers.workers_binding = true;
  workers.workers = 1;  // one worker per process is what the launcher gives anyway
  EXPECT_EQ(choose_world(workers, from(kFastLaunch)).runtime, "zmq");
  // A world of one process may run any runtime.
  const Vars one = {{"FAST_WORLD_SIZE", "1"}, {"FAST_RENDEZVOUS", "127.0.0.1:4000"}};
  EXPECT_EQ(choose_world(threads, from(one)).runtime, "threads");
  if (has("mpi")) {
    WorldRequest mpi;
    mpi.runtime = "mpi";
    const std::string other = refusal([&] { choose_world(mpi, from(kFastLaunch)); });
    EXPECT_NE(other.find("world of its own"), std::string::npos) << other;
    // mpi takes no rendezvous of its own: one given changes nothing, so it is still refused, and
    // the refusal names mpi's launchers instead of a rendezvous.
    mpi.process.rendezvous = "127.0.0.1:4100";
    const std::string still = refusal([&] { choose_world(mpi, from(kFastLaunch)); });
    EXPECT_NE(still.find("world of its own"), std::string::npos) << still;
    EXPECT_NE(still.find("mpirun (OpenMPI)"), std::string::npos) << still;
    EXPECT_EQ(still.find("--rendezvous"), std::string::npos) << still;
    // Without any launcher it runs alone (an MPI singleton), and says so.
    WorldRequest alone;
    alone.runtime = "mpi";
    const auto single = choose_world(alone, from(Vars{}));
    ASSERT_EQ(single.warnings.size(), 1u);
    EXPECT_NE(single.warnings[0].find("the mpi runtime takes its world from one (mpirun, srun): it runs alone, a "
                                      "world of 1 worker"),
              std::string::npos)
        << single.warnings[0];
  }
}

// A program of the library that launches an in-process world under a launcher of several
// processes would run copies of one run: runtime::launch() refuses it, naming the launcher; a
// single process, or a launcher's world of one, is left alone.
TEST(DetectLauncher, AnInProcessWorldUnderALauncherOfSeveralProcessesIsRefused) {
  if (!has("zmq")) GTEST_SKIP() << "no zmq runtime in this build";
  const std::string why = refusal([] { fast::runtime::refuse_copies_of_one_run("threads", from(kFastLaunch)); });
  EXPECT_NE(why.find("launch: runtime 'threads' runs every worker inside this process, but this process is one of 3 "
                     "processes that fast launch started"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("3 independent copies of one run. Use the runtime 'zmq'"), std::string::npos) << why;
  EXPECT_EQ(refusal([] { fast::runtime::refuse_copies_of_one_run("zmq", from(kFastLaunch)); }), "");
  const Vars none, one = {{"FAST_WORLD_SIZE", "1"},
                          {"FAST_PROCESS_RANK", "0"},
                          {"FAST_RENDEZVOUS", "127.0.0.1:4000"},
                          {"FAST_LAUNCHED", "1"}};
  EXPECT_EQ(refusal([&] { fast::runtime::refuse_copies_of_one_run("threads", from(none)); }), "");
  EXPECT_EQ(refusal([&] { fast::runtime::refuse_copies_of_one_run("threads", from(one)); }), "");
  // Through launch() itself, under this process's own environment: a torchrun-like world of 2.
  ::setenv("RANK", "0", 1);
  ::setenv("WORLD_SIZE", "2", 1);
  ::setenv("MASTER_ADDR", "127.0.0.1", 1);
  ::setenv("MASTER_PORT", "29999", 1);
  bool ran = false;
  const std::string launched =
      refusal([&] { fast::runtime::launch({.runtime = "threads", .workers = 2}, [&](auto&) { ran = true; }); });
  for (const char* v : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}) ::unsetenv(v);
  EXPECT_NE(launched.find("one of 2 processes that torchrun started"), std::string::npos) << launched;
  EXPECT_FALSE(ran);
}

TEST(DetectLauncher, ZmqUnderAnotherLauncherNeedsARendezvousOfItsOwn) {
  if (!has("mpi") || !has("zmq")) GTEST_SKIP() << "needs the zmq and mpi runtimes";
  WorldRequest zmq;
  zmq.runtime = "zmq";
  const std::string refused = refusal([&] { choose_world(zmq, from(kOpenMpi)); });
  EXPECT_NE(refused.find("its own rendezvous (--rendezvous, --world-size)"), std::string::npos) << refused;
  zmq.process.rendezvous = "127.0.0.1:4100";
  zmq.process.world_size = 2;
  const auto world = choose_world(zmq, from(kOpenMpi));
  EXPECT_EQ(world.runtime, "zmq");
  EXPECT_EQ(world.process.rendezvous, "127.0.0.1:4100");
  EXPECT_EQ(world.process.world_size, 2);  // its own, not mpirun's
}

TEST(DetectLauncher, AWorldSizeOrRankThatContradictsTheLauncherIsRefused) {
  if (!has("zmq")) GTEST_SKIP() << "no zmq runtime in this build";
  WorldRequest bigger;
  bigger.process.world_size = 4;  // fast launch started 3
  const std::string size = refusal([&] { choose_world(bigger, from(kFastLaunch)); });
  EXPECT_NE(size.find("world_size: 4 processes given"), std::string::npos) << size;
  EXPECT_NE(size.find("fast launch started 3"), std::string::npos) << size;
  WorldRequest rank;
  rank.process.process_rank = 1;  // fast launch made this process rank 2
  const std::string other = refusal([&] { choose_world(rank, from(kFastLaunch)); });
  EXPECT_NE(other.find("process_rank: 1 given"), std::string::npos) << other;
  EXPECT_NE(other.find("rank 2"), std::string::npos) << other;
  // The launcher's own values are no contradiction.
  WorldRequest same;
  same.process.world_size = 3;
  same.process.process_rank = 2;
  EXPECT_EQ(choose_world(same, from(kFastLaunch)).process.world_size, 3);
  // A rendezvous of its own makes a world of several launches: its size is the request's.
  bigger.process.rendezvous = "10.1.1.1:9000";
  EXPECT_EQ(choose_world(bigger, from(kFastLaunch)).process.world_size, 4);
}

TEST(DetectLauncher, MalformedVariablesAreRefusedNamingThem) {
  if (!has("zmq")) GTEST_SKIP() << "no zmq runtime in this build";
  Vars bad = kTorchrun;
  bad["WORLD_SIZE"] = "four";
  EXPECT_NE(refusal([&] { detect_launcher(from(bad)); }).find("WORLD_SIZE"), std::string::npos);
  bad = kTorchrun;
  bad["RANK"] = "4";  // outside [0, 4)
  EXPECT_NE(refusal([&] { detect_launcher(from(bad)); }).find("RANK"), std::string::npos);
  bad = kTorchrun;
  bad.erase("MASTER_PORT");
  EXPECT_NE(refusal([&] { detect_launcher(from(bad)); }).find("MASTER_PORT"), std::string::npos);
  bad = kFastLaunch;
  bad["FAST_WORLD_SIZE"] = "0";
  EXPECT_NE(refusal([&] { detect_launcher(from(bad)); }).find("FAST_WORLD_SIZE"), std::string::npos);
}

}  // namespace
