#include "collectives.hpp"

#include <algorithm>
#include <chrono>
#include <climits>

#include <fmt/format.h>

#include "fast/core/env.hpp"
#include "fast/core/error.hpp"
#include "fast/runtime/environment.hpp"
#include "session.hpp"

namespace fast::runtime::mpi {

namespace {
std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// MPI counts are int: larger buffers go in pieces of this many elements or bytes.
constexpr std::size_t kMaxCount = std::size_t{1} << 30;

// With FAST_CHECK_COLLECTIVES=1, before each collective the ranks check that their calls agree
// (MPI itself does not: a rank whose buffer is longer than another's ends with MPI_ERR_TRUNCATE
// while the other returns with a wrong result). One MPI_Allreduce of 8 int64 under MAX gives every
// rank the largest and smallest kind, count, dtype and root, so every rank sees the same mismatch
// and throws the same error, and the next collective meets the same calls on every rank. Off by
// default: it adds a small-message latency to every collective (about 1 us of 18 at 64 KiB on
// 2 ranks of one host, docs/collectives.md).
struct Signature {
  const char* what;        // the collective's name
  int kind = 0;            // which collective: 0 allreduce, 1 broadcast, 2 allgather, 3 barrier
  std::int64_t count = 0;  // elements of `dtype`, else bytes
  int dtype = -1;          // core::DType; -1 where bytes are counted (barrier)
  int root = 0;            // broadcast only
};

void agree(MPI_Comm comm, const Signature& mine) {
  std::int64_t v[8] = {mine.count, -mine.count, mine.dtype, -mine.dtype, mine.root, -mine.root, mine.kind, -mine.kind};
  check(MPI_Allreduce(MPI_IN_PLACE, v, 8, MPI_INT64_T, MPI_MAX, comm), "MPI_Allreduce");
  if (v[6] != -v[7])
    FAST_THROW(core::InvalidArgument,
               "{}: the workers called different collectives at the same point (this worker: {}); expected every "
               "worker to call the same collectives in the same order (MPI's native collectives, --runtime mpi)",
               mine.what, mine.what);
  if (v[0] == -v[1] && v[2] == -v[3] && v[4] == -v[5]) return;
  const auto dtype = [](std::int64_t d) { return core::name_of(static_cast<core::DType>(d)); };
  const char* unit = mine.dtype >= 0 ? "elements" : "bytes";
  std::string differ;
  if (v[0] != -v[1]) differ += fmt::format("; lengths from {} to {} {}", -v[1], v[0], unit);
  if (v[2] != -v[3]) differ += fmt::format("; dtypes from {} to {}", dtype(-v[3]), dtype(v[2]));
  if (v[4] != -v[5]) differ += fmt::format("; roots from {} to {}", -v[5], v[4]);
  std::string this_one = fmt::format("{} {}", mine.count, unit);
  if (mine.dtype >= 0) this_one += fmt::format(" of {}", dtype(mine.dtype));
  if (v[4] != -v[5]) this_one += fmt::format(", root {}", mine.root);
  FAST_THROW(core::InvalidArgument,
             "{}: the workers' calls differ{} (this worker: {}); expected every worker to call it alike (MPI's "
             "native collectives, --runtime mpi)",
             mine.what, differ, this_one);
}
}  // namespace

MpiCollectives::MpiCollectives(MPI_Comm comm)
    : comm_(comm), check_calls_(core::env_number(runtime_environment(), "FAST_CHECK_COLLECTIVES") != 0) {}

template <typename Fn>
void MpiCollectives::in_turn(std::uint64_t ticket, Fn&& fn) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return turn_ == ticket; });
  }
  const std::int64_t entered = now_ns();
  entered_ns_.store(entered, std::memory_order_relaxed);
  inside_.fetch_add(1, std::memory_order_relaxed);
  struct PassOn {
    MpiCollectives& self;
    std::int64_t entered;
    ~PassOn() {
      self.last_duration_ns_.store(now_ns() - entered, std::memory_order_relaxed);
      self.inside_.fetch_sub(1, std::memory_order_relaxed);
      {
        std::lock_guard<std::mutex> lock(self.mutex_);
        ++self.turn_;
      }
      self.cv_.notify_all();
    }
  } pass_on{*this, entered};
  fn();
  results_visible();
}

std::chrono::steady_clock::time_point MpiCollectives::overdue_at(std::chrono::nanoseconds floor,
                                                                 std::chrono::nanoseconds cap) const {
  if (!inside()) return std::chrono::steady_clock::time_point::max();
  const std::chrono::nanoseconds twice(2 * last_duration_ns_.load(std::memory_order_relaxed));
  const std::chrono::nanoseconds entered(entered_ns_.load(std::memory_order_relaxed));
  return std::chrono::steady_clock::time_point(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(entered + std::clamp(twice, floor, cap)));
}

void MpiCollectives::allreduce_sum(std::uint64_t ticket, core::MutableView data) {
  in_turn(ticket, [&] {
    if (check_calls_) agree(comm_, {"allreduce", 0, static_cast<std::int64_t>(data.numel()), static_cast<int>(data.dtype())});
    const bool f32 = data.dtype() == core::DType::f32;
    FAST_ENFORCE(f32 || data.dtype() == core::DType::f64, "allreduce: expected f32 or f64 data, got {}",
                 core::name_of(data.dtype()));
    const MPI_Datatype type = f32 ? MPI_FLOAT : MPI_DOUBLE;
    for (std::size_t at = 0; at < data.numel(); at += kMaxCount) {
      const std::size_t n = std::min(kMaxCount, data.numel() - at);
      check(MPI_Allreduce(MPI_IN_PLACE, data.slice(at, n).data(), static_cast<int>(n), type, MPI_SUM, comm_),
            "MPI_Allreduce");
    }
  });
}

void MpiCollectives::broadcast(std::uint64_t ticket, core::MutableView data, int root) {
  in_turn(ticket, [&] {
    if (check_calls_)
      agree(comm_, {"broadcast", 1, static_cast<std::int64_t>(data.numel()), static_cast<int>(data.dtype()), root});
    auto* bytes = static_cast<std::byte*>(data.data());
    for (std::size_t at = 0; at < data.bytes(); at += kMaxCount) {
      const std::size_t n = std::min(kMaxCount, data.bytes() - at);
      check(MPI_Bcast(bytes + at, static_cast<int>(n), MPI_BYTE, root, comm_), "MPI_Bcast");
    }
  });
}

void MpiCollectives::allgather(std::uint64_t ticket, core::ConstView in, core::MutableView out) {
  in_turn(ticket, [&] {
    if (check_calls_) agree(comm_, {"allgather", 2, static_cast<std::int64_t>(in.numel()), static_cast<int>(in.dtype())});
    if (in.bytes() > INT_MAX)
      FAST_THROW(core::InvalidArgument, "allgather: {} bytes per worker exceed MPI's count limit ({} bytes)",
                 in.bytes(), INT_MAX);
    const int n = static_cast<int>(in.bytes());
    check(MPI_Allgather(in.data(), n, MPI_BYTE, out.data(), n, MPI_BYTE, comm_), "MPI_Allgather");
  });
}

void MpiCollectives::barrier(std::uint64_t ticket) {
  in_turn(ticket, [&] {
    if (check_calls_) agree(comm_, {"barrier", 3});
    check(MPI_Barrier(comm_), "MPI_Barrier");
  });
}

}  // namespace fast::runtime::mpi
