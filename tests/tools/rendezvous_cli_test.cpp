// `fast rendezvous` and `fast train --runtime zmq` processes that do not fit the run (another world
// size, another number of workers per process, a rank already claimed): each is
// told why at once, with exit code 2, instead of waiting out its rendezvous timeout, and the
// rendezvous goes on waiting for processes that fit. Every process runs in a process group of its
// own, bounded in time and killed as a group. Processes started by hand on one host size their
// threads together.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "common/poll.hpp"
#include "common/run_fast.hpp"
#include "common/spawned.hpp"

namespace {

namespace fs = std::filesystem;
namespace exit_code = fast::core::exit_code;
using fast::testing::slurp;

const std::string kFast = std::string(FAST_TEST_BIN_DIR) + "/fast";

// A TCP port of the loopback that was free a moment ago.
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0)
    return -1;
  ::close(fd);
  return ntohs(address.sin_port);
}

// Writes the key pair DIR/NAME.key (and its .pub) with `fast keygen`; returns its public key.
std::string keygen(const fs::path& dir, const std::string& name) {
  const auto key = fast::testing::run_command(kFast + " keygen --out " + (dir / name).string() + ".key 2>&1");
  EXPECT_EQ(key.code, 0) << key.output;
  return slurp(dir / (name + ".key.pub")).substr(0, 40);
}

struct Refusal {
  std::string args;      // of the extra process, after the rendezvous settings
  std::string expected;  // part of the reason it is told
};

TEST(RendezvousRefusal, AProcessThatDoesNotFitIsToldWhyAtOnce) {
  const fs::path dir = fast::testing::test_dir("fast_rendezvous_cli", "refused");
  const int port = free_port();
  ASSERT_GT(port, 0);
  const std::string address = "127.0.0.1:" + std::to_string(port);
  // 2 processes of 1 worker; the server waits 120 s, each process would wait 100 s.
  const fast::testing::Spawned server =
      fast::testing::spawn_in_group(dir,
                                    "env FAST_LOG_LEVEL=debug " + kFast + " rendezvous --listen " + address +
                                        " --world-size 2 --insecure --timeout 120",
                                    "server.log");
  const std::string train = kFast + " train --runtime zmq --rendezvous " + address +
                            " --insecure --rendezvous-timeout 100 --steps 5 --model mlp --progress never";
  // A process that fits and waits for its partner: rank 1, whose claim the last case repeats.
  const fast::testing::Spawned waiting =
      fast::testing::spawn_in_group(dir, train + " --world-size 2 --process-rank 1", "waiting.log");
  ASSERT_TRUE(fast::testing::poll_until([&] { return slurp(server.log).find("arrived (1 of 2)") != std::string::npos; },
                                        fast::testing::kStartBound))
      << slurp(server.log) << slurp(waiting.log);
  for (const Refusal& c : {Refusal{"--world-size 3", "has world size 3, expected 2"},
                           Refusal{"--world-size 2 --workers-per-process 2", "has workers-per-process 2, expected 1"},
                           Refusal{"--world-size 2 --lr 0.1",
                                   "was started with other settings than the run: lr = 0.1 in that process, 0.05 in "
                                   "the run (every process of a run takes the same settings)"},
                           Refusal{"--world-size 2 --process-rank 1", "two processes claim rank 1"}}) {
    const auto start = std::chrono::steady_clock::now();
    const auto r = fast::testing::run_command("timeout -k 5 90 " + train + " " + c.args + " 2>&1");
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(r.code, exit_code::bad_input) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find("the run refused this process"), std::string::npos) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.expected), std::string::npos) << c.args << "\n" << r.output;
    EXPECT_EQ(r.output.find("allow-list"), std::string::npos) << c.args << "\n" << r.output;
    EXPECT_LT(seconds, 60) << c.args << ": waited for the timeout\n" << r.output;
  }
  EXPECT_NE(slurp(server.log).find("refused a process"), std::string::npos) << slurp(server.log);
  // The rendezvous still waits for a partner of the waiting process: neither has exited.
  int status = 0;
  EXPECT_EQ(::waitpid(server.pid, &status, WNOHANG), 0) << slurp(server.log);
  EXPECT_EQ(::waitpid(waiting.pid, &status, WNOHANG), 0) << slurp(waiting.log);
  (void)fast::testing::wait_or_kill_group(waiting, 0);
  (void)fast::testing::wait_or_kill_group(server, 0);
}

// Two processes started by hand on one host (no launcher to say how many share it): once they
// met, each sizes libtorch's threads for the 2 workers of this host (docs/launch.md, "By hand"),
// and the run ends with the parameters of 2 threads of one process.
TEST(RendezvousByHand, ProcessesOfOneHostShareItsCoresAndEndAsUnderThreads) {
  const fs::path dir = fast::testing::test_dir("fast_rendezvous_cli", "by_hand");
  const int port = free_port();
  ASSERT_GT(port, 0);
  const std::string run = " --model mlp --steps 20 --batch 32 --seed 5 --eval-every 0 --progress never";
  // No launcher's count: none of the variables a launcher would set.
  const std::string train =
      "env -u FAST_TORCH_THREADS -u FAST_LAUNCHED -u FAST_LOCAL_WORLD_SIZE -u FAST_LOCAL_RANK "
      "-u LOCAL_WORLD_SIZE " +
      kFast + " train --runtime zmq --rendezvous 127.0.0.1:" + std::to_string(port) +
      " --insecure --world-size 2 --rendezvous-timeout 60" + run;
  const fast::testing::Spawned p0 =
      fast::testing::spawn_in_group(dir, train + " --process-rank 0 --summary s.json", "p0.log");
  const fast::testing::Spawned p1 = fast::testing::spawn_in_group(dir, train + " --process-rank 1", "p1.log");
  const int s0 = fast::testing::wait_or_kill_group(p0, 120);
  const int s1 = fast::testing::wait_or_kill_group(p1, 120);
  const std::string logs = slurp(dir / "p0.log") + "\n---\n" + slurp(dir / "p1.log");
  ASSERT_TRUE(WIFEXITED(s0) && WEXITSTATUS(s0) == 0 && WIFEXITED(s1) && WEXITSTATUS(s1) == 0) << logs;
  cpu_set_t set;  // the cores this process, and so its children, may run on (as fast counts them)
  CPU_ZERO(&set);
  ASSERT_EQ(::sched_getaffinity(0, sizeof set, &set), 0);
  const int cores = CPU_COUNT(&set);
  const int machine = std::max(cores, static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN)));
  const std::string sized = "libtorch intra-op threads: " + std::to_string(std::max(1, std::min(cores, machine / 2)));
  for (const char* log : {"p0.log", "p1.log"}) {
    const std::string text = slurp(dir / log);
    EXPECT_NE(text.find(sized), std::string::npos) << log << "\n" << text;
    EXPECT_NE(text.find("2 workers on this host)"), std::string::npos) << log << "\n" << text;
  }
  const auto threads = fast::testing::run_command(
      "cd " + dir.string() + " && " + kFast + " train --runtime threads --workers 2" + run + " --summary t.json 2>&1");
  ASSERT_EQ(threads.code, 0) << threads.output;
  EXPECT_EQ(nlohmann::json::parse(slurp(dir / "s.json"))["param_hash"],
            nlohmann::json::parse(slurp(dir / "t.json"))["param_hash"]);
  if (!HasFailure()) fs::remove_all(dir);
}

// --rendezvous A,B (docs/launch.md, "Settings"): an address given twice, a malformed one, or an
// allow-list without a key per address is refused with exit code 2 before anything is bound; a
// server whose key is not the one its address is reached with, once it bound it.
TEST(RendezvousAddresses, AListIsCheckedBeforeAnythingIsBound) {
  const fs::path dir = fast::testing::test_dir("fast_rendezvous_cli", "addresses");
  const std::string a = keygen(dir, "a");
  std::ofstream(dir / "allow.txt") << a << "\n" << keygen(dir, "b") << "\n";
  const std::string train = "timeout -k 5 60 " + kFast +
                            " train --runtime zmq --world-size 2 --process-rank 0 --steps 5 --model mlp --progress "
                            "never --rendezvous-timeout 30 --rendezvous ";
  const std::string keys = " --key " + (dir / "a.key").string() + " --allow " + (dir / "allow.txt").string();
  struct Case {
    std::string args, expected;
  };
  for (const Case& c :
       {Case{"127.0.0.1:4000,127.0.0.1:4000 --insecure", "the address 127.0.0.1:4000 is given twice"},
        Case{"127.0.0.1:4000,127.0.0.2 --insecure", "rendezvous: expected HOST:PORT, got '127.0.0.2'"},
        Case{"127.0.0.1:4000, --insecure", "rendezvous: expected HOST:PORT, got ''"},
        Case{"127.0.0.1:4000,127.0.0.2:4000,127.0.0.3:4000" + keys,
             "3 addresses, so the allow-list's first 3 keys must be the keys of their hosts, in the same order (or the "
             "allow-list must hold the run's one key); it has 2"}}) {
    const auto r = fast::testing::run_command(train + c.args + " 2>&1");
    EXPECT_EQ(r.code, exit_code::bad_input) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.expected), std::string::npos) << c.args << "\n" << r.output;
  }
  // The process that serves the rendezvous holds b's key, but the allow-list names a's first: the
  // others would fail their handshakes with it unheard, so it refuses at once instead of waiting.
  const int port = free_port();
  ASSERT_GT(port, 0);
  const std::string as_b = " --key " + (dir / "b.key").string() + " --allow " + (dir / "allow.txt").string();
  const auto r = fast::testing::run_command(train + "127.0.0.1:" + std::to_string(port) + as_b + " 2>&1");
  EXPECT_EQ(r.code, exit_code::bad_input) << r.output;
  EXPECT_NE(r.output.find("expect that address's server to hold " + a + ", the allow-list's key number 1"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("Put the key of the rendezvous's host first"), std::string::npos) << r.output;
  if (!HasFailure()) fs::remove_all(dir);
}

// `fast train` of 2 zmq processes, 5 steps of a small synthetic dataset, meeting at 127.0.0.1:port
// within `timeout` seconds; the caller adds the process's rank and keys.
std::string small_zmq_train(int port, int timeout) {
  return kFast +
         " train --runtime zmq --world-size 2 --steps 5 --progress never --dataset synthetic:train=512,test=128 "
         "--rendezvous-timeout " +
         std::to_string(timeout) + " --rendezvous 127.0.0.1:" + std::to_string(port);
}

// The flags of a process with key pair dir/key and allow-list dir/allow, its output to dir/log.
std::string keyed(const fs::path& dir, const std::string& key, const std::string& allow, const std::string& log) {
  return " --key " + (dir / key).string() + " --allow " + (dir / allow).string() + " > " + (dir / log).string() +
         " 2>&1";
}

// Process 0 of small_zmq_train (key pair dir/a.key, allow-list `server_allow`) and process 1 (dir/c.key,
// `client_allow`) at `port`, each waiting 3 s at the rendezvous, which times out on process 0 (exit
// code 4, checked): returns process 0's output. Process 1's is in dir/client.log.
std::string refused_pair(const fs::path& dir, const std::string& server_allow, const std::string& client_allow,
                         int port) {
  std::ofstream(dir / "server_allow.txt") << server_allow;
  std::ofstream(dir / "client_allow.txt") << client_allow;
  const std::string train = small_zmq_train(port, 3);
  const std::string server = train + " --process-rank 0" + keyed(dir, "a.key", "server_allow.txt", "server.log");
  const std::string client = train + " --process-rank 1" + keyed(dir, "c.key", "client_allow.txt", "client.log");
  const auto r = fast::testing::run_command("timeout -k 5 60 sh -c '" + server + " & server=$!; " + client +
                                            "; wait $server; echo server=$?'");
  EXPECT_NE(r.output.find("server=4"), std::string::npos) << r.output;  // its rendezvous timed out
  return slurp(dir / "server.log");
}

// A process whose key the server's allow-list lacks is refused at the CURVE handshake, before any
// hello: the server's rendezvous timeout names those refusals with the key refused, and the
// refused process ends at once with code 2, naming its key (it waited for its own timeout).
TEST(RendezvousAddresses, TheServersTimeoutNamesTheKeysRefusedAtTheHandshake) {
  const fs::path dir = fast::testing::test_dir("fast_rendezvous_cli", "handshake");
  const std::string a = keygen(dir, "a"), c = keygen(dir, "c");
  const int port = free_port();
  ASSERT_GT(port, 0);
  const std::string log = refused_pair(dir, a + "\n", a + "\n" + c + "\n", port);  // c is not admitted
  EXPECT_NE(log.find("1 of 2 processes arrived within 3 s (--rendezvous-timeout or FAST_RENDEZVOUS_TIMEOUT)"),
            std::string::npos)
      << log;
  EXPECT_NE(
      log.find("refused at the handshake, the last a peer from 127.0.0.1: its key " + c + " is not in the allow-list"),
      std::string::npos)
      << log;
  const std::string client_log = slurp(dir / "client.log");
  EXPECT_NE(
      client_log.find("fast: error: rendezvous at tcp://127.0.0.1:" + std::to_string(port) +
                      ": the server refused this process's key " + c + " at the handshake: its allow-list lacks it"),
      std::string::npos)
      << client_log;
  if (!HasFailure()) fs::remove_all(dir);
}

// A process started with --insecure meets a server that authenticates: no answer, and its timeout
// says that --insecure must be the same on every process.
TEST(RendezvousAddresses, AnInsecureProcessIsToldThatTheServerAuthenticates) {
  const fs::path dir = fast::testing::test_dir("fast_rendezvous_cli", "insecure_client");
  const std::string a = keygen(dir, "a");
  std::ofstream(dir / "allow.txt") << a << "\n";
  const int port = free_port();
  ASSERT_GT(port, 0);
  const std::string train = small_zmq_train(port, 2);
  const std::string server = train + " --process-rank 0" + keyed(dir, "a.key", "allow.txt", "server.log");
  const std::string client = train + " --process-rank 1 --insecure > " + (dir / "client.log").string() + " 2>&1";
  const auto r = fast::testing::run_command("timeout -k 5 60 sh -c '" + server + " & server=$!; " + client +
                                            "; echo client=$?; wait $server'");
  EXPECT_NE(r.output.find("client=4"), std::string::npos) << r.output;  // its rendezvous timed out
  const std::string log = slurp(dir / "client.log");
  EXPECT_NE(log.find("and with --insecure (FAST_INSECURE=1) too? A server that authenticates (CURVE) does not "
                     "answer a process without keys."),
            std::string::npos)
      << log;
  // The server logs the connection it refused (its monitor of the handshakes): "not CURVE (an
  // unauthenticated client)", or "the client went away during its handshake" where the client
  // saw the mismatch and closed first.
  const std::string server_log = slurp(dir / "server.log");
  EXPECT_NE(server_log.find("refused a connection on tcp://127.0.0.1:" + std::to_string(port) + ": "),
            std::string::npos)
      << server_log;
  if (!HasFailure()) fs::remove_all(dir);
}

// A process that expects another server key (an allow-list of its own, an intruder's or a
// mistake) fails CURVE's handshake before the allow-list is read: the server logs each refusal and
// its rendezvous timeout names them (it said nothing).
TEST(RendezvousAddresses, AClientExpectingAnotherServerKeyIsLoggedByTheServer) {
  const fs::path dir = fast::testing::test_dir("fast_rendezvous_cli", "server_key");
  const std::string a = keygen(dir, "a"), c = keygen(dir, "c");
  const int port = free_port();
  ASSERT_GT(port, 0);
  // c's own key where the server's should be
  const std::string log = refused_pair(dir, a + "\n" + c + "\n", c + "\n", port);
  EXPECT_NE(log.find("refused a connection on tcp://127.0.0.1:" + std::to_string(port) +
                     ": CURVE failed: a wrong server key, or a forged message"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("refused at the handshake (the last: CURVE failed: a wrong server key, or a forged message)"),
            std::string::npos)
      << log;
  if (!HasFailure()) fs::remove_all(dir);
}

// Whether a TCP connection to 127.0.0.1:port is accepted now.
bool accepts(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool connected = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  ::close(fd);
  return connected;
}

// A run that takes no process back (synchronous, not elastic) closes its rendezvous port once the
// processes met: nobody is answered there, and it listened, unread, until the run ended.
TEST(RendezvousAddresses, ARunThatTakesNobodyBackClosesItsRendezvousPort) {
  const fs::path dir = fast::testing::test_dir("fast_rendezvous_cli", "closed");
  const int port = free_port();
  ASSERT_GT(port, 0);
  const std::string train = "env FAST_LOG_LEVEL=debug " + kFast +
                            " train --runtime zmq --world-size 2 --steps 1000000 --batch 8 --progress never "
                            "--insecure --dataset synthetic:train=512,test=128 --rendezvous 127.0.0.1:" +
                            std::to_string(port);
  const fast::testing::Spawned run = fast::testing::spawn_in_group(
      dir, "sh -c '" + train + " --process-rank 0 > p0.log 2>&1 & " + train + " --process-rank 1 > p1.log 2>&1; wait'");
  ASSERT_GT(run.pid, 0);
  // Each process logs "runs workers [...) of 2" (debug) once the rendezvous answered it.
  const bool met = fast::testing::file_contains_within(dir / "p0.log", "runs workers [0, 1) of 2", 60) &&
                   fast::testing::file_contains_within(dir / "p1.log", "runs workers [1, 2) of 2", 60);
  bool closed = false;
  for (int i = 0; met && i < 300 && !closed; ++i) {
    closed = !accepts(port);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const bool running = ::waitpid(run.pid, nullptr, WNOHANG) == 0;
  ::kill(-run.pid, SIGKILL);
  (void)fast::testing::wait_or_kill_group(run, 10);
  EXPECT_TRUE(met) << slurp(dir / "p0.log") << slurp(dir / "p1.log");
  EXPECT_TRUE(closed) << "the rendezvous port still accepts connections 15 s after the processes met";
  EXPECT_TRUE(running) << "the run ended before the check: " << slurp(dir / "p0.log");
  if (!HasFailure()) fs::remove_all(dir);
}

// SIGTERM to a process waiting at the rendezvous, the one that serves it (process 0) as the others:
// it ends at once with 143 and says it had nothing to save, not at its rendezvous timeout (60 s).
TEST(RendezvousInterrupted, AProcessWaitingAtTheRendezvousEndsAtOnceOnSigterm) {
  const fs::path dir = fast::testing::test_dir("fast_rendezvous_cli", "interrupted");
  for (const int rank : {0, 1}) {
    const int port = free_port();
    ASSERT_GT(port, 0);
    const fs::path log = dir / ("rank" + std::to_string(rank) + ".log");
    const std::string train = small_zmq_train(port, 60) + " --insecure --process-rank " + std::to_string(rank);
    // Signalled once it listens (its handlers are in place), then timed from the signal.
    const auto r = fast::testing::run_command(
        "timeout -k 5 50 sh -c '" + train + " > " + log.string() + " 2>&1 & p=$!; until grep -q \"listens on\" " +
        log.string() + "; do sleep 0.05; done; kill -TERM $p; start=$(date +%s); wait $p; echo rc=$? " +
        "seconds=$(( $(date +%s) - start ))'");
    const std::string text = slurp(log);
    EXPECT_NE(r.output.find("rc=143"), std::string::npos) << "process " << rank << ": " << r.output << text;
    const std::size_t at = r.output.find("seconds=");
    ASSERT_NE(at, std::string::npos) << r.output;
    EXPECT_LT(std::stoi(r.output.substr(at + 8)), 30) << "process " << rank << ": " << r.output << text;
    EXPECT_NE(text.find("fast: interrupted by SIGTERM while it waited for the rendezvous at tcp://127.0.0.1:" +
                        std::to_string(port) + ": it has nothing to save"),
              std::string::npos)
        << "process " << rank << ": " << text;
  }
  if (!HasFailure()) fs::remove_all(dir);
}

// `fast rendezvous` alone: its timeout names its own flag, --timeout.
TEST(RendezvousAddresses, TheStandaloneServersTimeoutNamesItsOwnFlag) {
  const int port = free_port();
  ASSERT_GT(port, 0);
  const auto r =
      fast::testing::run_command("timeout -k 5 60 " + kFast + " rendezvous --listen 127.0.0.1:" + std::to_string(port) +
                                 " --world-size 2 --insecure --timeout 1 2>&1");
  EXPECT_EQ(r.code, 4) << r.output;
  EXPECT_NE(r.output.find("0 of 2 processes arrived within 1 s (fast rendezvous --timeout)"), std::string::npos)
      << r.output;
}

}  // namespace
