#include "collectives.hpp"

#include <algorithm>
#include <chrono>
#include <climits>

#include "fast/core/error.hpp"
#include "session.hpp"

namespace fast::runtime::mpi {

namespace {
std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// MPI counts are int: larger buffers go in pieces of this many elements or bytes.
constexpr std::size_t kMaxCount = std::size_t{1} << 30;
}  // namespace

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
    auto* bytes = static_cast<std::byte*>(data.data());
    for (std::size_t at = 0; at < data.bytes(); at += kMaxCount) {
      const std::size_t n = std::min(kMaxCount, data.bytes() - at);
      check(MPI_Bcast(bytes + at, static_cast<int>(n), MPI_BYTE, root, comm_), "MPI_Bcast");
    }
  });
}

void MpiCollectives::allgather(std::uint64_t ticket, core::ConstView in, core::MutableView out) {
  in_turn(ticket, [&] {
    if (in.bytes() > INT_MAX)
      FAST_THROW(core::InvalidArgument, "allgather: {} bytes per worker exceed MPI's count limit ({} bytes)",
                 in.bytes(), INT_MAX);
    const int n = static_cast<int>(in.bytes());
    check(MPI_Allgather(in.data(), n, MPI_BYTE, out.data(), n, MPI_BYTE, comm_), "MPI_Allgather");
  });
}

void MpiCollectives::barrier(std::uint64_t ticket) {
  in_turn(ticket, [&] { check(MPI_Barrier(comm_), "MPI_Barrier"); });
}

}  // namespace fast::runtime::mpi
