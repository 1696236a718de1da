#include "window_arithmetic.hpp"

namespace fast::collective::detail {

namespace {
double value_at(ConstView v, std::size_t i) {
  return v.dtype() == core::DType::f32 ? static_cast<double>(v.as<float>()[i]) : v.as<double>()[i];
}

}  // namespace

// v = b_0 + ... + b_{summed-1} over the blocks of n elements of region, in double, rounded once to
// region's dtype.
core::Buffer block_sum(ConstView region, std::size_t n, std::size_t summed) {
  core::Buffer out(n, region.dtype());
  for (std::size_t i = 0; i < n; ++i) {
    double v = 0;
    for (std::size_t b = 0; b < summed; ++b) v += value_at(region, b * n + i);
    if (region.dtype() == core::DType::f32)
      out.as<float>()[i] = static_cast<float>(v);
    else
      out.as<double>()[i] = v;
  }
  return out;
}

// m = state - (b_0 + ... + b_{summed-1}), formed in double and rounded once into m (region's dtype).
void difference_into(ConstView region, std::size_t n, std::size_t summed, ConstView state, MutableView m) {
  for (std::size_t i = 0; i < n; ++i) {
    double v = value_at(state, i);
    for (std::size_t b = 0; b < summed; ++b) v -= value_at(region, b * n + i);
    if (m.dtype() == core::DType::f32)
      m.as<float>()[i] = static_cast<float>(v);
    else
      m.as<double>()[i] = v;
  }
}

// f32 copy of f32 or f64 data.
std::vector<float> to_f32(ConstView v) {
  std::vector<float> out(v.numel());
  if (v.dtype() == core::DType::f32) {
    const auto x = v.as<float>();
    std::copy(x.begin(), x.end(), out.begin());
  } else {
    const auto x = v.as<double>();
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(x[i]);
  }
  return out;
}

// region += values (f32 or f64 region).
void add_into(MutableView region, std::span<const float> values) {
  if (region.dtype() == core::DType::f32) {
    auto r = region.as<float>();
    for (std::size_t i = 0; i < r.size(); ++i) r[i] += values[i];
  } else {
    auto r = region.as<double>();
    for (std::size_t i = 0; i < r.size(); ++i) r[i] += values[i];
  }
}

// region += scale * values (f32 or f64 each), in double.
void add_scaled(MutableView region, ConstView values, double scale) {
  auto value = [&](std::size_t i) {
    return values.dtype() == core::DType::f32 ? static_cast<double>(values.as<float>()[i]) : values.as<double>()[i];
  };
  if (region.dtype() == core::DType::f32) {
    auto r = region.as<float>();
    for (std::size_t i = 0; i < r.size(); ++i) r[i] = static_cast<float>(r[i] + scale * value(i));
  } else {
    auto r = region.as<double>();
    for (std::size_t i = 0; i < r.size(); ++i) r[i] += scale * value(i);
  }
}

// Block k of region (n elements each) += coefficients[k] * m, in double, rounded once.
void add_to_blocks(MutableView region, std::size_t n, std::span<const double> coefficients, ConstView m) {
  for (std::size_t k = 0; k < coefficients.size(); ++k)
    if (coefficients[k] != 0) add_scaled(region.slice(k * n, n), m, coefficients[k]);
}

// region += values, both f32 or both f64, in their own precision.
void add_same(MutableView region, ConstView values) {
  if (region.dtype() == core::DType::f32) {
    auto r = region.as<float>();
    const auto v = values.as<float>();
    for (std::size_t i = 0; i < r.size(); ++i) r[i] += v[i];
  } else {
    auto r = region.as<double>();
    const auto v = values.as<double>();
    for (std::size_t i = 0; i < r.size(); ++i) r[i] += v[i];
  }
}

// at[0] += value, for a one-element f32 or f64 view (nothing for an empty view).
void add_scalar(MutableView at, double value) {
  if (at.numel() == 0) return;
  if (at.dtype() == core::DType::f32)
    at.as<float>()[0] = static_cast<float>(at.as<float>()[0] + value);
  else
    at.as<double>()[0] += value;
}

void apply_plain(wire::WindowRequest::Op op, MutableView region, ConstView incoming, MutableView reply,
                 std::size_t count, const Exchange& exchange, double scale, MutableView scale_at) {
  using Op = wire::WindowRequest::Op;
  if (op == Op::exchange_difference) {
    difference_into(region, count, exchange.summed, incoming, reply);
    add_to_blocks(region, count, exchange.coefficients, reply);
    return;
  }
  if (op == Op::get || op == Op::fetch_accumulate || op == Op::fetch_average) core::copy(ConstView(region), reply);
  switch (op) {
    case Op::fetch_average:
      if (region.dtype() == core::DType::f32)
        average_into(region.as<float>(), incoming.as<float>());
      else
        average_into(region.as<double>(), incoming.as<double>());
      break;
    case Op::accumulate_scaled:
      add_scaled(region, incoming, scale);
      add_scalar(scale_at, scale);
      break;
    case Op::put: core::copy(incoming, region); break;
    case Op::accumulate:
    case Op::fetch_accumulate: add_same(region, incoming); break;
    default:  // get
      break;
  }
}

bool returns_in_payload(wire::WindowRequest::Op op) {
  return op == wire::WindowRequest::Op::fetch_average || op == wire::WindowRequest::Op::fetch_accumulate;
}

namespace {
template <typename T>
void swap_combine(wire::WindowRequest::Op op, std::span<T> region, std::span<T> payload) {
  if (op == wire::WindowRequest::Op::fetch_average) {
    for (std::size_t i = 0; i < region.size(); ++i) {
      const T before = region[i];  // as average_into, rounded once
      region[i] = static_cast<T>((static_cast<double>(before) + static_cast<double>(payload[i])) * 0.5);
      payload[i] = before;
    }
  } else {
    for (std::size_t i = 0; i < region.size(); ++i) {
      const T before = region[i];  // as add_same, in the region's own precision
      region[i] = before + payload[i];
      payload[i] = before;
    }
  }
}
}  // namespace

void apply_returning_in_payload(wire::WindowRequest::Op op, MutableView region, MutableView payload) {
  if (region.dtype() == core::DType::f32)
    swap_combine(op, region.as<float>(), payload.as<float>());
  else
    swap_combine(op, region.as<double>(), payload.as<double>());
}

}  // namespace fast::collective::detail
