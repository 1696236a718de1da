#pragma once
// What every runtime backend does the same way (private header): how a message's elements reach
// the receiver, and which error ends a world.

#include <exception>
#include <span>

#include "fast/core/buffer.hpp"
#include "fast/core/tensor_view.hpp"
#include "fast/runtime/context.hpp"
#include "fast/runtime/tag.hpp"

namespace fast::runtime::detail {

// Into a Buffer: out becomes a copy of in (any dtype and length).
void deliver_into(core::ConstView in, core::Buffer& out);
// Into a view: out = in (Combine::copy) or out += in (Combine::sum, f32 or f64). InvalidArgument
// naming the link (src, dst, tag) when dtype or length differ, or for a sum of another dtype; out
// is then unchanged.
void deliver_into(core::ConstView in, core::MutableView out, Combine combine, int src, int dst, Tag tag);
// A message of Context::recv_each_then: InvalidArgument naming the link (src, dst, tag) when its
// dtype or length differ from what the receiver expects.
void check_received(core::ConstView in, core::DType dtype, std::size_t numel, int src, int dst, Tag tag);

// The end of a world: rethrows the first error that is not a RemoteError (the root cause), else
// the first RemoteError (the errors other workers got because of it); returns if none is set.
void rethrow_root_cause(std::span<const std::exception_ptr> errors);

// The first error that a worker's own code raised, not a failure of communication: neither
// RemoteError (abandoned because another worker failed), PeerLost, TimeoutError nor NotAdmitted.
// Null if there is none.
std::exception_ptr own_failure(std::span<const std::exception_ptr> errors);

// The first error among `errors` of type E (or derived from it), e.g. core::TimeoutError (an
// operation past op_timeout) or core::NotAdmitted; null if there is none. Null entries are skipped.
template <typename E>
std::exception_ptr first_error_of(std::span<const std::exception_ptr> errors) {
  for (const std::exception_ptr& e : errors) {
    if (!e) continue;
    try {
      std::rethrow_exception(e);
    } catch (const E&) {
      return e;
    } catch (...) {
    }
  }
  return nullptr;
}

}  // namespace fast::runtime::detail
