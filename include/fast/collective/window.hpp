#pragma once
// Window: one-sided access to a named tensor that every worker exposes — the "global
// asynchronous memory" of the FAST proposal section 4. A worker puts into, gets from, accumulates into or
// averages with another worker's tensor without that worker's training code taking part: a
// service activity of the owner answers requests, so the owner may be computing, sleeping or
// waiting meanwhile.
//
// Two ways to reach the owner's tensor, chosen when the window opens, the same on every worker:
//
// One-sided memory (Context::remote_memory, fast/runtime/remote_memory.hpp: the mpi runtime's MPI
// RMA, LaunchOptions::windows = "rma"), for windows without a codec: the requester itself takes
// the owner's region alone (a get shares it with other gets, never with a writer), reads what the operation needs,
// applies the operation's arithmetic (the service's, bit for bit), writes the result back and counts the version, and
// releases the region. No activity of the owner runs; every operation completes before it returns (its Work is
// complete). The owner's Local guard takes its own region the same way (after close(): its lock alone, as nobody else
// reaches the tensor).
//
// The service, everywhere else: built on Context point-to-point messages only (recv_any for
// requests), so it works on every runtime. Each request is a header (op, offset, count, dtype, sequence, ...) plus, for
// put, accumulate, fetch_accumulate, fetch_average and exchange_difference, a payload message; the owner answers with
// the data (get, fetch_accumulate, fetch_average, exchange_difference) and an acknowledgement carrying the tensor's
// version. Every operation's Work completes once the owner has applied it, so a completed put is
// visible to any later get.
//
// Tags: make_tag(TagKind::window, id, detail), id = 32-bit FNV-1a hash of the window's name;
// detail 0xFFFFFF for requests, seq for get data, seq | 0x400000 for acknowledgements,
// seq | 0x800000 for payloads, where seq < 0x400000 is the requester's per-window counter.
//
// The owner's service receives a request's payload before taking the window lock and sends its
// answer (data, acknowledgement) after releasing it, without waiting for the transfer: the lock is
// held for the arithmetic only, and requests from other workers are served while answers travel.
// The payload goes into a buffer from the pool of page runs (core::Buffer::pooled), sized when it
// is delivered; fetch_average and fetch_accumulate form their answer (the region before) in that
// same buffer as they combine it, so a request in flight holds one model-sized buffer, not two.
//
// Atomicity: each remote operation is applied under the owner's window lock, so it is atomic
// with respect to the other operations on the same window and to the owner's Local guard.
// Version: the count of remote operations that wrote (all but get) plus the owner's bump() calls;
// get reports the version its data was read at (a parameter server's staleness clock).
//
// Lifetime: the constructor and close() are collective (every worker of the Communicator calls
// them, in the same order relative to its other collectives). close() waits until every worker has
// stopped issuing requests to the window, then stops the service. The exposed memory must stay
// valid until close() returns or the Window is destroyed.
//
// Lost workers (Context::alive): an operation on a lost worker's window throws PeerLost. A
// request whose requester is lost while it is served is dropped (a payload that had not arrived
// is not applied) and the service goes on. The constructor spans the whole world (InvalidUsage
// after Communicator::exclude_lost() dropped someone); close() is a barrier of the
// Communicator's group, so after exclude_lost() it waits for the survivors only.
//
// Compression (WindowOptions::codec other than "none"): f32 and f64 data travel encoded. Data that
// is added (the payloads of accumulate and fetch_accumulate) goes through error feedback, one
// residual per (peer, range). Data that is a state (the payloads of put, fetch_average and
// exchange_difference, the data returned by get, fetch_accumulate, fetch_average and
// exchange_difference) travels as the codec's encoding of its
// difference from a reference both ends keep per (peer, range, direction)
// (compress::DeltaSender/DeltaReceiver): the value received is the receiver's reference, which
// tracks the sender's state and equals it exactly with a lossless codec. Operations that return
// data then complete before they return (their data is decoded on arrival); accumulate stays
// asynchronous. Wire::exact sends one accumulate uncompressed (a scalar that must stay exact,
// such as push-sum's mass) or reads one get exactly (evaluating a model, not training with it). Other dtypes always
// travel as they are.
//
// Thread-safety: put/get/accumulate may be issued concurrently by any activity of the owning
// worker. Never hold a Local guard while waiting on another worker (the service needs the lock).

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fast/collective/communicator.hpp"
#include "fast/compress/meter.hpp"
#include "fast/core/layout.hpp"
#include "fast/core/tensor_view.hpp"
#include "fast/core/work.hpp"

namespace fast::core {
struct SavedState;  // fast/core/saved_state.hpp
}  // namespace fast::core
namespace fast::runtime {
class RemoteRegion;  // fast/runtime/remote_memory.hpp
}  // namespace fast::runtime

namespace fast::collective {

class WindowName;

struct WindowOptions {
  std::string codec = "none";                   // compress::make_codec spec for f32/f64 data
  std::uint64_t seed = 0;                       // the codecs' random streams (mixed with ranks)
  const core::Layout* layout = nullptr;         // the exposed tensor's blocks; an operation uses those inside its range
  compress::CompressionMeter* meter = nullptr;  // counts every encode of this worker (not owned)
  // The values worker `owner`'s exposed tensor held at construction, known to every worker (e.g.
  // the shared initial model), or an empty span (zeros): the references of state transfers on a
  // range of owner's tensor start from them, at both ends. Not set: zeros.
  std::function<std::span<const float>(int owner)> initial;
  // For a worker that joins a run under way (see Window()): worker `owner`'s tensor length, where
  // lengths differ between workers (easgd's centre, on worker 0 only). Not set: every worker's
  // length is taken to be the joining worker's own. Ignored by the other workers.
  std::function<std::size_t(int owner)> joining_numel;
};

// How one accumulate or get travels: through the window's codec, or as it is.
enum class Wire : std::uint8_t { codec, exact };

class Window {
 public:
  // Collective. Exposes `local` (this worker's tensor; lengths may differ between workers, dtypes
  // too) under `name`, which must be unique among this worker's open windows. All-gathers every
  // worker's length and dtype, so a request out of range or of the wrong dtype is rejected by the
  // requester (InvalidArgument naming window, peer, range and dtype) before anything is sent.
  // A worker that joins a run under way (Communicator::joining) runs no collective: it takes every
  // worker's dtype to be its own and its length from options.joining_numel, or its own when not
  // set, which holds for windows whose shape is the same on every worker (the model windows of the
  // asynchronous strategies, the trainer's batch budget).
  // Every worker passes the same options.codec.
  Window(Communicator& comm, std::string name, core::MutableView local, WindowOptions options = {});
  // Stops the service if close() was not called (without the collective wait: requests that
  // arrive later are never answered and time out at their senders).
  ~Window();
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;

  // peer's tensor[offset, offset + src.numel()) = src. src must stay valid until the Work completes.
  core::Work put(int peer, core::ConstView src, std::size_t offset = 0);
  // dst = peer's tensor[offset, offset + dst.numel()). If version is not null, it receives the
  // version the data was read at. dst and version must stay valid until the Work completes.
  // Wire::exact reads the values as they are, bypassing the codec (a measurement, not training traffic).
  core::Work get(int peer, core::MutableView dst, std::size_t offset = 0, std::uint64_t* version = nullptr,
                 Wire wire = Wire::codec);
  // Blocking: dst = tensor[0, dst.numel()) of the first of `peers`, in order, that is live and
  // answers (one taking a lost rank back: a model to start from); peers lost before or during
  // their read are skipped (runtime::lost_since). Returns the rank read, or -1 when none was.
  // Other failures propagate.
  int get_first_live(std::span<const int> peers, core::MutableView dst, Wire wire = Wire::exact);
  // peer's tensor[offset, ...) += src (f32 or f64).
  core::Work accumulate(int peer, core::ConstView src, std::size_t offset = 0, Wire wire = Wire::codec);
  // peer's tensor[offset, ...) += scale * state (f32 or f64). Without a codec this is accumulate of
  // scale * state; with one, `state` travels as a state (the difference from the link's reference)
  // and the owner adds scale times its reference: push-sum sends its model this way, scaled at the
  // receiver by the mass it carries, so a codec that drops coordinates delays them instead of
  // sending zeros with full mass.
  // If scale_at >= 0, peer's tensor[scale_at] += scale in the same atomic step (push-sum's mass,
  // which must arrive with the model it weighs).
  core::Work accumulate_scaled(int peer, core::ConstView state, double scale, std::size_t offset = 0,
                               std::int64_t scale_at = -1);
  // before = peer's tensor[offset, ...), then peer's tensor[offset, ...) += src, atomically
  // (fetch-and-add). before has src's length and dtype.
  core::Work fetch_accumulate(int peer, core::ConstView src, core::MutableView before, std::size_t offset = 0);
  // before = peer's tensor[offset, ...), then peer's tensor[offset, ...) = (tensor + src) / 2,
  // atomically (f32 or f64; the sum is formed in double and rounded once): the peer's half of an
  // atomic pairwise average (AD-PSGD). before has src's length and dtype.
  core::Work fetch_average(int peer, core::ConstView src, core::MutableView before, std::size_t offset = 0);
  // Difference exchange, atomic at the owner (f32 or f64). With n = state.numel() and
  // B = coefficients.size() (1 <= B <= kMaxExchangeBlocks), peer's tensor[offset, offset + B n) is
  // read as B consecutive blocks b_0 .. b_{B-1} of n elements. Under the owner's window lock:
  //   v = b_0 + ... + b_{summed-1}   (1 <= summed <= B: the owner's value, e.g. a model plus its inbox)
  //   m = state - v                  (formed in double, rounded once to the dtype)
  //   b_k += coefficients[k] m       for every k (in double, rounded once; 0 leaves b_k as it is)
  // and difference = m, the very m the owner applied, so a requester that applies -c m to its own
  // copy conserves the sums exactly (up to rounding) however many exchanges overlap. difference
  // has state's length and dtype; coefficients finite (InvalidArgument otherwise). Counts as one
  // write in the version.
  // With a codec, state travels as a state (the owner uses its reference of the link, as
  // fetch_average does) and v travels back as a state on the same (peer, offset, n) link; both ends
  // then form m = (reference of state) - (reference of v) from references they hold identically, so
  // the owner's blocks and the requester's difference still agree exactly. The reference of v lags
  // the owner's v with a lossy codec (the lag a get has). The operation completes before it returns.
  static constexpr std::size_t kMaxExchangeBlocks = 4;
  core::Work exchange_difference(int peer, core::ConstView state, core::MutableView difference,
                                 std::span<const double> coefficients, std::size_t summed, std::size_t offset = 0);

  struct Shared;  // state shared with the service activity

  // The owner's own access to its exposed tensor: holds the window lock (on one-sided memory: the
  // owner's region, see above) for the guard's lifetime. Constructed and destroyed by the same
  // activity; movable (the moved-from guard holds nothing), not copyable.
  class Local {
   public:
    ~Local();
    Local(Local&& other) noexcept;
    Local& operator=(Local&&) = delete;
    core::MutableView view() const noexcept;
    // Counts an owner-side change in the version (e.g. a parameter server applied an update).
    void bump() noexcept;
    std::uint64_t version() const noexcept;

   private:
    friend class Window;
    explicit Local(std::shared_ptr<Shared> shared);
    std::shared_ptr<Shared> shared_;
    std::unique_lock<runtime::Mutex> lock_;
    std::uint64_t bumps_ = 0;    // on one-sided memory: added to the owner's counter at the end
    bool holds_region_ = false;  // on one-sided memory: this guard holds the owner's region
  };
  Local local();

  const std::string& name() const noexcept { return name_; }
  // Collective: returns once every worker called close(); then stops this worker's service.
  // Idempotent.
  void close();

  // Checkpoints of a window with a codec (nothing without one): the state of every link this
  // worker keeps, for its own requests and for its service's answers (error-feedback residuals,
  // the references of states sent and received, the codecs' streams), under `prefix`.
  // save_links: once no operation is in flight (after close(): every worker's have completed).
  // restore_links: after construction, before anyone's first operation on the window (the
  // caller's later collective orders it), on the window of the same name, codec and layout in the
  // resumed run; the peers restore theirs from the same checkpoint step, so both ends of every
  // link hold the same reference again. IoError naming `source` for a missing or malformed value.
  void save_links(std::string_view prefix, core::SavedState& out) const;
  void restore_links(std::string_view prefix, const core::SavedState& in, std::string_view source);

 private:
  core::Work request(int op, int peer, core::ConstView payload, core::MutableView reply, std::size_t offset,
                     std::uint64_t* version, core::DType dtype, std::size_t count, bool encoded, double scale = 0,
                     std::int64_t scale_at = -1, std::span<const double> coefficients = {}, std::size_t summed = 0);
  // request() on one-sided memory (window_one_sided.cpp): the operation applied by this worker
  // inside owner's region; complete when it returns.
  core::Work one_sided(int op, int peer, core::ConstView payload, core::MutableView reply, std::size_t offset,
                       std::uint64_t* version, std::size_t count, double scale, std::int64_t scale_at,
                       std::span<const double> coefficients, std::size_t summed);
  bool encodes(core::DType dtype) const noexcept;
  void check_range(const char* what, int peer, std::size_t offset, std::size_t count, core::DType dtype) const;
  void stop_service();

  Communicator& comm_;
  std::string name_;
  std::uint32_t id_;
  std::unique_ptr<WindowName> claim_;  // this worker's claim on name_ while open (window_names.hpp)
  std::shared_ptr<Shared> shared_;
  // Every worker's exposed length and dtype: one pair when they all expose the same (the usual
  // case: then a window costs O(1) here, not O(workers), so that a simulated world of n workers
  // holds O(n) of these, not O(n^2)), else a pair per worker, [numel, dtype] by rank.
  std::array<std::int64_t, 2> uniform_shape_{};
  std::vector<std::int64_t> peer_shapes_;
  std::atomic<std::uint32_t> next_seq_{0};
  WindowOptions options_;
  struct Links;  // requester-side codec state per (peer, range)
  std::unique_ptr<Links> links_;
  core::Work service_;                             // the service activity (none on one-sided memory)
  std::unique_ptr<runtime::RemoteRegion> region_;  // one-sided memory, or null: the service
  bool closed_ = false;
};

}  // namespace fast::collective
