// End-to-end tests of `fast launch` (its restarts: launch_restart_test.cpp) and `fast keygen`: the built command runs
// as a child process with its stdout and stderr in files; every run is bounded in time and killed if it overruns, and
// the tests check by pid that no process it started survives.

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "common/run_fast.hpp"
#include "fast/runtime/zmq/keys.hpp"
#include "launch_common.hpp"

namespace {

using namespace fast::testing::launch_cli;  // NOLINT(google-build-using-namespace): the shared helpers

TEST(Launch, EachProcessGetsItsRankWorldSizeAndRendezvous) {
  const FastDone r =
      run_fast("env", launch_sh({"-n", "3"},
                                "echo \"rank=$FAST_PROCESS_RANK size=$FAST_WORLD_SIZE rdv=$FAST_RENDEZVOUS "
                                "launched=$FAST_LAUNCHED insecure=$FAST_INSECURE\""));
  ASSERT_EQ(r.code, exit_code::ok) << r.out << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(rdv=(127\.0\.0\.1:\d+))"))) << r.out;
  const std::string rdv = m[1];
  EXPECT_NE(rdv, "127.0.0.1:0");
  for (int rank = 0; rank < 3; ++rank) {
    std::ostringstream want_text;
    want_text << "[" << rank << "] rank=" << rank << " size=3 rdv=" << rdv << " launched=1 insecure=0";
    const std::string want = want_text.str();
    EXPECT_TRUE(contains(r.out, want + "\n")) << want << " not in:\n" << r.out;
  }
  EXPECT_EQ(lines_of(r.out).size(), 3u) << r.out;
}

// An option given twice takes its last value, as fast train's flags (docs/launch.md).
TEST(Launch, AnOptionGivenTwiceTakesItsLastValue) {
  const FastDone r =
      run_fast("twice", launch_sh({"-n", "3", "--nprocs", "2", "--insecure"}, "echo \"size=$FAST_WORLD_SIZE\""));
  ASSERT_EQ(r.code, exit_code::ok) << r.out << r.err;
  std::vector<std::string> lines = lines_of(r.out);
  std::sort(lines.begin(), lines.end());  // the processes' lines come in either order
  EXPECT_EQ(lines, (std::vector<std::string>{"[0] size=2", "[1] size=2"})) << r.out;
}

// A port below the kernel's ephemeral range (32768-60999 by default), which other tests' outgoing
// connections may hold for a moment.
TEST(Launch, PortOptionSetsTheRendezvousPort) {
  const FastDone r = run_fast("port", launch_sh({"-n", "2", "--port", "29123"}, "echo \"rdv=$FAST_RENDEZVOUS\""));
  ASSERT_EQ(r.code, exit_code::ok) << r.err;
  EXPECT_TRUE(contains(r.out, "[0] rdv=127.0.0.1:29123\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "[1] rdv=127.0.0.1:29123\n")) << r.out;
}

TEST(Launch, GeneratedKeyIs0600InA0700FolderAdmittedByTheAllowListAndRemovedAtExit) {
  const FastDone r =
      run_fast("keys", launch_sh({"-n", "2"},
                                 "echo \"key=$FAST_KEY_FILE\"; echo \"modes=$(stat -c %a \"$FAST_KEY_FILE\" "
                                 "\"$(dirname \"$FAST_KEY_FILE\")\" | tr '\\n' ' ')\"; grep public \"$FAST_KEY_FILE\"; "
                                 "grep -v '^#' \"$FAST_ALLOW_FILE\""));
  ASSERT_EQ(r.code, exit_code::ok) << r.out << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(\[0\] key=(\S+))"))) << r.out;
  const fs::path key = m[1].str();
  EXPECT_TRUE(contains(r.out, "[1] key=" + key.string() + "\n")) << "one key for the run:\n" << r.out;
  EXPECT_TRUE(contains(r.out, "[0] modes=600 700 \n")) << r.out;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(\[0\] public = "(\S{40})\")"))) << r.out;
  EXPECT_TRUE(contains(r.out, "[0] " + m[1].str() + " fast launch\n")) << "allow-list lacks the key:\n" << r.out;
  EXPECT_FALSE(fs::exists(key.parent_path())) << key.parent_path() << " left behind";
}

TEST(Launch, LinesOfConcurrentWritersStayWholeAndPartialLastLinesAreFlushed) {
  // Each line is written in three pieces, ~3 KB long, by 4 processes at once, on stdout and stderr.
  const std::string script =
      "pad=$(printf '%3000s' '' | tr ' ' x); i=0; while [ $i -lt 200 ]; do "
      "printf 'r=%s i=%s ' $FAST_PROCESS_RANK $i; printf '%s' $pad; printf ' end\\n'; "
      "printf 'e=%s i=%s\\n' $FAST_PROCESS_RANK $i >&2; i=$((i+1)); done; printf 'tail-%s' $FAST_PROCESS_RANK";
  const FastDone r = run_fast("lines", launch_sh({"-n", "4"}, script), 60);
  ASSERT_EQ(r.code, exit_code::ok) << r.err;
  const std::regex line_re(R"(\[(\d)\] r=(\d) i=(\d+) x{3000} end)");
  std::map<int, int> next;  // rank -> next expected i
  int tails = 0;
  for (const std::string& line : lines_of(r.out)) {
    std::smatch m;
    if (std::regex_match(line, m, line_re)) {
      const int rank = std::stoi(m[1]);
      EXPECT_EQ(m[2], m[1]) << "line of rank " << m[2] << " prefixed " << m[1];
      EXPECT_EQ(std::stoi(m[3]), next[rank]++) << "rank " << rank << " out of order";
    } else if (std::regex_match(line, m, std::regex(R"(\[(\d)\] tail-(\d))")) && m[1] == m[2]) {
      ++tails;
    } else {
      ADD_FAILURE() << "broken line (" << line.size() << " chars): " << line.substr(0, 120);
    }
  }
  for (int rank = 0; rank < 4; ++rank) EXPECT_EQ(next[rank], 200) << "rank " << rank;
  EXPECT_EQ(tails, 4);
  int err_lines = 0;
  for (const std::string& line : lines_of(r.err)) {
    if (std::regex_match(line, std::regex(R"(\[(\d)\] e=\1 i=\d+)"))) ++err_lines;
  }
  EXPECT_EQ(err_lines, 800) << r.err.substr(0, 2000);
}

TEST(Launch, FirstFailureGivesItsExitCodeAndIsNamed) {
  const FastDone r =
      run_fast("fail", launch_sh({"-n", "3", "--grace", "20"},
                                 "echo pid=$$; if [ $FAST_PROCESS_RANK = 1 ]; then exit 3; fi; sleep 0.5; exit 0"));
  EXPECT_EQ(r.code, 3) << r.out << r.err;  // the script's own code, passed through
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(\[1\] pid=(\d+))"))) << r.out;
  EXPECT_TRUE(contains(r.err, "fast launch: process 1 (pid " + m[1].str() + ") failed first: exit code 3\n")) << r.err;
  EXPECT_FALSE(contains(r.err, "sending SIGTERM")) << "the others ended by themselves within the grace:\n" << r.err;
  EXPECT_TRUE(contains(r.err,
                       "fast launch: 2 processes ended with exit code 0 after process 1 failed, so they went "
                       "on without it (the summary of a fast train run says so); launch's exit code is still that "
                       "failure's, 3\n"))
      << r.err;
}

// A process that exits 3 (a lost peer) first, and a later one that fails otherwise: the later one
// is the run's failure (its code, named); alone, the exit 3 stays the run's.
TEST(Launch, ALostPeerFailureGivesWayToTheFailureItFollowedFrom) {
  const FastDone r = run_fast(
      "consequence", launch_sh({"-n", "3", "--grace", "20"},
                               "case $FAST_PROCESS_RANK in 0) exit 3;; 1) sleep 0.5; exit 7;; *) sleep 1;; esac"));
  EXPECT_EQ(r.code, 7) << r.err;
  EXPECT_TRUE(contains(r.err, "process 0 (pid")) << r.err;
  EXPECT_TRUE(contains(r.err, "failed first: exit code 3")) << r.err;
  EXPECT_TRUE(contains(r.err, "failed: exit code 7; the exit code 3 of process 0 before it (a lost peer)")) << r.err;
  const FastDone alone =
      run_fast("consequence_alone",
               launch_sh({"-n", "2", "--grace", "20"}, "case $FAST_PROCESS_RANK in 0) exit 3;; *) sleep 0.5;; esac"));
  EXPECT_EQ(alone.code, 3) << alone.err;
  EXPECT_FALSE(contains(alone.err, "followed from")) << alone.err;
  // An exit 3 whose process said it was an I/O error of its own (a port taken, a file) is no lost
  // peer: it stays the run's failure, and the later timeout of a process that waited for it is not.
  const FastDone own =
      run_fast("consequence_own_io",
               launch_sh({"-n", "2", "--grace", "20"},
                         "case $FAST_PROCESS_RANK in 0) echo 'fast: I/O error: cannot listen' >&2; exit 3;; "
                         "*) sleep 0.5; exit 4;; esac"));
  EXPECT_EQ(own.code, 3) << own.err;
  EXPECT_FALSE(contains(own.err, "followed from")) << own.err;
  // The same code twice: a first process that lost its peer, then the peer, which said it failed on
  // an I/O error of its own (a file it could not write): the peer's failure is the run's.
  const FastDone echo = run_fast(
      "consequence_same_code",
      launch_sh({"-n", "2", "--grace", "20"},
                "case $FAST_PROCESS_RANK in 0) echo 'fast: peer lost: worker 1 failed: cannot write' >&2; exit 3;; "
                "*) sleep 0.5; echo 'fast: I/O error: cannot write' >&2; exit 3;; esac"));
  EXPECT_EQ(echo.code, 3) << echo.err;
  EXPECT_TRUE(contains(echo.err, "process 0 (pid")) << echo.err;
  EXPECT_TRUE(contains(echo.err, "failed: exit code 3; the exit code 3 of process 0 before it (a lost peer)"))
      << echo.err;
}

TEST(Launch, KilledProcessGives128PlusSignalAndTheOthersAreStoppedAfterTheGrace) {
  const FastDone r = run_fast(
      "killed", launch_sh({"-n", "3", "--grace", "1"},
                          "echo pid=$$; if [ $FAST_PROCESS_RANK = 2 ]; then kill -KILL $$; fi; exec sleep 60"));
  EXPECT_EQ(r.code, exit_code::killed_by(SIGKILL)) << r.out << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(process 2 \(pid \d+\) failed first: killed by signal SIGKILL)")))
      << r.err;
  EXPECT_TRUE(contains(r.err, "sending SIGTERM to the 2 processes still running")) << r.err;
  EXPECT_LT(r.seconds, 15);
  const auto pids = printed_pids(r.out);
  EXPECT_EQ(pids.size(), 3u) << r.out;
  expect_none_alive(pids);
}

TEST(Launch, TimeoutStopsSleepingProcessesWithExitCode124) {
  const FastDone r = run_fast("timeout", launch_sh({"-n", "2", "--timeout", "1"}, "echo pid=$$; exec sleep 60"));
  EXPECT_EQ(r.code, exit_code::launch_timeout) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "--timeout 1 s reached")) << r.err;
  EXPECT_LT(r.seconds, 10);
  const auto pids = printed_pids(r.out);
  EXPECT_EQ(pids.size(), 2u) << r.out;
  expect_none_alive(pids);
}

TEST(Launch, TimeoutEscalatesToSigkillWhenSigtermIsIgnored) {
  // The shell ignores SIGTERM; its sleeps (same process group) are killed with it.
  const FastDone r = run_fast(
      "escalate", launch_sh({"-n", "2", "--timeout", "1"}, "trap '' TERM; echo pid=$$; while :; do sleep 0.2; done"));
  EXPECT_EQ(r.code, exit_code::launch_timeout) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "sending SIGKILL to the 2 processes still running")) << r.err;
  EXPECT_GT(r.seconds, 5.5);
  EXPECT_LT(r.seconds, 15);
  expect_none_alive(printed_pids(r.out));
}

TEST(Launch, ForwardsSigtermToEveryProcessAndRemovesTheKeys) {
  const fs::path dir = temp_dir("sigterm");
  const FastRun run =
      start_fast(dir, launch_sh({"-n", "2"},
                                "trap 'echo got TERM; exit 143' TERM; echo \"key=$FAST_KEY_FILE\"; echo ready; "
                                "while :; do sleep 0.1; done"));
  const bool ready = wait_for_text(run.out, "ready", 2);
  ::kill(run.pid, SIGTERM);
  const FastDone r = wait_fast(run);
  ASSERT_TRUE(ready) << read_text(run.out) << read_text(run.err);
  EXPECT_TRUE(contains(r.out, "[0] got TERM\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "[1] got TERM\n")) << r.out;
  EXPECT_EQ(r.code, 143) << r.err;  // the scripts' own code (their TERM trap, as fast train's), passed through
  EXPECT_TRUE(contains(r.err, "got SIGTERM; forwarded it to 2 processes")) << r.err;
  // Their end on it is no failure.
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex(R"(process \d \(pid \d+\) stopped on the SIGTERM launch forwarded: exit code 143)")))
      << r.err;
  EXPECT_FALSE(contains(r.err, "failed first")) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(\[0\] key=(\S+))"))) << r.out;
  EXPECT_FALSE(fs::exists(fs::path(m[1].str()).parent_path())) << "key folder left behind";
}

// `fast launch` killed with SIGKILL (its own clean-up cannot run): its processes die with it, and
// the folder of the run's keys and the processes' socket files (made here as the zmq runtime names
// them, in TMPDIR) are removed all the same, by launch's clean-up process.
TEST(Launch, KilledWithSigkillLeavesNoKeysNorSocketFiles) {
  const fs::path dir = temp_dir("sigkill");
  const fs::path tmp = dir / "tmp";
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  const char* before = std::getenv("TMPDIR");
  const std::string saved = before == nullptr ? "" : before;
  ::setenv("TMPDIR", tmp.c_str(), 1);
  const FastRun run =
      start_fast(dir, launch_sh({"-n", "2"},
                                "touch \"$TMPDIR/fast-$$-data-0000beef.sock\"; echo \"pid=$$\"; "
                                "echo \"key=$FAST_KEY_FILE\"; echo ready; while :; do sleep 0.1; done"));
  if (before == nullptr)
    ::unsetenv("TMPDIR");
  else
    ::setenv("TMPDIR", saved.c_str(), 1);
  const bool ready = wait_for_text(run.out, "ready", 2);
  ::kill(run.pid, SIGKILL);
  const FastDone r = wait_fast(run);
  ASSERT_TRUE(ready) << r.out << r.err;
  const std::vector<pid_t> pids = printed_pids(r.out);
  ASSERT_EQ(pids.size(), 2u) << r.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(\[0\] key=(\S+))"))) << r.out;
  const fs::path key_dir = fs::path(m[1].str()).parent_path();
  EXPECT_EQ(key_dir.parent_path(), tmp) << r.out;
  auto left = [&] {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(tmp)) names.push_back(entry.path().filename().string());
    return names;
  };
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (!left().empty() && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const std::vector<std::string> names = left();
  EXPECT_TRUE(names.empty()) << "left in TMPDIR: " << (names.empty() ? "" : names.front());
  expect_none_alive(pids);
}

TEST(Launch, InsecureWarnsAndGivesNoKeys) {
  const FastDone r = run_fast("insecure", launch_sh({"-n", "1", "--insecure"},
                                                    "echo \"insecure=$FAST_INSECURE key=$FAST_KEY_FILE "
                                                    "allow=$FAST_ALLOW_FILE\""));
  ASSERT_EQ(r.code, exit_code::ok) << r.err;
  EXPECT_TRUE(contains(r.err, "WARNING: --insecure")) << r.err;
  EXPECT_TRUE(contains(r.out, "[0] insecure=1 key= allow=\n")) << r.out;
}

TEST(Launch, GivenKeyAndAllowFilesArePassedThrough) {
  const fs::path dir = temp_dir("given");
  fs::remove(dir / "host.key");
  fs::remove(dir / "host.key.pub");
  ASSERT_EQ(run_fast("given_keygen", {"keygen", "--out", (dir / "host.key").string()}).code, exit_code::ok);
  const FastDone r =
      run_fast("given_run",
               launch_sh({"-n", "1", "--key", (dir / "host.key").string(), "--allow", (dir / "host.key.pub").string()},
                         "echo \"key=$FAST_KEY_FILE allow=$FAST_ALLOW_FILE\""));
  ASSERT_EQ(r.code, exit_code::ok) << r.err;
  EXPECT_TRUE(contains(r.out, "[0] key=" + (dir / "host.key").string() + " allow=" + (dir / "host.key.pub").string()))
      << r.out;
  EXPECT_TRUE(fs::exists(dir / "host.key")) << "a given key file is not the run's to remove";
}

// --hosts through a launcher template: a script standing in for ssh, which says which host it was
// asked for and runs the rest (`LAUNCHER HOST env NAME=VALUE... COMMAND`). The secret key reaches
// the process on its standard input, and is on no command line.
TEST(Launch, HostsGoThroughTheLauncherTemplateWithTheKeyOnStandardInput) {
  const fs::path dir = temp_dir("hosts");
  const fs::path launcher = dir / "fake-ssh.sh";
  {
    std::ofstream out(launcher);
    out << "#!/bin/sh\nhost=$1\nshift\necho \"$*\" >> " << (dir / "argv.txt").string()
        << "\necho \"via=$host\"\nexec \"$@\"\n";
  }
  fs::permissions(launcher, fs::perms::owner_all);
  fs::remove(dir / "argv.txt");
  const FastDone r = run_fast(
      "hosts_run",
      launch_sh({"--hosts", "alpha:2,beta:1", "--launcher", launcher.string() + " {host}", "--ports", "30100-30110"},
                "echo \"rank=$FAST_PROCESS_RANK size=$FAST_WORLD_SIZE rdv=$FAST_RENDEZVOUS "
                "ports=$FAST_PORTS key=$FAST_KEY_FILE keys=${#FAST_ALLOW_KEYS}\"; "
                "sed -n 's/^secret = /secret=/p' /dev/stdin"));
  ASSERT_EQ(r.code, exit_code::ok) << r.out << r.err;
  for (const auto& [label, rank, host] :
       {std::tuple{"alpha:0", 0, "alpha"}, {"alpha:1", 1, "alpha"}, {"beta:2", 2, "beta"}}) {
    EXPECT_TRUE(contains(r.out, fmt::format("[{}] via={}\n", label, host))) << r.out;
    EXPECT_TRUE(contains(r.out, fmt::format("[{}] rank={} size=3 rdv=alpha:30100,beta:30100 ports=30100-30110 "
                                            "key=/dev/stdin "
                                            "keys=40\n",
                                            label, rank)))
        << r.out;
  }
  // Each process read the key pair on its standard input; the secret was on no launcher's argv.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(secret=("[0-9A-Za-z.\-:+=^!/*?&<>()\[\]{}@%$#]{40}"))")))
      << r.out;
  const std::string argv = read_text(dir / "argv.txt");
  EXPECT_EQ(lines_of(argv).size(), 3u) << argv;
  EXPECT_TRUE(contains(argv, "FAST_KEY_FILE=/dev/stdin")) << argv;
  EXPECT_FALSE(contains(argv, m[1].str().substr(1, 40))) << argv;
  EXPECT_TRUE(contains(r.err, "on alpha (2), beta (1) through")) << r.err;
}

// A host named, not numbered (--hosts localhost:2, the documented form): process 0 serves the
// rendezvous at the address the name resolves to (ZeroMQ binds no host names: it failed with "No
// such device"), the others reach it by the name; the run ends.
TEST(Launch, AHostNameServesTheRendezvous) {
  const FastDone r = run_fast("hosts_by_name", {"launch",       "--hosts",   "localhost:2",
                                                "--launcher",   "env",       "--ports",
                                                "30450-30470",  "--",        std::string(FAST_TEST_BIN_DIR) + "/fast",
                                                "train",        "--runtime", "zmq",
                                                "--model",      "mlp",       "--steps",
                                                "30",           "--batch",   "32",
                                                "--eval-every", "0",         "--progress",
                                                "never"},
                              180);
  ASSERT_EQ(r.code, exit_code::ok) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "[localhost:0] final test accuracy: ")) << r.out;
  EXPECT_TRUE(contains(r.out, "[localhost:1] ")) << r.out;
}

TEST(Launch, BadInputIsRejectedBeforeAnythingStarts) {
  const fs::path dir = temp_dir("bad");
  const fs::path marker = dir / "started";
  const std::string touch = "touch " + marker.string();
  fs::remove(dir / "other.key");
  ASSERT_EQ(run_fast("bad_keygen", {"keygen", "--out", (dir / "other.key").string()}).code, exit_code::ok);
  const fs::path other_pub = dir / "other.key.pub";
  ASSERT_EQ(run_fast("bad_keygen2", {"keygen", "--out", (dir / "mine.key").string(), "--force"}).code, exit_code::ok);
  std::ofstream(dir / "other_first.txt") << read_text(other_pub) << read_text(dir / "mine.key.pub");
  // A port some other program listens on (this test, for the loop below).
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener, 1), 0);
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int busy = ntohs(addr.sin_port);
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {launch_sh({"-n", "0"}, touch), "-n expects a number of processes in [1, 1024], got 0"},
      {launch_sh({}, touch), "expected -n N, the number of processes to start (1 to 1024), or --hosts/--hostfile"},
      {{"launch", "-n", "2"}, "expected a command to run after the options"},
      {{"launch", "-n", "2", "--", "no-such-command-fast-test", "x"},
       "command 'no-such-command-fast-test' not found on PATH"},
      {{"launch", "-n", "2", "--", "/nonexistent/prog"}, "command '/nonexistent/prog' is not an executable file"},
      {launch_sh({"-n", "1", "--allow", other_pub.string()}, touch), "needs --key FILE"},
      {launch_sh({"-n", "1", "--insecure", "--key", (dir / "mine.key").string()}, touch),
       "--insecure excludes --key and --allow (got --key '" + (dir / "mine.key").string() + "')"},
      {launch_sh({"-n", "1", "--key", other_pub.string()}, touch), "got a bare key (not shown): a public key file"},
      {launch_sh({"-n", "1", "--key", (dir / "mine.key").string(), "--allow", (dir / "other_first.txt").string()},
                 touch),
       "other_first.txt' starts with the key " + read_text(other_pub).substr(0, 40) +
           ", but process 0 serves the rendezvous with the key of --key"},
      {launch_sh({"-n", "1", "--key", (dir / "missing.key").string()}, touch), "missing.key': cannot open it"},
      {launch_sh({"-n", "1", "--key", (dir / "mine.key").string(), "--allow", other_pub.string()}, touch),
       "does not hold the public key of --key"},
      {launch_sh({"-n", "1", "--grace", "-1"}, touch), "--grace expects seconds >= 0, got -1"},
      {launch_sh({"-n", "1", "--timeout", "abc"}, touch), "--timeout: expected a number, got 'abc'"},
      {launch_sh({"-n", "x"}, touch), "--nprocs: expected an integer, got 'x'"},
      {launch_sh({"-n", "1", "--restart", "-1"}, touch), "--restart expects a number of restarts in [0, 1000], got -1"},
      {launch_sh({"--hosts", "a:0"}, touch), "--hosts 'a:0', host 1: expected a number of processes from 1 to 1024"},
      {launch_sh({"--hosts", "a:2,b c"}, touch), "--hosts 'a:2,b c', host 2: expected a host name or address"},
      {launch_sh({"--hosts", "a:2", "-n", "3"}, touch), "-n 3 processes do not fit the 2 slots of the hosts"},
      {launch_sh({"--hosts", "a", "--hostfile", (dir / "h").string()}, touch), "--hosts and --hostfile exclude"},
      {launch_sh({"--hostfile", (dir / "missing-hosts").string()}, touch),
       "missing-hosts': cannot read it (No such file or directory)"},
      {launch_sh({"--hosts", "a", "--launcher", "ssh {hots}"}, touch),
       "expected the placeholders {host} and {address} only, got '{hots}'"},
      {launch_sh({"-n", "1", "--ports", "10-5"}, touch), "--ports: expected a port range LO-HI"},
      {launch_sh({"-n", "1", "--ports", "30000-30010", "--port", "80"}, touch),
       "--port 80 lies outside --ports 30000-30010"},
      // 2 processes need 2 ports each besides the rendezvous's: 5.
      {launch_sh({"-n", "2", "--ports", "30000-30003"}, touch),
       "--ports 30000-30003 holds 4 ports, too few for 2 processes on one host"},
      {launch_sh({"--hosts", "a:3,b:1", "--ports", "30000-30005", "--launcher", "env"}, touch),
       "give at least 7 ports (10 for direct streams between hosts)"},
      {launch_sh({"--hosts", "a", "--launcher", "no-such-launcher-fast-test {host}"}, touch),
       "--launcher's program 'no-such-launcher-fast-test' not found on PATH"},
      {launch_sh({"-n", "2", "--launcher", "ssh {host}"}, touch),
       "--launcher 'ssh {host}' starts the processes on the hosts of --hosts or --hostfile; got neither"},
      {launch_sh({"-n", "2", "--port", std::to_string(busy)}, touch),
       fmt::format("--port {}: the rendezvous port 127.0.0.1:{} cannot be listened on now (Address already in use)",
                   busy, busy)},
  };
  for (const auto& [args, message] : cases) {
    const FastDone r = run_fast("bad_run", args);
    EXPECT_EQ(r.code, exit_code::bad_input) << message << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, message)) << "'" << message << "' not in:\n" << r.err;
    EXPECT_TRUE(r.err.starts_with("fast launch: error: ")) << r.err;  // launch's own: one prefix, its command's
    EXPECT_FALSE(contains(r.err, "starting")) << r.err;
  }
  ::close(listener);
  EXPECT_FALSE(fs::exists(marker)) << "a process was started despite bad input";
}

// Without --ports, the FAST_PORTS launch inherits is the run's range: every process gets it, and
// the rendezvous takes its lowest port (before, launch dropped it and the kernel chose the ports).
TEST(Launch, AnInheritedFastPortsIsTheRunsRange) {
  ASSERT_EQ(::setenv("FAST_PORTS", "30300-30320", 1), 0);
  const FastDone r =
      run_fast("inherited_ports", launch_sh({"-n", "2"}, "echo \"ports=$FAST_PORTS rdv=$FAST_RENDEZVOUS\""));
  ::unsetenv("FAST_PORTS");
  ASSERT_EQ(r.code, exit_code::ok) << r.out << r.err;
  for (int rank = 0; rank < 2; ++rank) {
    const std::string want = "[" + std::to_string(rank) + "] ports=30300-30320 rdv=127.0.0.1:30300\n";
    EXPECT_TRUE(contains(r.out, want)) << want << " not in:\n" << r.out;
  }
}

TEST(Launch, HelpDocumentsEveryOption) {
  const FastDone r = run_fast("help", {"launch", "--help"});
  ASSERT_EQ(r.code, exit_code::ok);
  for (const char* part :
       {"-n,--nprocs", "--port", "--insecure", "--key", "--allow", "--grace", "--timeout", "--hosts", "--hostfile",
        "--launcher", "--ports", "--restart", "-- COMMAND", "FAST_PROCESS_RANK", "Exit code"}) {
    EXPECT_TRUE(contains(r.out, part)) << part << " not in:\n" << r.out;
  }
}

TEST(Keygen, WritesAKeyFile0600AndAPublicLineWithTheHostname) {
  const fs::path dir = temp_dir("keygen");
  fs::remove(dir / "host.key");
  fs::remove(dir / "host.key.pub");
  const FastDone r = run_fast("keygen_run", {"keygen", "--out", (dir / "host.key").string()});
  ASSERT_EQ(r.code, exit_code::ok) << r.err;
  struct stat st {};
  ASSERT_EQ(::stat((dir / "host.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const auto keys = fast::runtime::zmq::read_key_file(dir / "host.key");
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  EXPECT_EQ(read_text(dir / "host.key.pub"), keys.public_key + " " + host + "\n");
  const auto allowed = fast::runtime::zmq::read_allow_file(dir / "host.key.pub");
  ASSERT_EQ(allowed.size(), 1u);
  EXPECT_EQ(allowed[0].public_key, keys.public_key);
  EXPECT_TRUE(contains(r.out, "public key: " + keys.public_key)) << r.out;
  EXPECT_TRUE(contains(r.out, "--allow FILE")) << r.out;
}

TEST(Keygen, RefusesToOverwriteWithoutForce) {
  const fs::path dir = temp_dir("keygen_force");
  const std::string out = (dir / "host.key").string();
  fs::remove(out);
  fs::remove(out + ".pub");
  ASSERT_EQ(run_fast("keygen_force1", {"keygen", "--out", out}).code, exit_code::ok);
  const std::string first = read_text(out);
  const FastDone again = run_fast("keygen_force2", {"keygen", "--out", out});
  EXPECT_EQ(again.code, exit_code::bad_input);
  EXPECT_TRUE(contains(again.err, "'" + out + "' already exists; not overwriting it (--force does)")) << again.err;
  EXPECT_EQ(read_text(out), first);
  fs::remove(out);  // the .pub alone also blocks
  EXPECT_TRUE(contains(run_fast("keygen_force3", {"keygen", "--out", out}).err, out + ".pub' already exists"));
  EXPECT_FALSE(fs::exists(out));
  ASSERT_EQ(run_fast("keygen_force4", {"keygen", "--out", out, "--force"}).code, exit_code::ok);
  EXPECT_NE(read_text(out), first);
  // A folder is refused as bad input, with --force too (it failed as an I/O error: "Is a directory").
  fs::create_directories(dir / "folder");
  const FastDone folder = run_fast("keygen_force5", {"keygen", "--out", (dir / "folder").string(), "--force"});
  EXPECT_EQ(folder.code, exit_code::bad_input) << folder.err;
  EXPECT_TRUE(contains(folder.err, "folder' is a folder; --out expects the path of a file to write")) << folder.err;
}

TEST(Keygen, HelpDocumentsEveryOption) {
  const FastDone r = run_fast("keygen_help", {"keygen", "--help"});
  ASSERT_EQ(r.code, exit_code::ok);
  for (const char* part : {"--out", "--force", "0600", ".pub", "--allow"}) {
    EXPECT_TRUE(contains(r.out, part)) << part << " not in:\n" << r.out;
  }
}

}  // namespace
