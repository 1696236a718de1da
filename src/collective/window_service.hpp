#pragma once
// Internal to src/collective: what a window's requester (window.cpp) and its owner's service
// (window_service.cpp) share: the request's ops and tags, and the state of the service.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codec_links.hpp"
#include "fast/collective/window.hpp"
#include "fast/core/buffer.hpp"
#include "fast/runtime/context.hpp"
#include "fast/wire/requests.hpp"
#include "window_arithmetic.hpp"

namespace fast::collective {

namespace detail {
// The request header is wire::WindowRequest (include/fast/wire/requests.hpp); these are its ops.
using Request = wire::WindowRequest;
constexpr std::int64_t op_code(Request::Op op) { return static_cast<std::int64_t>(op); }
enum OpCode : std::int64_t {
  kPut = op_code(Request::Op::put),
  kGet = op_code(Request::Op::get),
  kAccumulate = op_code(Request::Op::accumulate),
  kFetchAccumulate = op_code(Request::Op::fetch_accumulate),
  kFetchAverage = op_code(Request::Op::fetch_average),
  kAccumulateScaled = op_code(Request::Op::accumulate_scaled),
  kExchangeDifference = op_code(Request::Op::exchange_difference),
  kStop = op_code(Request::Op::stop)
};
static_assert(Window::kMaxExchangeBlocks == Request::kMaxBlocks);
constexpr std::uint32_t kRequestDetail = 0xFFFFFF;
constexpr std::uint32_t kSeqLimit = 0x400000;       // seq | kSeqLimit: acknowledgements
constexpr std::uint32_t kPayloadDetail = 0x800000;  // seq | kPayloadDetail: payloads
constexpr std::size_t kHeaderLen = Request::kWords;

inline const char* op_name(std::int64_t op) { return wire::name_of(static_cast<Request::Op>(op)); }

inline ConstView i64_view(const std::int64_t* p, std::size_t n) {
  return ConstView(std::span<const std::int64_t>(p, n));
}

inline bool returns_data(std::int64_t op) {
  return op == kGet || op == kFetchAccumulate || op == kFetchAverage || op == kExchangeDifference;
}

}  // namespace detail

// The state a window shares with its owner's service activity (the Window, its Local guards and
// the service hold it).
struct Window::Shared {
  runtime::Context& ctx;
  std::unique_ptr<runtime::Mutex> mutex;
  core::MutableView view;
  std::uint64_t version = 0;  // guarded by mutex
  std::uint32_t id;
  std::string name;
  std::unique_ptr<detail::CodecLinks> codec;  // null without a codec; used by the service activity only

  // Answers (data and acknowledgement) being sent; service only. An answer's data belongs to the
  // runtime once sent (Context::send_owned), an acknowledgement's value is kept here.
  // `keep` is declared before `work`, so a Reply dropped before its send completed (the service
  // ending with an error) lets go of its send, which may still read the memory, before the memory.
  struct Reply {
    std::shared_ptr<const void> keep;
    core::Work work;
    int peer;
    double sent_at;  // Context::now when it was sent (a loss of the peer since: runtime::lost_since)
    bool data;       // an answer's data (a model-sized snapshot for fetch_average), not only its acknowledgement
  };
  std::vector<Reply> replies;
  // On one-sided memory: this worker's region handle (owned by the Window); null: the service.
  runtime::RemoteRegion* region = nullptr;

  runtime::Tag tag(std::uint32_t detail) const { return runtime::make_tag(runtime::TagKind::window, id, detail); }
  // The service activity: answers requests one at a time, in arrival order, until a stop request
  // from this worker itself. Failure: a malformed request or payload, or an error other than the
  // loss of the requester (dropped, runtime::lost_since), ends it with that error.
  void serve();
  // Waits for w: a request (idle: for as long as it takes) or a request's payload (within the
  // runtime's operation time limit, as Work::wait). While answers holding data are under way it
  // waits in slices of about a millisecond and lets go of those that arrived between them
  // (reap(false)), so an answer's memory is held about as long as its transfer, not until the
  // next request or payload (under sim: a simulated worker's step, thousands of them at once;
  // there the runtime lets go of it at the send already, since the requester posts its receive
  // first, and the slices are events of the simulation like any other wait).
  // Rethrows w's error and what reap throws.
  void wait_reaping(const core::Work& w, bool idle);
  // Sends the answer to a request after the lock is released, without waiting for it: the service
  // goes on with the next request while the answer travels (under sim a transfer takes simulated
  // time, and waiting would serialise every requester behind it).
  void answer(int src, std::uint32_t seq, std::shared_ptr<core::Buffer> data, std::int64_t ack);
  // Forgets the answers that arrived (all: waits for every one). An answer to a worker the runtime
  // knows is lost is dropped; any other failure is rethrown.
  void reap(bool all);
  // Applies one request (not stop) and sends its answer. Failure: a request that does not fit the
  // exposed tensor or a malformed payload ends the service with its error (nothing applied);
  // PeerLost when the requester is lost before its payload is in.
  void apply(int src, const wire::WindowRequest& request);
  // As apply, for a request whose data travels through the codec (decoded before the lock: a
  // malformed payload ends the service with its error before any change).
  void apply_encoded(int src, std::int64_t op, std::size_t offset, core::MutableView region, std::uint32_t seq,
                     double scale, core::MutableView scale_at, const detail::Exchange& exchange, std::size_t count);
};

}  // namespace fast::collective
