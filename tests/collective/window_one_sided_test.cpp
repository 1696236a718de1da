// Windows on every way of reaching the owner (include/fast/collective/window.hpp): MPI RMA (the
// mpi runtime's one-sided memory, the default there), the owner's service over MPI messages, and
// the service under threads. The same worker code runs on each and every operation is checked
// against its closed form, computed here; the values are small integers and halves, so every sum
// is exact and any lost, doubled or misplaced update shows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/views.hpp"
#include "common/world_runner.hpp"
#include "fast/collective/window.hpp"
#include "fast/runtime/launcher.hpp"
#include "fast/runtime/remote_memory.hpp"

namespace fast::collective {
namespace {

using core::MutableView;
using runtime::Context;
using testing::cview;
using testing::mview;

struct Case {
  testing::WorldCase world;
  std::string windows;  // LaunchOptions::windows
  std::string name() const { return world.name() + "_" + windows; }
};

inline void PrintTo(const Case& c, std::ostream* os) { *os << c.name(); }

class OneSided : public ::testing::TestWithParam<Case> {
 protected:
  void run(const runtime::WorkerFn& fn) {
    testing::run_world(GetParam().world, fn, {.op_timeout_seconds = 60, .windows = GetParam().windows});
  }
};

constexpr std::size_t kSlots = 4;  // elements per worker slot

// put, get and versions; accumulate from two activities of every worker; the owner's guard.
TEST_P(OneSided, PutGetAccumulateAndTheOwnersGuardGiveTheirClosedForms) {
  const bool rma = GetParam().windows == "rma";
  run([rma](Context& ctx) {
    Communicator comm(ctx);
    const int n = ctx.size(), r = ctx.rank(), next = (r + 1) % n;
    std::vector<float> mine(kSlots * static_cast<std::size_t>(n), 0.0f);
    Window window(comm, "slots", mview(mine));
    // One-sided memory exactly where it was asked for (windows without a codec).
    EXPECT_EQ(ctx.remote_memory() != nullptr, rma);

    const std::vector<float> half(kSlots, static_cast<float>(r) + 0.5f);
    window.put(next, cview(half), kSlots * static_cast<std::size_t>(r)).wait();
    comm.barrier();
    std::vector<float> back(kSlots, -1.0f);
    std::uint64_t version = 99;
    window.get(next, mview(back), kSlots * static_cast<std::size_t>(r), &version).wait();
    EXPECT_EQ(back, half);
    EXPECT_EQ(version, 1u) << "one put reached every worker";
    comm.barrier();

    // Two activities of every worker add (k + 1) (r + 1) to worker 0's slot n - 1 (its put came
    // from worker n - 1: (n - 1) + 0.5), ten times each.
    auto adder = [&] {
      std::vector<float> add(kSlots);
      for (std::size_t k = 0; k < kSlots; ++k) add[k] = static_cast<float>((k + 1) * static_cast<std::size_t>(r + 1));
      for (int i = 0; i < 10; ++i) window.accumulate(0, cview(add), kSlots * static_cast<std::size_t>(n - 1)).wait();
    };
    core::Work other = ctx.spawn("adder", adder);
    adder();
    other.wait();
    comm.barrier();
    if (r == 0) {
      Window::Local local = window.local();
      const auto view = local.view().as<float>();
      const double ranks = n * (n + 1) / 2.0;  // sum of r + 1
      for (std::size_t k = 0; k < kSlots; ++k)
        EXPECT_EQ(view[kSlots * static_cast<std::size_t>(n - 1) + k], n - 0.5 + 20.0 * (k + 1) * ranks)
            << "element " << k;
      EXPECT_EQ(local.version(), 1u + 20u * static_cast<unsigned>(n));
      local.bump();
      local.bump();
    }
    comm.barrier();
    window.get(0, mview(back), 0, &version).wait();
    EXPECT_EQ(version, 3u + 20u * static_cast<unsigned>(n)) << "the owner's bumps count in the version";
    window.close();
    {
      Window::Local local = window.local();  // still the owner's after close()
      EXPECT_EQ(local.version(), 1u + (r == 0 ? 2u + 20u * static_cast<unsigned>(n) : 0u));
      if (r != 0) {  // the previous worker's put
        EXPECT_EQ(local.view().as<float>()[kSlots * static_cast<std::size_t>(r - 1)], static_cast<float>(r) - 0.5f);
      }
    }
  });
}

// fetch_accumulate as a counter shared by every activity of every worker: the values seen before
// each add are 0 .. total - 1, each once.
TEST_P(OneSided, FetchAccumulateIsAnAtomicCounter) {
  run([](Context& ctx) {
    Communicator comm(ctx);
    const int n = ctx.size();
    std::vector<double> mine(2, 0.0);
    Window window(comm, "counter", MutableView(std::span<double>(mine)));
    constexpr int kEach = 12;
    std::vector<double> seen(2 * kEach, -1.0);
    auto counter = [&](std::size_t from) {
      const std::vector<double> one{1.0};
      for (int i = 0; i < kEach; ++i) {
        window
            .fetch_accumulate(n - 1, core::ConstView(std::span<const double>(one)),
                              MutableView(std::span<double>(seen.data() + from + i, 1)), 1)
            .wait();
      }
    };
    core::Work other = ctx.spawn("counter", [&] { counter(kEach); });
    counter(0);
    other.wait();
    std::vector<double> all(seen.size() * static_cast<std::size_t>(n));
    comm.allgather(core::ConstView(std::span<const double>(seen)), MutableView(std::span<double>(all)));
    std::sort(all.begin(), all.end());
    for (std::size_t i = 0; i < all.size(); ++i) ASSERT_EQ(all[i], static_cast<double>(i)) << "value " << i;
    window.close();
    if (ctx.rank() == n - 1) {
      EXPECT_EQ(mine[1], static_cast<double>(all.size()));
    }
  });
}

// fetch_average, accumulate_scaled with its extra element outside the range, exchange_difference:
// one requester at a time, each result against the formula of window.hpp.
TEST_P(OneSided, AverageScaledAndExchangeDifferenceFollowTheirFormulas) {
  run([](Context& ctx) {
    Communicator comm(ctx);
    const int n = ctx.size(), r = ctx.rank(), owner = (r + 1) % n;
    std::vector<float> mine(9);
    for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = static_cast<float>(10 * r) + static_cast<float>(i);
    Window window(comm, "formulas", mview(mine));
    auto initial = [](int w, std::size_t i) { return static_cast<float>(10 * w) + static_cast<float>(i); };

    const std::vector<float> src{3.0f, 5.0f};
    std::vector<float> before(2);
    window.fetch_average(owner, cview(src), mview(before), 0).wait();  // elements 0, 1
    EXPECT_EQ(before, (std::vector<float>{initial(owner, 0), initial(owner, 1)}));
    window.accumulate_scaled(owner, cview(src), 0.5, 2, 8).wait();  // elements 2, 3; 8 += 0.5
    const std::vector<float> state{1.0f, 2.0f};
    const std::vector<double> coefficients{-0.5, 0.5};
    std::vector<float> difference(2);
    window.exchange_difference(owner, cview(state), mview(difference), coefficients, 1, 4).wait();  // 4..7
    comm.barrier();
    {
      Window::Local local = window.local();
      const auto v = local.view().as<float>();
      const int w = r;  // this worker's tensor, changed by worker (r - 1) mod n
      EXPECT_EQ(v[0], static_cast<float>((initial(w, 0) + 3.0) * 0.5));
      EXPECT_EQ(v[1], static_cast<float>((initial(w, 1) + 5.0) * 0.5));
      EXPECT_EQ(v[2], static_cast<float>(initial(w, 2) + 0.5 * 3.0));
      EXPECT_EQ(v[3], static_cast<float>(initial(w, 3) + 0.5 * 5.0));
      EXPECT_EQ(v[8], static_cast<float>(initial(w, 8) + 0.5));
      for (std::size_t i = 0; i < 2; ++i) {
        const double m = static_cast<double>(state[i]) - initial(w, 4 + i);  // block 0 summed
        EXPECT_EQ(v[4 + i], static_cast<float>(initial(w, 4 + i) - 0.5 * m)) << "block 0, element " << i;
        EXPECT_EQ(v[6 + i], static_cast<float>(initial(w, 6 + i) + 0.5 * m)) << "block 1, element " << i;
      }
      EXPECT_EQ(local.version(), 3u);
    }
    for (std::size_t i = 0; i < 2; ++i)
      EXPECT_EQ(difference[i], static_cast<float>(static_cast<double>(state[i]) - initial(owner, 4 + i)));
    window.close();
  });
}

// A window with a codec keeps the service next to one on one-sided memory in the same world.
TEST_P(OneSided, AWindowWithACodecKeepsTheServiceBesideOneSidedOnes) {
  run([](Context& ctx) {
    Communicator comm(ctx);
    const int n = ctx.size(), r = ctx.rank();
    std::vector<float> plain(4, 0.0f), coded(4, 0.0f);
    Window a(comm, "plain", mview(plain));
    Window b(comm, "coded", mview(coded), {.codec = "fp16"});
    const std::vector<float> one(4, 1.0f);
    a.accumulate(0, cview(one)).wait();
    b.accumulate(0, cview(one)).wait();
    comm.barrier();
    if (r == 0) {
      EXPECT_EQ(plain, std::vector<float>(4, static_cast<float>(n)));
      EXPECT_EQ(coded, std::vector<float>(4, static_cast<float>(n)));  // 1.0 is exact in fp16
    }
    a.close();
    b.close();
  });
}

std::vector<Case> cases() {
  std::vector<Case> all = {{{"threads", 3}, "service"}};
  const std::vector<std::string> built = runtime::runtime_names();
  if (std::find(built.begin(), built.end(), "mpi") != built.end()) {
    for (int n : {2, 4}) all.push_back({{"mpi", n}, "rma"});
    all.push_back({{"mpi", 3}, "service"});
  }
  return all;
}

INSTANTIATE_TEST_SUITE_P(Runtimes, OneSided, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name(); });

}  // namespace
}  // namespace fast::collective
