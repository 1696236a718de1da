// The sim runtime keeps each actor's exceptions under handling apart (actor_exceptions.hpp): its
// actors share one OS thread, whose C++ runtime keeps one stack of caught exceptions. Two workers
// each catch their own exception and block inside the handler, the first to enter its handler
// leaving it first (not last in, first out, as one thread's handlers would): each must still see
// and rethrow its own exception. Without the runtime keeping them apart, the first one's handler
// end pops the second's exception off the shared stack, and each `throw;` rethrows the other's.
#include <gtest/gtest.h>

#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/views.hpp"
#include "fast/runtime/sim/world.hpp"

namespace fast::runtime {
namespace {

constexpr double kSpeed = 1e9;  // flop/s of every host

Cluster two_hosts() {
  Cluster c;
  c.hosts = 2;
  c.speeds = {kSpeed, kSpeed};
  c.bandwidth = 1e8;
  c.latency = 1e-3;
  return c;
}

// What worker `rank` does inside its handler: worker 0 (in its handler from 0 s) leaves it at about
// 1-2 s, worker 1 (from 0.5 s) at about 3 s or later, and each blocks while the other is inside.
enum class Block { sleep, compute, receive, lock };

struct Handled {
  std::string in_handler, rethrown;
  bool current_in_handler = false;  // std::current_exception() inside the handler is this exception
};

std::vector<Handled> run_crossed_handlers(Block block) {
  std::vector<Handled> seen(2);
  std::shared_ptr<Mutex> shared_mutex;
  sim::World world({.size = 2, .cluster = two_hosts()});
  world.run([&](Context& ctx) {
    const int r = ctx.rank();
    Handled& mine = seen[static_cast<std::size_t>(r)];
    constexpr Tag tag = make_tag(TagKind::user, 1, 0);
    std::unique_lock<Mutex> held;
    if (block == Block::lock && r == 0) {  // worker 0 holds the lock from 0 s to 1 s
      shared_mutex = ctx.make_mutex();
      held = std::unique_lock<Mutex>(*shared_mutex);
    }
    try {
      try {
        ctx.sleep(0.5 * r);
        throw std::runtime_error("the error of worker " + std::to_string(r));
      } catch (const std::runtime_error& e) {
        const std::exception_ptr current = std::current_exception();
        switch (block) {
          case Block::sleep: ctx.sleep(r == 0 ? 2.0 : 3.0); break;
          case Block::compute: ctx.compute(kSpeed * (r == 0 ? 2.0 : 3.0)); break;
          case Block::receive: {
            std::vector<float> value(1, 1.0f);
            if (r == 0) {
              ctx.recv(1, tag, testing::mview(value)).wait();  // sent at 0.5 s
            } else {
              ctx.send(0, tag, testing::cview(value)).wait();
              ctx.sleep(3.0);
            }
            break;
          }
          case Block::lock:
            if (r == 0) {
              ctx.sleep(1.0);
              held.unlock();
            } else {
              std::unique_lock<Mutex> lock(*shared_mutex);  // waits for worker 0 until 1 s
              ctx.sleep(2.0);
            }
            break;
        }
        mine.in_handler = e.what();
        mine.current_in_handler = std::current_exception() == current;
        throw;
      }
    } catch (const std::runtime_error& e) {
      mine.rethrown = e.what();
    }
  });
  return seen;
}

class SimActorExceptions : public ::testing::TestWithParam<Block> {};

TEST_P(SimActorExceptions, EachWorkerRethrowsItsOwnExceptionAfterBlockingInItsHandler) {
  const std::vector<Handled> seen = run_crossed_handlers(GetParam());
  for (int r = 0; r < 2; ++r) {
    const Handled& s = seen[static_cast<std::size_t>(r)];
    const std::string own = "the error of worker " + std::to_string(r);
    EXPECT_EQ(s.in_handler, own) << "worker " << r;
    EXPECT_TRUE(s.current_in_handler) << "worker " << r;
    EXPECT_EQ(s.rethrown, own) << "worker " << r;
  }
}

std::string block_name(const ::testing::TestParamInfo<Block>& info) {
  switch (info.param) {
    case Block::sleep: return "Sleep";
    case Block::compute: return "Compute";
    case Block::receive: return "Receive";
    case Block::lock: return "Lock";
  }
  return "Unknown";
}

INSTANTIATE_TEST_SUITE_P(Blocks, SimActorExceptions,
                         ::testing::Values(Block::sleep, Block::compute, Block::receive, Block::lock), block_name);

// An actor started while another is inside a handler (an activity spawned there) handles nothing.
TEST(SimActorExceptionsStart, AnActivitySpawnedInAHandlerStartsWithNoExceptionUnderHandling) {
  bool outer_current = false, activity_current = true;
  sim::World world({.size = 1, .cluster = two_hosts()});
  world.run([&](Context& ctx) {
    try {
      throw std::runtime_error("the worker's error");
    } catch (const std::runtime_error&) {
      outer_current = std::current_exception() != nullptr;
      ctx.spawn("probe", [&] { activity_current = std::current_exception() != nullptr; }).wait();
    }
  });
  EXPECT_TRUE(outer_current);
  EXPECT_FALSE(activity_current);
}

}  // namespace
}  // namespace fast::runtime
