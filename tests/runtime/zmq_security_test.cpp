// Intruders against a zmq run (docs/launch.md, "Trust"): while two processes all-reduce, a client
// with a key outside the allow-list, a client without CURVE, and a plain TCP client writing random
// bytes connect to a worker's data port, then to its heartbeat port. Each is refused and logged;
// the run's every result stays exact.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include <fstream>
#include <random>
#include <regex>
#include <sstream>

#include "common/poll.hpp"
#include "common/world_runner.hpp"
#include "fast/collective/communicator.hpp"
#include "fast/core/error.hpp"
#include "fast/runtime/zmq/keys.hpp"
#include "fast/wire/frame.hpp"

namespace fast::runtime {
namespace {

// A tcp port process 0 listens on, from its log ("listens on tcp://127.0.0.1:PORT and ipc://...
// (heartbeats: tcp://127.0.0.1:PORT2 ..."), within 30 s: `which` "listens on" or "heartbeats".
int listening_port(const std::filesystem::path& log, const std::string& which) {
  const std::regex pattern(which + ":? tcp://127\\.0\\.0\\.1:([0-9]+)");
  const std::optional<std::string> port = fast::testing::first_match(log, pattern, 30);
  return port ? std::stoi(*port) : -1;
}

// A wire frame that would be a valid data message to worker 0 from worker 1.
std::vector<::zmq::message_t> forged_frame() {
  std::vector<::zmq::message_t> parts;
  parts.emplace_back(wire::kHeaderBytes);
  const float value = 1e30f;
  wire::encode_header(
      {.kind = wire::FrameKind::data,
       .dtype = core::DType::f32,
       .src = 1,
       .dst = 0,
       .tag = make_tag(TagKind::collective, 1, 0),
       .count = 1,
       .payload_bytes = 4},
      std::span<std::byte, wire::kHeaderBytes>(static_cast<std::byte*>(parts[0].data()), wire::kHeaderBytes));
  parts.emplace_back(&value, sizeof(value));
  return parts;
}

// A CURVE client with a key pair of its own (not in the allow-list), aiming at server_key.
void curve_intruder(::zmq::context_t& context, const std::string& endpoint, const std::string& server_key) {
  const runtime::zmq::KeyPair mine = runtime::zmq::generate_key_pair();
  ::zmq::socket_t s(context, ::zmq::socket_type::dealer);
  s.set(::zmq::sockopt::linger, 0);
  s.set(::zmq::sockopt::routing_id, "p1");
  s.set(::zmq::sockopt::curve_serverkey, server_key);
  s.set(::zmq::sockopt::curve_publickey, mine.public_key);
  s.set(::zmq::sockopt::curve_secretkey, mine.secret_key);
  s.connect(endpoint);
  auto parts = forged_frame();
  ::zmq::send_multipart(s, parts, ::zmq::send_flags::dontwait);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
}

// A plain TCP client: connects to 127.0.0.1:port, writes `bytes`, lingers 100 ms, closes.
void write_to_port(int port, const std::vector<unsigned char>& bytes) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    (void)!::write(fd, bytes.data(), bytes.size());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ::close(fd);
}

// server_key: the run's public key (public keys are no secret: an intruder may know it).
void attack(int port, const std::string& server_key) {
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(port);
  ::zmq::context_t context;
  curve_intruder(context, endpoint, server_key);                                    // refused by the allow-list
  curve_intruder(context, endpoint, runtime::zmq::generate_key_pair().public_key);  // not even the server's key
  {  // a plain ZeroMQ client without CURVE
    ::zmq::socket_t s(context, ::zmq::socket_type::dealer);
    s.set(::zmq::sockopt::linger, 0);
    s.set(::zmq::sockopt::routing_id, "p1");
    s.connect(endpoint);
    auto parts = forged_frame();
    ::zmq::send_multipart(s, parts, ::zmq::send_flags::dontwait);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  {  // a plain TCP client writing random bytes
    std::mt19937 random(7);
    for (int attempt = 0; attempt < 3; ++attempt) {
      std::vector<unsigned char> junk(4096);
      for (auto& b : junk) b = static_cast<unsigned char>(random());
      write_to_port(port, junk);
    }
  }
}

// Two processes all-reduce for about 6 s; every sum must be exact.
void allreduce_loop(Context& ctx) {
  collective::Communicator comm(ctx);
  std::vector<float> v(1000);
  for (int i = 0; i < 300; ++i) {
    std::fill(v.begin(), v.end(), static_cast<float>(ctx.rank() + 1 + i));
    comm.allreduce(core::MutableView(std::span<float>(v)));
    const float expect = static_cast<float>(3 + 2 * i);
    ASSERT_EQ(v[0], expect) << "iteration " << i;
    ASSERT_EQ(v[999], expect) << "iteration " << i;
    ctx.sleep(0.02);
  }
}

TEST(ZmqSecurity, IntrudersAreRefusedAndLoggedAndTheRunStaysExact) {
  const testing::WorldCase c{"zmq", 2, "tcp"};
  if (testing::is_test_child()) {
    testing::run_world(c, allreduce_loop);
    return;
  }
  testing::Children children = testing::spawn_children(c, {});
  const int port = listening_port(children.logs[0], "listens on");
  const int pulse_port = listening_port(children.logs[0], "heartbeats");
  if (port > 0 && pulse_port > 0) {
    const std::string key = runtime::zmq::read_key_file(children.dir / "run.key").public_key;
    attack(port, key);
    attack(pulse_port, key);
  }
  testing::reap_children(children, {}, 120);  // also when no port was found: the children end here
  const std::string log = fast::testing::slurp(children.logs[0]);
  std::filesystem::remove_all(children.dir);
  ASSERT_GT(port, 0) << log;
  ASSERT_GT(pulse_port, 0) << log;
  EXPECT_NE(log.find("not in the allow-list"), std::string::npos) << log;
  EXPECT_NE(log.find("wrong server key"), std::string::npos) << log;
  // One line at least for each of the four intruders at each port ("refused a peer" from the
  // allow-list, "refused a connection on ENDPOINT" for failed handshakes; random bytes end as a
  // protocol error or a client gone during its handshake, depending on the bytes).
  int refusals = 0;
  for (std::size_t at = 0; (at = log.find("refused a ", at)) != std::string::npos; ++at) ++refusals;
  EXPECT_GE(refusals, 8) << log;
  EXPECT_NE(log.find("refused a connection on tcp://127.0.0.1:" + std::to_string(pulse_port)), std::string::npos)
      << log;
}

// The direct streams' port (tcp without shared memory: docs/launch.md, "Encryption of the data
// between hosts"): random bytes, a preamble of another stream version, and preambles naming
// process 1 with every offer id a run of 2 processes hands out, each followed by an `open` record
// that is not sealed with the key. Each connection is refused and logged; the run stays exact.
// The stream format this release writes and reads (runtime/zmq/stream.hpp, kStreamVersion).
constexpr unsigned char kStreamVersion = 3;

void stream_attack(int port) {
  std::mt19937 random(11);
  std::vector<unsigned char> junk(4096);
  for (auto& b : junk) b = static_cast<unsigned char>(random());
  write_to_port(port, junk);
  write_to_port(port, {'F', 'A', 'S', 'T', 'S', 'T', 'R', 'M', 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0});
  for (std::uint64_t offer = 1; offer <= 4; ++offer) {  // process 1's offers are ids 1, 2, ...
    // The preamble (runtime/zmq/stream.hpp): magic, this release's version, process 1, the offer id.
    std::vector<unsigned char> bytes = {'F', 'A', 'S', 'T', 'S', 'T', 'R', 'M', kStreamVersion, 0, 0, 0, 1, 0, 0, 0};
    for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<unsigned char>(offer >> (8 * i)));
    for (int i = 0; i < 88; ++i) bytes.push_back(static_cast<unsigned char>(random()));  // a forged `open`
    write_to_port(port, bytes);
  }
}

TEST(ZmqSecurity, IntrudersAtTheStreamPortAreRefusedAndLoggedAndTheRunStaysExact) {
  const testing::WorldCase c{"zmq", 2, "tcp", 1, 0};  // no shared memory: the data goes through streams
  if (testing::is_test_child()) {
    testing::run_world(c, allreduce_loop);
    return;
  }
  testing::Children children = testing::spawn_children(c, {});
  const int port = listening_port(children.logs[0], "direct streams listen on");
  if (port > 0) {
    stream_attack(port);
    // Then a flood: its lines are rate-limited (at most 20 per 10 s, log_limit.hpp).
    for (int i = 0; i < 30; ++i) write_to_port(port, {'J', 'U', 'N', 'K'});
  }
  testing::reap_children(children, {}, 120);
  const std::string log = fast::testing::slurp(children.logs[0]);
  std::filesystem::remove_all(children.dir);
  ASSERT_GT(port, 0) << log;
  int refusals = 0;
  for (std::size_t at = 0; (at = log.find("refused a stream connection", at)) != std::string::npos; ++at) ++refusals;
  EXPECT_GE(refusals, 6) << log;   // the attack's, before the flood
  EXPECT_LE(refusals, 20) << log;  // not one per connection of the flood
  EXPECT_NE(log.find("not a FAST stream"), std::string::npos) << log;
  EXPECT_NE(log.find("a FAST stream of version 1 from process 1, this process reads version " +
                     std::to_string(kStreamVersion)),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("failed authentication"), std::string::npos) << log;
}

}  // namespace
}  // namespace fast::runtime
