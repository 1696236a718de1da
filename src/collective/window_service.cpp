// The owner's service of a window (window.hpp: "The service"): the activity that answers other
// workers' requests on this worker's exposed tensor.
#include <algorithm>
#include <mutex>
#include <utility>

#include "fast/core/error.hpp"
#include "fast/core/log.hpp"
#include "fast/runtime/remote_memory.hpp"
#include "window_service.hpp"

namespace fast::collective {

using core::ConstView;
using core::MutableView;
using core::Work;
using namespace detail;

namespace {
// The slice of a service's waits while answers holding data are under way (seconds on the
// runtime's clock; wait_reaping): about a model's transfer on a 10 Gbit/s link.
constexpr double kReapSliceSeconds = 1e-3;

// Bytes the owner streams through memory to apply `op` to a region of `bytes` (Context::
// memory_traffic): the copy of the region into the reply (2 x: read + write), then a put's copy
// (2 x) or an accumulate's or average's read-modify-write of the region with the payload (3 x).
double owner_traffic(std::int64_t op, double bytes) {
  const double reply = returns_data(op) ? 2 * bytes : 0;
  if (op == kGet) return reply;
  return reply + (op == kPut ? 2 : 3) * bytes;
}

// Bytes the owner streams through memory for an exchange_difference on blocks of `bytes` each:
// the summed blocks read, m written and copied into the reply, a read-modify-write per block moved.
double exchange_traffic(const Exchange& x, double bytes) {
  double moved = 0;
  for (const double c : x.coefficients) moved += c != 0 ? 3 * bytes : 0;
  return static_cast<double>(x.summed) * bytes + 3 * bytes + moved;
}

}  // namespace

// Requests were validated by their senders against the all-gathered shapes; a request that still
// does not fit is a protocol error and ends the service with it.
void Window::Shared::serve() {
  for (;;) {
    core::Buffer header;
    int src = -1;
    // Idle between requests is normal (a failed world surfaces as RemoteError).
    wait_reaping(ctx.recv_any(tag(kRequestDetail), header, src), true);
    FAST_ENFORCE(header.dtype() == core::DType::i64 && header.numel() == kHeaderLen,
                 "window '{}': malformed request from worker {} ({} x {})", name, src, header.numel(),
                 core::name_of(header.dtype()));
    const Request request = Request::from_words(std::as_const(header).as<std::int64_t>());
    if (request.op == Request::Op::stop) {
      reap(true);
      return;
    }
    const double received = ctx.now();
    try {
      apply(src, request);
    } catch (const core::PeerLost& e) {
      // The requester was lost during its request (it may have rejoined since, a new process that
      // never waits for this answer): serve the others. (Its payload, if not arrived, was not applied.)
      if (!runtime::lost_since(ctx, src, received)) throw;
      core::log(core::LogLevel::debug, "window '{}': request of lost worker {} dropped: {}", name, src, e.what());
    }
    reap(false);
  }
}

void Window::Shared::answer(int src, std::uint32_t seq, std::shared_ptr<core::Buffer> data, std::int64_t ack) {
  const double now = ctx.now();
  // The data goes to the runtime, which lets go of it once delivered (under sim at once: the
  // requester posted its receive before its request); the reply keeps only the send's Work.
  if (data) replies.push_back({nullptr, ctx.send_owned(src, tag(seq), std::move(data)), src, now, true});
  auto value = std::make_shared<std::int64_t>(ack);
  replies.push_back({value, ctx.send(src, tag(seq | kSeqLimit), i64_view(value.get(), 1)), src, now, false});
}

void Window::Shared::wait_reaping(const Work& w, bool idle) {
  const auto holds_data = [this] {
    return std::any_of(replies.begin(), replies.end(), [](const Reply& r) { return r.data; });
  };
  while (holds_data()) {  // no answer is added meanwhile: only apply adds them
    if (w.wait(kReapSliceSeconds)) return;
    reap(false);
  }
  if (!idle) {
    w.wait();
    return;
  }
  while (!w.wait(1.0)) {
  }
}

void Window::Shared::reap(bool all) {
  std::vector<Reply> pending;
  for (Reply& r : replies) {
    if (!all && !r.work.is_completed()) {
      pending.push_back(std::move(r));
      continue;
    }
    try {
      r.work.wait();
    } catch (const core::PeerLost& e) {
      if (!runtime::lost_since(ctx, r.peer, r.sent_at)) throw;
      core::log(core::LogLevel::debug, "window '{}': answer to lost worker {} dropped: {}", name, r.peer, e.what());
    }
  }
  replies = std::move(pending);
}

void Window::Shared::apply(int src, const wire::WindowRequest& r) {
  const std::int64_t op = static_cast<std::int64_t>(r.op);
  const auto offset = static_cast<std::size_t>(r.offset);
  const auto count = static_cast<std::size_t>(r.count);
  const std::uint32_t seq = r.seq;
  Exchange exchange;
  std::size_t extent = count;       // elements of the tensor the request touches
  if (op == kExchangeDifference) {  // blocks, summed and coefficients were validated by from_words
    exchange.summed = static_cast<std::size_t>(r.summed);
    exchange.coefficients = r.coefficients;
    extent = count * exchange.coefficients.size();
  }
  FAST_ENFORCE(op != kStop && offset <= view.numel() && extent <= view.numel() - offset && extent >= count &&
                   r.dtype == view.dtype(),
               "window '{}': request {} from worker {} for [{}, {}) does not fit the exposed {} x {}", name,
               op_name(op), src, offset, offset + extent, view.numel(), core::name_of(view.dtype()));
  const MutableView region = view.slice(offset, extent);
  const double scale = r.scale;
  FAST_ENFORCE(r.scale_at < static_cast<std::int64_t>(view.numel()),
               "window '{}': request {} from worker {}: scale_at {} outside the exposed {} elements", name, op_name(op),
               src, r.scale_at, view.numel());
  const MutableView scale_at = r.scale_at >= 0 ? view.slice(static_cast<std::size_t>(r.scale_at), 1) : MutableView();
  if (r.encoded) {
    apply_encoded(src, op, offset, region, seq, scale, scale_at, exchange, count);
    return;
  }
  // Payloads are received before the lock and answers sent after it, so the owner's Local guard
  // (and the other requesters) wait only for the arithmetic, never for a transfer. The payload's
  // buffer is sized when the payload is delivered, not while it travels (a service of a simulated
  // worker waits for its transfer as long as the worker's own step: thousands of them would each
  // hold an empty model-sized buffer).
  core::Buffer incoming = core::Buffer::pooled(view.dtype());
  if (op != kGet) {
    wait_reaping(ctx.recv(src, tag(seq | kPayloadDetail), incoming), false);
    FAST_ENFORCE(incoming.numel() == count && incoming.dtype() == view.dtype(),
                 "window '{}': request {} from worker {}: payload of {} x {}, expected {} x {}", name, op_name(op), src,
                 incoming.numel(), core::name_of(incoming.dtype()), count, core::name_of(view.dtype()));
  }
  // fetch_average and fetch_accumulate answer with the region before, formed in the payload's
  // memory as it is combined (one model-sized buffer per request in flight, not two).
  const bool in_payload = detail::returns_in_payload(r.op);
  // A reply that is not the payload (a get's, an exchange's) is written whole by the arithmetic,
  // from the pool of page runs like the payload: one worker's snapshot reads every replica in turn,
  // and from the heap each reply's hole, split by other workers' small blocks before the next
  // reply, grew the heap by up to a model per worker read (adpsgd at 1,024 workers: 0.7 GB in
  // some runs).
  std::shared_ptr<core::Buffer> reply;
  if (returns_data(op) && !in_payload) {
    reply = std::make_shared<core::Buffer>(core::Buffer::pooled(view.dtype()));
    reply->resize_to_overwrite(count, view.dtype());
  }
  std::int64_t ack = 0;
  {
    std::lock_guard<runtime::Mutex> lock(*mutex);
    if (in_payload)
      detail::apply_returning_in_payload(r.op, region, incoming.view());
    else
      apply_plain(r.op, region, std::as_const(incoming).view(), reply ? reply->view() : MutableView(), count, exchange,
                  scale, scale_at);
    if (op != kGet) ++version;
    ack = static_cast<std::int64_t>(version);
    ctx.memory_traffic(op == kExchangeDifference  // under the lock, as the work
                           ? exchange_traffic(exchange, static_cast<double>(reply->bytes()))
                           : owner_traffic(op, static_cast<double>(region.bytes())));
  }
  if (in_payload) reply = std::make_shared<core::Buffer>(std::move(incoming));
  answer(src, seq, std::move(reply), ack);
}

// As apply, for a request whose data travels through the codec. The payload is received and
// decoded before the lock (a malformed one ends the service with its error before any change).
void Window::Shared::apply_encoded(int src, std::int64_t op, std::size_t offset, MutableView region, std::uint32_t seq,
                                   double scale, MutableView scale_at, const Exchange& exchange, std::size_t count) {
  FAST_ENFORCE(codec != nullptr, "window '{}': worker {} sent an encoded request, but this window has no codec", name,
               src);
  const CodecLinks::Key key{src, offset, count};  // count: region.numel(), or an exchange's block
  std::vector<float> increment;
  std::span<const float> state;
  if (op != kGet) {
    core::Buffer payload;
    wait_reaping(ctx.recv(src, tag(seq | kPayloadDetail), payload), false);
    if (op == kAccumulate || op == kFetchAccumulate) {
      increment.resize(region.numel());
      codec->decoder->decode(payload.view(), std::span<float>(increment));
    } else {
      state = codec->decode_state(key, codec->rank, payload.view());
    }
  }
  std::shared_ptr<core::Buffer> reply;
  std::int64_t ack = 0;
  {
    std::lock_guard<runtime::Mutex> lock(*mutex);
    if (op == kExchangeDifference) {
      // v travels back as a state; m is formed from the two references, which the requester holds
      // identically (its sent state's, and its received v's), so both ends use the same m.
      const core::Buffer v = block_sum(region, count, exchange.summed);
      reply = std::make_shared<core::Buffer>();
      codec->encode_state(key, codec->rank, v.view(), *reply);
      const std::span<const float> v_ref = codec->sent(key);
      std::vector<float> m(count);
      for (std::size_t i = 0; i < count; ++i) m[i] = state[i] - v_ref[i];
      add_to_blocks(region, count, exchange.coefficients, ConstView(std::span<const float>(m)));
    } else {
      if (returns_data(op)) {
        reply = std::make_shared<core::Buffer>();
        codec->encode_state(key, codec->rank, region, *reply);
      }
      if (op == kPut) {
        compress::copy_into(state, region);
      } else if (op == kFetchAverage) {
        if (region.dtype() == core::DType::f32) {
          average_into(region.as<float>(), state);
        } else {
          auto r = region.as<double>();
          for (std::size_t i = 0; i < r.size(); ++i) r[i] = (r[i] + static_cast<double>(state[i])) * 0.5;
        }
      } else if (op == kAccumulateScaled) {
        add_scaled(region, ConstView(state), scale);
        add_scalar(scale_at, scale);
      } else if (op != kGet) {
        add_into(region, increment);
      }
    }
    if (op != kGet) ++version;
    ack = static_cast<std::int64_t>(version);
    // The arithmetic on the region as in apply (the codec's encoding and decoding are not charged).
    ctx.memory_traffic(
        op == kExchangeDifference
            ? exchange_traffic(exchange, static_cast<double>(region.bytes() / exchange.coefficients.size()))
            : owner_traffic(op, static_cast<double>(region.bytes())));
  }
  answer(src, seq, std::move(reply), ack);
}

}  // namespace fast::collective
