#include "resnet.hpp"

#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/pooling.h>

namespace fast::torch {

namespace nn = ::torch::nn;

namespace {

constexpr std::int64_t kGroups = 8;

nn::Conv2d conv(std::int64_t in, std::int64_t out, std::int64_t kernel, std::int64_t stride) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, kernel).stride(stride).padding(kernel / 2).bias(false));
}

nn::GroupNorm norm(std::int64_t channels) { return nn::GroupNorm(nn::GroupNormOptions(kGroups, channels)); }

// Output size of a convolution with padding kernel/2: floor((n + 2*(k/2) - k) / s) + 1.
std::int64_t out_size(std::int64_t n, std::int64_t kernel, std::int64_t stride) {
  return (n + 2 * (kernel / 2) - kernel) / stride + 1;
}

// Multiply-accumulates of a convolution on one sample, and the output size it leaves in h, w.
double conv_macs(std::int64_t in, std::int64_t out, std::int64_t kernel, std::int64_t stride, std::int64_t& h,
                 std::int64_t& w) {
  h = out_size(h, kernel, stride);
  w = out_size(w, kernel, stride);
  return static_cast<double>(h * w * out * in * kernel * kernel);
}

}  // namespace

ResidualBlockImpl::ResidualBlockImpl(std::int64_t in, std::int64_t out, std::int64_t stride)
    : in_(in), out_(out), stride_(stride) {
  conv1_ = register_module("conv1", conv(in, out, 3, stride));
  norm1_ = register_module("norm1", norm(out));
  conv2_ = register_module("conv2", conv(out, out, 3, 1));
  norm2_ = register_module("norm2", norm(out));
  if (stride != 1 || in != out) {
    shortcut_ = register_module("shortcut", conv(in, out, 1, stride));
    shortcut_norm_ = register_module("shortcut_norm", norm(out));
  }
}

::torch::Tensor ResidualBlockImpl::forward(const ::torch::Tensor& x) {
  ::torch::Tensor y = ::torch::relu(norm1_->forward(conv1_->forward(x)));
  y = norm2_->forward(conv2_->forward(y));
  const ::torch::Tensor skip = shortcut_ ? shortcut_norm_->forward(shortcut_->forward(x)) : x;
  return ::torch::relu(y + skip);
}

double ResidualBlockImpl::macs(std::int64_t& h, std::int64_t& w) const {
  std::int64_t sh = h, sw = w;
  double total = conv_macs(in_, out_, 3, stride_, h, w);
  total += conv_macs(out_, out_, 3, 1, h, w);
  if (shortcut_) total += conv_macs(in_, out_, 1, stride_, sh, sw);
  return total;
}

ResNetImpl::ResNetImpl(std::int64_t channels, std::int64_t classes) : channels_(channels), classes_(classes) {
  stem_ = register_module("stem", conv(channels, 32, 3, 1));
  stem_norm_ = register_module("stem_norm", norm(32));
  blocks_ = register_module("blocks", nn::ModuleList());
  // (in, out, stride) of every block, stage by stage.
  const std::int64_t plan[][3] = {{32, 32, 1},  {32, 32, 1},   {32, 64, 2},  {64, 64, 1},
                                  {64, 128, 2}, {128, 128, 1}, {128, 256, 2}};
  for (const auto& b : plan) blocks_->push_back(ResidualBlock(b[0], b[1], b[2]));
  head_ = register_module("head", nn::Linear(256, classes));
}

::torch::Tensor ResNetImpl::forward(const ::torch::Tensor& x) {
  ::torch::Tensor y = ::torch::relu(stem_norm_->forward(stem_->forward(x)));
  for (const auto& block : *blocks_) y = block->as<ResidualBlock>()->forward(y);
  y = nn::functional::adaptive_avg_pool2d(y, nn::functional::AdaptiveAvgPool2dFuncOptions(1)).flatten(1);
  return head_->forward(y);
}

double ResNetImpl::macs(std::int64_t h, std::int64_t w) const {
  double total = conv_macs(channels_, 32, 3, 1, h, w);
  for (const auto& block : *blocks_) total += block->as<ResidualBlock>()->macs(h, w);
  return total + static_cast<double>(256 * classes_);
}

}  // namespace fast::torch
