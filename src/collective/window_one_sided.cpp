// Window operations on one-sided memory (fast/runtime/remote_memory.hpp; window.hpp says when a
// window uses it): the requester holds the owner's region alone (a get: shared with other gets
// only), reads the elements the operation touches, applies the service's arithmetic (apply_plain, bit for bit), writes
// them back, counts the version and releases the region. Every operation is complete when it returns.
#include <algorithm>
#include <utility>

#include "fast/collective/window.hpp"
#include "fast/core/buffer.hpp"
#include "fast/runtime/remote_memory.hpp"
#include "fast/wire/requests.hpp"
#include "window_arithmetic.hpp"

namespace fast::collective {

using core::ConstView;
using core::MutableView;
using Op = wire::WindowRequest::Op;

namespace {

// Holds owner's region for a scope; release() ends it early and reports its error.
class Held {
 public:
  Held(runtime::RemoteRegion& region, int owner, runtime::RemoteRegion::Access access)
      : region_(region), owner_(owner) {
    region_.acquire(owner_, access);
  }
  ~Held() {
    if (!held_) return;
    try {
      region_.release(owner_);
    } catch (...) {  // an error is unwinding already; it is the one reported
    }
  }
  Held(const Held&) = delete;
  Held& operator=(const Held&) = delete;
  void release() {
    held_ = false;
    region_.release(owner_);
  }

 private:
  runtime::RemoteRegion& region_;
  int owner_;
  bool held_ = true;
};

// The operation's effect on `copy`, a copy of the owner's elements [offset, offset + copy.numel()),
// and its extra element scale_at (accumulate_scaled), read and written here when it lies outside.
void apply_to_copy(runtime::RemoteRegion& region, int owner, Op op, MutableView copy, ConstView payload,
                   MutableView reply, std::size_t offset, std::size_t count, const detail::Exchange& exchange,
                   double scale, std::int64_t scale_at) {
  const std::size_t width = core::size_of(copy.dtype());
  if (scale_at < 0) {
    detail::apply_plain(op, copy, payload, reply, count, exchange, scale, MutableView());
    return;
  }
  const auto at = static_cast<std::size_t>(scale_at);
  if (at >= offset && at < offset + copy.numel()) {
    detail::apply_plain(op, copy, payload, reply, count, exchange, scale, copy.slice(at - offset, 1));
    return;
  }
  core::Buffer extra(1, copy.dtype());
  region.read(owner, at * width, extra.view().data(), width);
  detail::apply_plain(op, copy, payload, reply, count, exchange, scale, extra.view());
  region.write(owner, at * width, std::as_const(extra).view().data(), width);
}

}  // namespace

core::Work Window::one_sided(int op_code, int peer, ConstView payload, MutableView reply, std::size_t offset,
                             std::uint64_t* version, std::size_t count, double scale, std::int64_t scale_at,
                             std::span<const double> coefficients, std::size_t summed) {
  const auto op = static_cast<Op>(op_code);
  runtime::RemoteRegion& region = *region_;
  const core::DType dtype = op == Op::get ? reply.dtype() : payload.dtype();
  const std::size_t width = core::size_of(dtype);
  const std::size_t extent = coefficients.empty() ? count : count * coefficients.size();
  const std::size_t at = offset * width;
  // A get only reads: it shares the owner's region with other gets (never with a writer).
  using Access = runtime::RemoteRegion::Access;
  Held held(region, peer, op == Op::get ? Access::shared : Access::exclusive);
  if (op == Op::get) {
    region.read(peer, at, reply.data(), count * width);
    const std::uint64_t read_at = region.add_to_counter(peer, 0);
    held.release();
    if (version != nullptr) *version = read_at;
    return {};
  }
  if (op == Op::put) {
    region.write(peer, at, payload.data(), count * width);
  } else {
    core::Buffer copy(extent, dtype);
    region.read(peer, at, copy.view().data(), extent * width);
    const detail::Exchange exchange{summed, {coefficients.begin(), coefficients.end()}};
    apply_to_copy(region, peer, op, copy.view(), payload, reply, offset, count, exchange, scale, scale_at);
    region.write(peer, at, std::as_const(copy).view().data(), extent * width);
    region.add_to_counter(peer, 1);
    held.release();  // the writes complete here, while copy is alive
    return {};
  }
  region.add_to_counter(peer, 1);
  held.release();
  return {};
}

}  // namespace fast::collective
