// Dataset's readers: the samples' shape, and their float32 features in either stored form.

#include "fast/adapters/torch/dataset.hpp"

#include <cstddef>
#include <string>

#include "decode_codes.hpp"
#include "fast/core/error.hpp"

namespace fast::torch {

namespace {

// "uint8", "float32", else torch's name of the tensor's type.
std::string type_name(const ::torch::Tensor& t) {
  if (t.scalar_type() == ::torch::kUInt8) return "uint8";
  if (t.scalar_type() == ::torch::kFloat32) return "float32";
  return ::c10::toString(t.scalar_type());
}

// float32 features of `codes` (uint8, any shape), in a new tensor. Throws InvalidArgument unless
// the codes are uint8 (and the table as decode_codes wants it: a Dataset is a public aggregate, and
// a reader must not index past a table it was given).
::torch::Tensor decode(const ::torch::Tensor& codes, const ::torch::Tensor& table) {
  FAST_ENFORCE(codes.scalar_type() == ::torch::kUInt8, "dataset: samples with a code table must be uint8 codes, got {}",
               type_name(codes));
  const ::torch::Tensor in = codes.contiguous();
  ::torch::Tensor out = ::torch::empty(in.sizes(), ::torch::kFloat32);
  decode_codes({in.data_ptr<std::uint8_t>(), static_cast<std::size_t>(in.numel())}, table, out.data_ptr<float>());
  return out;
}

// Throws InvalidArgument unless [start, start + count) lies within [0, size) (no overflow: count
// is compared with what is left after start).
void check_range(std::int64_t start, std::int64_t count, std::int64_t size) {
  FAST_ENFORCE(start >= 0 && start <= size && count >= 0 && count <= size - start,
               "dataset: expected samples within [0, {}), got {} from {}", size, count, start);
}

}  // namespace

void decode_codes(std::span<const std::uint8_t> codes, const ::torch::Tensor& table, float* out) {
  FAST_ENFORCE(
      table.scalar_type() == ::torch::kFloat32 && table.dim() == 1 && table.numel() == 256 && table.is_contiguous(),
      "dataset: a code table must be 256 contiguous float32 values, got {} {} values", table.numel(), type_name(table));
  const float* value = table.data_ptr<float>();
  for (std::size_t i = 0; i < codes.size(); ++i) out[i] = value[codes[i]];
}

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
