#include "fast/collective/window.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <map>
#include <tuple>
#include <utility>

#include "fast/compress/codec.hpp"
#include "fast/compress/delta_link.hpp"
#include "fast/compress/error_feedback.hpp"
#include "fast/wire/requests.hpp"
#include "window_names.hpp"

#include "codec_links.hpp"
#include "fast/core/buffer.hpp"
#include "fast/core/error.hpp"
#include "fast/core/log.hpp"
#include "fast/core/random.hpp"
#include "fast/runtime/remote_memory.hpp"
#include "window_service.hpp"

namespace fast::collective {

using core::ConstView;
using core::MutableView;
using core::Work;
using runtime::Tag;
using runtime::TagKind;

using namespace detail;  // the element-wise arithmetic of the service (window_arithmetic.hpp)

namespace {
std::uint32_t fnv1a(const std::string& s) {
  std::uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}
}  // namespace

struct Window::Links {
  std::unique_ptr<runtime::Mutex> mutex;
  CodecLinks codec;
};

// On one-sided memory the guard takes the owner's own region, and the version lives in the region's
// counter: read when the guard starts, the guard's bumps added when it ends.
Window::Local::Local(std::shared_ptr<Shared> shared) : shared_(std::move(shared)), lock_(*shared_->mutex) {
  if (shared_->region == nullptr) return;
  shared_->region->acquire(shared_->ctx.rank());
  try {
    shared_->version = shared_->region->add_to_counter(shared_->ctx.rank(), 0);
  } catch (...) {
    shared_->region->release(shared_->ctx.rank());
    throw;
  }
  holds_region_ = true;
}

Window::Local::Local(Local&& other) noexcept
    : shared_(std::move(other.shared_)),
      lock_(std::move(other.lock_)),
      bumps_(std::exchange(other.bumps_, 0)),
      holds_region_(std::exchange(other.holds_region_, false)) {}

Window::Local::~Local() {
  if (!holds_region_) return;
  try {
    if (bumps_ > 0) shared_->region->add_to_counter(shared_->ctx.rank(), bumps_);
    shared_->region->release(shared_->ctx.rank());
  } catch (const std::exception& e) {
    // MPI is fail-stop: an error here means the run is ending; the next operation reports it.
    core::log(core::LogLevel::warn, "window '{}': the owner's guard ended with: {}", shared_->name, e.what());
  }
}

MutableView Window::Local::view() const noexcept { return shared_->view; }
void Window::Local::bump() noexcept {
  ++shared_->version;
  ++bumps_;
}
std::uint64_t Window::Local::version() const noexcept { return shared_->version; }

Window::Window(Communicator& comm, std::string name, MutableView local, WindowOptions options)
    : comm_(comm),
      name_(std::move(name)),
      id_(fnv1a(name_)),
      claim_(std::make_unique<WindowName>(comm.context(), name_, id_)),
      options_(std::move(options)) {
  runtime::Context& ctx = comm.context();
  const int n = comm.size();
  FAST_ENFORCE_AS(core::InvalidUsage, comm.group_size() == n,
                  "window '{}': opened after workers were lost; windows span the whole world", name_);
  // Every worker's shape, so requesters validate before sending.
  const std::array<std::int64_t, 2> mine{static_cast<std::int64_t>(local.numel()),
                                         static_cast<std::int64_t>(local.dtype())};
  std::vector<std::int64_t> all(2 * static_cast<std::size_t>(n));
  if (comm.joining()) {
    // Joining a run under way: every worker's shape is taken to be this one's, or its length
    // from joining_numel (see the header).
    comm.skip_collective();
    for (int p = 0; p < n; ++p) {
      std::copy(mine.begin(), mine.end(), all.begin() + 2 * p);
      if (options_.joining_numel)
        all[2 * static_cast<std::size_t>(p)] = static_cast<std::int64_t>(options_.joining_numel(p));
    }
  } else {
    comm.allgather(i64_view(mine.data(), 2), MutableView(std::span<std::int64_t>(all)));
  }
  uniform_shape_ = {all[0], all[1]};
  for (std::size_t i = 2; i < all.size(); ++i)
    if (all[i] != uniform_shape_[i % 2]) {  // shapes differ: one pair per worker
      peer_shapes_ = std::move(all);
      break;
    }
  std::unique_ptr<CodecLinks> owner_links;
  if (!compress::make_codec(options_.codec)->lossless()) {
    owner_links = std::make_unique<CodecLinks>(options_, comm.rank());
    links_ = std::unique_ptr<Links>(new Links{ctx.make_mutex(), CodecLinks(options_, comm.rank())});
  }
  shared_ = std::shared_ptr<Shared>(new Shared{ctx, ctx.make_mutex(), local, 0, id_, name_, std::move(owner_links)});
  // One-sided memory where the runtime offers it, for windows without a codec (the same answer on
  // every worker: the same runtime and codec; a joining worker never finds it, mpi has none).
  runtime::RemoteMemory* remote = ctx.remote_memory();
  if (remote != nullptr && links_ == nullptr && !comm.joining()) region_ = remote->expose(local.data(), local.bytes());
  shared_->region = region_.get();
  if (region_ == nullptr) service_ = ctx.spawn("window " + name_, [shared = shared_] { shared->serve(); });
}

Window::~Window() {
  if (closed_) return;
  if (region_ != nullptr) {  // an unclosed region frees nothing collective; later guards take the lock alone
    std::lock_guard<runtime::Mutex> lock(*shared_->mutex);
    shared_->region = nullptr;
    return;
  }
  try {
    stop_service();
  } catch (const std::exception& e) {
    core::log(core::LogLevel::debug, "window '{}': service stopped with: {}", name_, e.what());
  }
}

void Window::check_range(const char* what, int peer, std::size_t offset, std::size_t count, core::DType dtype) const {
  FAST_ENFORCE(!closed_, "window '{}': {} after close()", name_, what);
  runtime::check_peer(comm_.context(), peer, what);
  const std::int64_t* shape =
      peer_shapes_.empty() ? uniform_shape_.data() : &peer_shapes_[2 * static_cast<std::size_t>(peer)];
  const auto numel = static_cast<std::size_t>(shape[0]);
  const auto peer_dtype = static_cast<core::DType>(shape[1]);
  if (offset > numel || count > numel - offset)
    FAST_THROW(core::InvalidArgument, "window '{}': {} of [{}, {}) on worker {}, which exposes {} elements", name_,
               what, offset, offset + count, peer, numel);
  if (dtype != peer_dtype)
    FAST_THROW(core::InvalidArgument, "window '{}': {} with {} data on worker {}, which exposes {}", name_, what,
               core::name_of(dtype), peer, core::name_of(peer_dtype));
}

bool Window::encodes(core::DType dtype) const noexcept {
  return links_ != nullptr && (dtype == core::DType::f32 || dtype == core::DType::f64);
}

Work Window::request(int op, int peer, ConstView payload, MutableView reply, std::size_t offset, std::uint64_t* version,
                     core::DType dtype, std::size_t count, bool encoded, double scale, std::int64_t scale_at,
                     std::span<const double> coefficients, std::size_t summed) {
  check_range(op_name(op), peer, offset, coefficients.empty() ? count : count * coefficients.size(), dtype);
  if ((op == kAccumulate || op == kFetchAccumulate || op == kFetchAverage || op == kAccumulateScaled ||
       op == kExchangeDifference) &&
      dtype != core::DType::f32 && dtype != core::DType::f64)
    FAST_THROW(core::InvalidArgument, "window '{}': {} needs f32 or f64 data, got {}", name_, op_name(op),
               core::name_of(dtype));
  if (region_ != nullptr)
    return one_sided(op, peer, payload, reply, offset, version, count, scale, scale_at, coefficients, summed);
  runtime::Context& ctx = comm_.context();
  const std::uint32_t seq = next_seq_.fetch_add(1, std::memory_order_relaxed) % kSeqLimit;
  struct Pending {
    std::array<std::int64_t, kHeaderLen> header;  // Request::to_words()
    std::int64_t ack = 0;
    core::Buffer payload;     // encoded requests: the codec's payload
    core::Buffer reply;       // encoded requests: the codec's reply
    std::vector<float> sent;  // encoded exchange_difference: the reference of the state sent
  };
  auto pending = std::make_shared<Pending>();
  pending->header = Request{.op = static_cast<Request::Op>(op),
                            .offset = offset,
                            .count = count,
                            .dtype = dtype,
                            .seq = seq,
                            .encoded = encoded,
                            .scale = scale,
                            .scale_at = scale_at,
                            .summed = summed,
                            .coefficients = {coefficients.begin(), coefficients.end()}}
                        .to_words();
  const CodecLinks::Key key{peer, offset, count};
  if (encoded && op != kGet) {
    std::lock_guard<runtime::Mutex> lock(*links_->mutex);
    if (op == kAccumulate || op == kFetchAccumulate)
      links_->codec.encode_increment(key, payload, pending->payload);
    else
      links_->codec.encode_state(key, peer, payload, pending->payload);
    if (op == kExchangeDifference) {
      const std::span<const float> sent = links_->codec.sent(key);
      pending->sent.assign(sent.begin(), sent.end());
    }
  }
  auto tag = [&](std::uint32_t detail) { return runtime::make_tag(TagKind::window, id_, detail); };
  std::vector<Work> parts;
  // Receives first, so the owner's answers never wait for this worker.
  if (returns_data(op)) {
    if (encoded)
      parts.push_back(ctx.recv(peer, tag(seq), pending->reply));
    else
      parts.push_back(ctx.recv(peer, tag(seq), reply));
  }
  auto* ack_target = version != nullptr ? reinterpret_cast<std::int64_t*>(version) : &pending->ack;
  parts.push_back(ctx.recv(peer, tag(seq | kSeqLimit), MutableView(ack_target, 1, core::DType::i64)));
  parts.push_back(ctx.send(peer, tag(kRequestDetail), i64_view(pending->header.data(), kHeaderLen)));
  if (op != kGet)
    parts.push_back(ctx.send(peer, tag(seq | kPayloadDetail), encoded ? pending->payload.view() : payload));
  Work all = Work::all(std::move(parts), pending);
  if (!encoded || !returns_data(op)) return all;
  // The reply is decoded on arrival, here: the operation completes before it returns.
  all.wait();
  std::lock_guard<runtime::Mutex> lock(*links_->mutex);
  const std::span<const float> received = links_->codec.decode_state(key, peer, pending->reply.view());
  if (op == kExchangeDifference) {  // m = (reference of the state sent) - (reference of the owner's v), as the owner
    std::vector<float> m(count);
    for (std::size_t i = 0; i < count; ++i) m[i] = pending->sent[i] - received[i];
    compress::copy_into(m, reply);
  } else {
    compress::copy_into(received, reply);
  }
  return Work();
}

Work Window::put(int peer, ConstView src, std::size_t offset) {
  return request(kPut, peer, src, {}, offset, nullptr, src.dtype(), src.numel(), encodes(src.dtype()));
}

Work Window::get(int peer, MutableView dst, std::size_t offset, std::uint64_t* version, Wire wire) {
  return request(kGet, peer, {}, dst, offset, version, dst.dtype(), dst.numel(),
                 wire == Wire::codec && encodes(dst.dtype()));
}

Work Window::accumulate(int peer, ConstView src, std::size_t offset, Wire wire) {
  return request(kAccumulate, peer, src, {}, offset, nullptr, src.dtype(), src.numel(),
                 wire == Wire::codec && encodes(src.dtype()));
}

Work Window::accumulate_scaled(int peer, ConstView state, double scale, std::size_t offset, std::int64_t scale_at) {
  FAST_ENFORCE(std::isfinite(scale), "window '{}': accumulate_scaled with a non-finite scale {}", name_, scale);
  if (scale_at >= 0)
    check_range("accumulate_scaled (scale_at)", peer, static_cast<std::size_t>(scale_at), 1, state.dtype());
  return request(kAccumulateScaled, peer, state, {}, offset, nullptr, state.dtype(), state.numel(),
                 encodes(state.dtype()), scale, scale_at);
}

Work Window::fetch_accumulate(int peer, ConstView src, MutableView before, std::size_t offset) {
  FAST_ENFORCE(before.dtype() == src.dtype() && before.numel() == src.numel(),
               "window '{}': fetch_accumulate's result is {} x {}, its input {} x {}", name_, before.numel(),
               core::name_of(before.dtype()), src.numel(), core::name_of(src.dtype()));
  return request(kFetchAccumulate, peer, src, before, offset, nullptr, src.dtype(), src.numel(), encodes(src.dtype()));
}

Work Window::fetch_average(int peer, ConstView src, MutableView before, std::size_t offset) {
  FAST_ENFORCE(before.dtype() == src.dtype() && before.numel() == src.numel(),
               "window '{}': fetch_average's result is {} x {}, its input {} x {}", name_, before.numel(),
               core::name_of(before.dtype()), src.numel(), core::name_of(src.dtype()));
  return request(kFetchAverage, peer, src, before, offset, nullptr, src.dtype(), src.numel(), encodes(src.dtype()));
}

Work Window::exchange_difference(int peer, ConstView state, MutableView difference,
                                 std::span<const double> coefficients, std::size_t summed, std::size_t offset) {
  FAST_ENFORCE(difference.dtype() == state.dtype() && difference.numel() == state.numel(),
               "window '{}': exchange_difference's result is {} x {}, its state {} x {}", name_, difference.numel(),
               core::name_of(difference.dtype()), state.numel(), core::name_of(state.dtype()));
  FAST_ENFORCE(!coefficients.empty() && coefficients.size() <= kMaxExchangeBlocks,
               "window '{}': exchange_difference with {} coefficients (blocks); expected 1 to {}", name_,
               coefficients.size(), kMaxExchangeBlocks);
  FAST_ENFORCE(summed >= 1 && summed <= coefficients.size(),
               "window '{}': exchange_difference sums {} blocks of {}; expected 1 to {}", name_, summed,
               coefficients.size(), coefficients.size());
  for (const double c : coefficients)
    FAST_ENFORCE(std::isfinite(c), "window '{}': exchange_difference with a non-finite coefficient {}", name_, c);
  FAST_ENFORCE(state.numel() > 0, "window '{}': exchange_difference of an empty state", name_);
  return request(kExchangeDifference, peer, state, difference, offset, nullptr, state.dtype(), state.numel(),
                 encodes(state.dtype()), 0, -1, coefficients, summed);
}

Window::Local Window::local() { return Local(shared_); }

void Window::stop_service() {
  closed_ = true;
  const std::array<std::int64_t, kHeaderLen> stop = Request{.op = Request::Op::stop}.to_words();
  runtime::Context& ctx = comm_.context();
  std::exception_ptr error;
  Work sent;  // waited for after the service: one that ended with an error never receives it
  try {
    sent = ctx.send(ctx.rank(), shared_->tag(kRequestDetail), i64_view(stop.data(), kHeaderLen));
  } catch (const std::exception&) {
    // The world failed or this worker was lost: the service ends on its own (its waits throw).
    error = std::current_exception();
  }
  service_.wait();  // always: the service writes into the exposed memory until it ends
  if (error) std::rethrow_exception(error);
  sent.wait();
}

void Window::close() {
  if (closed_) return;
  comm_.barrier();  // every worker has finished its requests (each waits for its own)
  if (region_ != nullptr) {
    // Nobody reaches the tensor any more: the owner's guards go on with the lock alone, and the
    // version the region counted stays readable through them.
    closed_ = true;
    std::lock_guard<runtime::Mutex> lock(*shared_->mutex);  // no guard of the owner is open
    shared_->version = region_->add_to_counter(comm_.rank(), 0);
    shared_->region = nullptr;
    region_->close();
    claim_->release();
    return;
  }
  stop_service();
  claim_->release();
}

int Window::get_first_live(std::span<const int> peers, core::MutableView dst, Wire wire) {
  runtime::Context& ctx = comm_.context();
  for (const int peer : peers) {
    if (!ctx.alive(peer)) continue;
    const double t0 = ctx.now();
    try {
      get(peer, dst, 0, nullptr, wire).wait();
      return peer;
    } catch (const core::PeerLost&) {
      if (!runtime::lost_since(ctx, peer, t0)) throw;  // else lost meanwhile: the next one
    }
  }
  return -1;
}

void Window::save_links(std::string_view prefix, core::SavedState& out) const {
  if (links_ == nullptr) return;
  {
    std::lock_guard<runtime::Mutex> lock(*links_->mutex);
    links_->codec.save(fmt::format("{}.requests", prefix), out);
  }
  if (shared_->codec) shared_->codec->save(fmt::format("{}.service", prefix), out);
}

void Window::restore_links(std::string_view prefix, const core::SavedState& in, std::string_view source) {
  if (links_ == nullptr) return;
  std::lock_guard<runtime::Mutex> lock(*links_->mutex);
  links_->codec.restore(fmt::format("{}.requests", prefix), in, source);
  if (shared_->codec) shared_->codec->restore(fmt::format("{}.service", prefix), in, source);
}

}  // namespace fast::collective
