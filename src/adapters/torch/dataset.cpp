// Dataset's readers: the samples' shape, and their float32 features in either stored form.

#include "fast/adapters/torch/dataset.hpp"

#include <cstddef>

#include "fast/core/error.hpp"

namespace fast::torch {

namespace {

// float32 features of `codes` (uint8, any shape): table[code] for each code, in a new tensor.
::torch::Tensor decode(const ::torch::Tensor& codes, const ::torch::Tensor& table) {
  const ::torch::Tensor in = codes.contiguous();
  ::torch::Tensor out = ::torch::empty(in.sizes(), ::torch::kFloat32);
  const std::uint8_t* code = in.data_ptr<std::uint8_t>();
  const float* value = table.data_ptr<float>();
  float* x = out.data_ptr<float>();
  const auto n = static_cast<std::size_t>(in.numel());
  for (std::size_t i = 0; i < n; ++i) x[i] = value[code[i]];
  return out;
}

// Throws InvalidArgument unless [start, start + count) lies within [0, size).
void check_range(std::int64_t start, std::int64_t count, std::int64_t size) {
  FAST_ENFORCE(start >= 0 && count >= 0 && start + count <= size,
               "dataset: expected samples within [0, {}), got [{}, {})", size, start, start + count);
}

}  // namespace

std::vector<std::int64_t> Dataset::sample_shape() const {
  if (!samples.defined()) return {};
  const auto sizes = samples.sizes();
  return {sizes.begin() + 1, sizes.end()};
}

::torch::Tensor Dataset::features(std::int64_t start, std::int64_t count) const {
  check_range(start, count, size());
  const ::torch::Tensor rows = samples.narrow(0, start, count);
  return code_values.defined() ? decode(rows, code_values) : rows;
}

::torch::Tensor Dataset::features_of(const ::torch::Tensor& rows) const {
  const ::torch::Tensor picked = samples.index_select(0, rows);
  return code_values.defined() ? decode(picked, code_values) : picked;
}

Dataset Dataset::slice(std::int64_t start, std::int64_t count) const {
  check_range(start, count, size());
  return {.samples = samples.narrow(0, start, count),
          .code_values = code_values,
          .labels = labels.narrow(0, start, count),
          .classes = classes};
}

std::uint64_t Dataset::bytes() const {
  std::uint64_t total = 0;
  for (const ::torch::Tensor* t : {&samples, &code_values, &labels})
    if (t->defined()) total += static_cast<std::uint64_t>(t->nbytes());
  return total;
}

}  // namespace fast::torch
