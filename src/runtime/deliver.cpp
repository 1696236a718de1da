#include "deliver.hpp"

#include <cstring>

#include "fast/core/error.hpp"

namespace fast::runtime::detail {

namespace {
template <typename T>
void add_into(T* dst, const T* src, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] += src[i];
}
}  // namespace

void deliver_into(core::ConstView in, core::Buffer& out) {
  out.resize_to_overwrite(in.numel(), in.dtype());
  if (in.bytes() > 0) std::memcpy(out.data(), in.data(), in.bytes());
}

void check_received(core::ConstView in, core::DType dtype, std::size_t numel, int src, int dst, Tag tag) {
  if (in.dtype() != dtype || in.numel() != numel) {
    FAST_THROW(core::InvalidArgument,
               "message from rank {} to rank {} (tag {:#x}): sent {} x {}, receiver expects {} x {}", src, dst, tag,
               in.numel(), core::name_of(in.dtype()), numel, core::name_of(dtype));
  }
}

void deliver_into(core::ConstView in, core::MutableView out, Combine combine, int src, int dst, Tag tag) {
  check_received(in, out.dtype(), out.numel(), src, dst, tag);
  if (combine == Combine::copy) {
    if (in.bytes() > 0) std::memcpy(out.data(), in.data(), in.bytes());
  } else if (in.dtype() == core::DType::f32) {
    add_into(static_cast<float*>(out.data()), static_cast<const float*>(in.data()), in.numel());
  } else if (in.dtype() == core::DType::f64) {
    add_into(static_cast<double*>(out.data()), static_cast<const double*>(in.data()), in.numel());
  } else {
    FAST_THROW(core::InvalidArgument, "recv with Combine::sum from rank {} (tag {:#x}): expected f32 or f64, got {}",
               src, tag, core::name_of(in.dtype()));
  }
}

void rethrow_root_cause(std::span<const std::exception_ptr> errors) {
  std::exception_ptr first_remote;
  for (const std::exception_ptr& e : errors) {
    if (!e) continue;
    try {
      std::rethrow_exception(e);
    } catch (const core::RemoteError&) {
      if (!first_remote) first_remote = e;
    } catch (...) {
      throw;
    }
  }
  if (first_remote) std::rethrow_exception(first_remote);
}

std::exception_ptr own_failure(std::span<const std::exception_ptr> errors) {
  for (const std::exception_ptr& e : errors) {
    if (!e) continue;
    try {
      std::rethrow_exception(e);
    } catch (const core::RemoteError&) {
    } catch (const core::PeerLost&) {
    } catch (const core::TimeoutError&) {
    } catch (const core::NotAdmitted&) {
    } catch (...) {
      return e;
    }
  }
  return nullptr;
}

}  // namespace fast::runtime::detail
