#include "transport.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>

#include <fmt/format.h>

#include "fast/core/error.hpp"
#include "fast/core/log.hpp"
#include "fast/wire/frame.hpp"
#include "session.hpp"

namespace fast::runtime::mpi {

namespace {
constexpr std::size_t kMaxReasonBytes = 4096;
constexpr std::size_t kMaxMessageBytes = INT_MAX;  // MPI counts are int

std::span<std::byte, wire::kHeaderBytes> header_span(std::byte* p) {
  return std::span<std::byte, wire::kHeaderBytes>(p, wire::kHeaderBytes);
}

// Where a worker ran, for PeerLost messages.
std::string where(int rank) { return fmt::format("worker {} (MPI rank {} of MPI_COMM_WORLD)", rank, rank); }
}  // namespace

MpiTransport::MpiTransport(MPI_Comm comm, int rank, int size, double op_timeout_seconds)
    : comm_(comm),
      rank_(rank),
      size_(size),
      op_timeout_(op_timeout_seconds),
      peers_(static_cast<std::size_t>(size)),
      lost_(std::make_unique<std::atomic<bool>[]>(static_cast<std::size_t>(size))) {
  for (int r = 0; r < size; ++r) lost_[static_cast<std::size_t>(r)] = false;
}

MpiTransport::~MpiTransport() { stop(); }

void MpiTransport::start(engine::LocalWorld& world, std::function<void(const std::string&)> on_failed) {
  world_ = &world;
  on_failed_ = std::move(on_failed);
  thread_ = std::thread([this] { loop(); });
}

void MpiTransport::stop() {
  if (!thread_.joinable()) return;
  stop_ = true;
  ring();
  thread_.join();
  // Sends MPI never completed (finish() timed out): their memory may still be read by MPI, so it
  // is left to the process's end; their Works fail.
  std::lock_guard<std::mutex> lock(posted_mutex_);
  for (auto* list : {&posted_, &pending_})
    for (Pending& p : *list) {
      if (p.done)
        p.done->complete(
            std::make_exception_ptr(core::PeerLost("mpi runtime: the run ended before this send completed")));
      (void)p.bytes.release();
    }
}

core::Work MpiTransport::send(int src, int dst, Tag tag, core::ConstView data) {
  ensure_alive(dst);
  const std::size_t bytes = data.bytes();
  if (bytes > kMaxMessageBytes - wire::kHeaderBytes)
    FAST_THROW(core::InvalidArgument,
               "mpi runtime: a message of {} bytes from worker {} to worker {} exceeds MPI's limit of {} bytes per "
               "message; send it in pieces (the collectives do)",
               bytes, src, dst, kMaxMessageBytes - wire::kHeaderBytes);
  const wire::FrameHeader header = wire::data_header(src, dst, tag, data);
  Pending p;
  if (bytes < kCopyBytes) {  // one buffer, header then payload; the caller's memory is free at once
    p.bytes.reset(new std::byte[wire::kHeaderBytes + bytes]);
    wire::encode_header(header, header_span(p.bytes.get()));
    if (bytes > 0) std::memcpy(p.bytes.get() + wire::kHeaderBytes, data.data(), bytes);
    const void* buffer = p.bytes.get();
    post(std::move(p), buffer, static_cast<int>(wire::kHeaderBytes + bytes), MPI_BYTE, dst, kDataTag);
    return {};
  }
  // In place: one datatype spanning the header and the caller's payload (absolute addresses).
  p.bytes.reset(new std::byte[wire::kHeaderBytes]);
  wire::encode_header(header, header_span(p.bytes.get()));
  MPI_Aint addresses[2];
  MPI_Get_address(p.bytes.get(), &addresses[0]);
  MPI_Get_address(data.data(), &addresses[1]);
  const int lengths[2] = {static_cast<int>(wire::kHeaderBytes), static_cast<int>(bytes)};
  check(MPI_Type_create_hindexed(2, lengths, addresses, MPI_BYTE, &p.type), "MPI_Type_create_hindexed");
  check(MPI_Type_commit(&p.type), "MPI_Type_commit");
  p.done = std::make_shared<detail::Completion>(
      fmt::format("send from worker {} to worker {} (tag {:#x})", src, dst, tag), op_timeout_);
  core::Work work(p.done);
  const MPI_Datatype type = p.type;
  post(std::move(p), MPI_BOTTOM, 1, type, dst, kDataTag);
  return work;
}

void MpiTransport::post(Pending pending, const void* buffer, int count, MPI_Datatype type, int dst, int mpi_tag) {
  const int rc = MPI_Isend(buffer, count, type, dst, mpi_tag, comm_, &pending.request);
  if (rc != MPI_SUCCESS) {
    if (pending.type != MPI_DATATYPE_NULL) MPI_Type_free(&pending.type);
    check(rc, "MPI_Isend");
  }
  {
    std::lock_guard<std::mutex> lock(posted_mutex_);
    posted_.push_back(std::move(pending));
  }
  ++in_flight_;
  kicked_ = true;
  ring();
}

bool MpiTransport::alive(int rank) const { return !lost_[static_cast<std::size_t>(rank)].load(); }

void MpiTransport::ensure_alive(int rank) const {
  if (!lost_[static_cast<std::size_t>(rank)].load()) return;
  std::lock_guard<std::mutex> lock(peers_mutex_);
  throw core::PeerLost(fmt::format("{} {}", where(rank), peers_[static_cast<std::size_t>(rank)].reason));
}

void MpiTransport::send_bye(const std::string& error) {
  {
    std::lock_guard<std::mutex> lock(peers_mutex_);
    if (bye_sent_) return;
    bye_sent_ = true;
  }
  const std::string text = error.substr(0, kMaxReasonBytes);
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    const wire::FrameHeader header{.kind = wire::FrameKind::bye,
                                   .dtype = core::DType::u8,
                                   .src = rank_,
                                   .dst = peer,
                                   .tag = 0,
                                   .count = text.size(),
                                   .payload_bytes = text.size()};
    Pending p;
    p.bytes.reset(new std::byte[wire::kHeaderBytes + text.size()]);
    wire::encode_header(header, header_span(p.bytes.get()));
    std::memcpy(p.bytes.get() + wire::kHeaderBytes, text.data(), text.size());
    const void* buffer = p.bytes.get();
    post(std::move(p), buffer, static_cast<int>(wire::kHeaderBytes + text.size()), MPI_BYTE, peer, kControlTag);
  }
}

void MpiTransport::announce_failure(const std::string& reason) { send_bye(reason.empty() ? "failed" : reason); }

void MpiTransport::finish(double limit_seconds) {
  send_bye("");
  std::unique_lock<std::mutex> lock(peers_mutex_);
  const bool done = peers_cv_.wait_for(lock, std::chrono::duration<double>(limit_seconds),
                                       [&] { return byes_ == size_ - 1 && in_flight_.load() == 0; });
  if (done) return;
  end_without_finalize();  // a silent peer may be inside a collective
  std::string silent;
  for (int r = 0; r < size_; ++r)
    if (r != rank_ && !peers_[static_cast<std::size_t>(r)].said_bye)
      silent += (silent.empty() ? "" : ", ") + std::to_string(r);
  core::log(core::LogLevel::warn,
            "mpi runtime: rank {} ends after {:.0f} s without the end of rank(s) [{}] and with {} send(s) unfinished",
            rank_, limit_seconds, silent, in_flight_.load());
}

}  // namespace fast::runtime::mpi
