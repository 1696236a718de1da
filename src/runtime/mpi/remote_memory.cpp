#include "remote_memory.hpp"

#include <algorithm>

#include "fast/core/error.hpp"
#include "fast/core/log.hpp"
#include "session.hpp"

namespace fast::runtime::mpi {

namespace {
// MPI counts are int: larger transfers go in pieces of this many bytes.
constexpr std::size_t kPiece = std::size_t{1} << 30;
}  // namespace

std::unique_ptr<RemoteRegion> MpiRemoteMemory::expose(void* base, std::size_t bytes) {
  std::lock_guard<std::mutex> lock(collective_mutex_);
  std::vector<std::uint64_t> sizes(static_cast<std::size_t>(size_));
  const std::uint64_t mine = bytes;
  check(MPI_Allgather(&mine, 1, MPI_UINT64_T, sizes.data(), 1, MPI_UINT64_T, comm_), "MPI_Allgather");
  MPI_Win data = MPI_WIN_NULL;
  const int code =
      MPI_Win_create(bytes > 0 ? base : nullptr, static_cast<MPI_Aint>(bytes), 1, MPI_INFO_NULL, comm_, &data);
  // {created here, not created here}, reduced with MIN: whether every rank and whether any rank has it.
  const int created = code == MPI_SUCCESS ? 1 : 0;
  int mine_flags[2] = {created, -created}, flags[2] = {0, 0};
  check(MPI_Allreduce(mine_flags, flags, 2, MPI_INT, MPI_MIN, comm_), "MPI_Allreduce");
  const bool everyone = flags[0] == 1, anyone = flags[1] == -1;
  if (!anyone) {
    if (!warned_)
      core::log(core::LogLevel::warn,
                "mpi runtime: MPI offers no one-sided windows for this job (MPI_Win_create: {}); one-sided windows "
                "use FAST's service activity instead (FAST_WINDOWS=service says so without trying)",
                error_text(code));
    warned_ = true;
    return nullptr;
  }
  if (!everyone)
    FAST_THROW(core::IoError,
               "mpi runtime: MPI_Win_create failed on some ranks only (here: {}); set "
               "FAST_WINDOWS=service",
               created ? "created" : error_text(code));
  check(MPI_Win_set_errhandler(data, MPI_ERRORS_RETURN), "MPI_Win_set_errhandler");
  MPI_Win counters = MPI_WIN_NULL;
  std::uint64_t* counter = nullptr;
  check(MPI_Win_allocate(sizeof(std::uint64_t), sizeof(std::uint64_t), MPI_INFO_NULL, comm_, &counter, &counters),
        "MPI_Win_allocate");
  check(MPI_Win_set_errhandler(counters, MPI_ERRORS_RETURN), "MPI_Win_set_errhandler");
  const std::uint64_t zero = 0;
  check(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank_, 0, counters), "MPI_Win_lock");
  check(MPI_Put(&zero, 1, MPI_UINT64_T, rank_, 0, 1, MPI_UINT64_T, counters), "MPI_Put");
  check(MPI_Win_unlock(rank_, counters), "MPI_Win_unlock");
  check(MPI_Barrier(comm_), "MPI_Barrier");  // every counter is 0 before anyone adds to it
  return std::make_unique<MpiRegion>(*this, data, counters, std::move(sizes));
}

MpiRegion::MpiRegion(MpiRemoteMemory& memory, MPI_Win data, MPI_Win counters, std::vector<std::uint64_t> sizes)
    : memory_(memory),
      data_(data),
      counters_(counters),
      sizes_(std::move(sizes)),
      turns_(std::make_unique<std::mutex[]>(sizes_.size())) {}

MpiRegion::~MpiRegion() {
  // Not closed: an error unwinds this worker's run. MPI_Win_free is collective and the others may
  // never call it; the windows are left to MPI_Finalize.
  if (!closed_) core::log(core::LogLevel::debug, "mpi runtime: a one-sided region was not closed");
}

void MpiRegion::check_range(const char* what, int owner, std::size_t offset, std::size_t bytes) const {
  FAST_ENFORCE(!closed_, "mpi runtime: one-sided {} after close()", what);
  FAST_ENFORCE(owner >= 0 && static_cast<std::size_t>(owner) < sizes_.size(),
               "mpi runtime: one-sided {}: rank {} outside [0, {})", what, owner, sizes_.size());
  const std::uint64_t size = sizes_[static_cast<std::size_t>(owner)];
  FAST_ENFORCE(offset <= size && bytes <= size - offset,
               "mpi runtime: one-sided {} of bytes [{}, {}) on rank {}, which exposes {} bytes", what, offset,
               offset + bytes, owner, size);
}

engine::LinkCounters* MpiRegion::counters_of(int owner) const {
  engine::LinkCounters* all = memory_.counters_.load(std::memory_order_acquire);
  return all != nullptr ? &all[owner] : nullptr;
}

void MpiRegion::acquire(int owner, Access access) {
  check_range("acquire", owner, 0, 0);
  std::mutex& turn = turns_[static_cast<std::size_t>(owner)];
  turn.lock();
  const int code = MPI_Win_lock(access == Access::exclusive ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED, owner, 0, data_);
  if (code != MPI_SUCCESS) {
    turn.unlock();
    check(code, "MPI_Win_lock");
  }
}

void MpiRegion::release(int owner) {
  check_range("release", owner, 0, 0);
  // The owner's own loads and stores through its pointer meet the window's copy (a no-op in MPI's
  // unified memory model, OpenMPI's on one host).
  const int synced = owner == memory_.rank_ ? MPI_Win_sync(data_) : MPI_SUCCESS;
  const int code = MPI_Win_unlock(owner, data_);
  turns_[static_cast<std::size_t>(owner)].unlock();
  check(synced, "MPI_Win_sync");
  check(code, "MPI_Win_unlock");
}

void MpiRegion::read(int owner, std::size_t offset, void* dst, std::size_t bytes) {
  check_range("read", owner, offset, bytes);
  auto* out = static_cast<std::byte*>(dst);
  for (std::size_t at = 0; at < bytes; at += kPiece) {
    const int n = static_cast<int>(std::min(kPiece, bytes - at));
    check(MPI_Get(out + at, n, MPI_BYTE, owner, static_cast<MPI_Aint>(offset + at), n, MPI_BYTE, data_), "MPI_Get");
  }
  check(MPI_Win_flush(owner, data_), "MPI_Win_flush");
  if (engine::LinkCounters* c = counters_of(owner); c != nullptr && owner != memory_.rank_) {
    c->bytes_received.fetch_add(bytes, std::memory_order_relaxed);
    c->messages_received.fetch_add(1, std::memory_order_relaxed);
  }
}

void MpiRegion::write(int owner, std::size_t offset, const void* src, std::size_t bytes) {
  check_range("write", owner, offset, bytes);
  const auto* in = static_cast<const std::byte*>(src);
  for (std::size_t at = 0; at < bytes; at += kPiece) {
    const int n = static_cast<int>(std::min(kPiece, bytes - at));
    check(MPI_Put(in + at, n, MPI_BYTE, owner, static_cast<MPI_Aint>(offset + at), n, MPI_BYTE, data_), "MPI_Put");
  }
  if (engine::LinkCounters* c = counters_of(owner); c != nullptr && owner != memory_.rank_) {
    c->bytes_sent.fetch_add(bytes, std::memory_order_relaxed);
    c->messages_sent.fetch_add(1, std::memory_order_relaxed);
  }
}

std::uint64_t MpiRegion::add_to_counter(int owner, std::uint64_t add) {
  check_range("add_to_counter", owner, 0, 0);
  std::uint64_t before = 0;
  check(MPI_Win_lock(MPI_LOCK_SHARED, owner, 0, counters_), "MPI_Win_lock");
  const int code = MPI_Fetch_and_op(&add, &before, MPI_UINT64_T, owner, 0, add != 0 ? MPI_SUM : MPI_NO_OP, counters_);
  const int unlocked = MPI_Win_unlock(owner, counters_);
  check(code, "MPI_Fetch_and_op");
  check(unlocked, "MPI_Win_unlock");
  return before;
}

void MpiRegion::close() {
  if (closed_) return;
  std::lock_guard<std::mutex> lock(memory_.collective_mutex_);
  closed_ = true;
  check(MPI_Win_free(&counters_), "MPI_Win_free");
  check(MPI_Win_free(&data_), "MPI_Win_free");
}

}  // namespace fast::runtime::mpi
