#pragma once
// The built-in residual CNN ("resnet", models.hpp): a network of about 1.6 M parameters whose
// balance of computation and communication resembles real work more than mlp's and cnn's.
//
//   stem    Conv2d(C,32,3,pad 1) GroupNorm ReLU                        H x W
//   stage1  Block(32,32)  Block(32,32)                                 H x W
//   stage2  Block(32,64,stride 2)  Block(64,64)                        H/2 (rounded up)
//   stage3  Block(64,128,stride 2) Block(128,128)                      H/4
//   stage4  Block(128,256,stride 2)                                    H/8
//   head    global average pool, Linear(256, classes)
//
// Block(in,out,s): y = ReLU(GN(conv3x3(ReLU(GN(conv3x3_s(x))))) + shortcut(x)), the shortcut a
// 1x1 convolution with stride s and a GroupNorm when s != 1 or in != out, else x. Convolutions have
// no bias (the GroupNorm after each has one); GroupNorm has 8 groups. GroupNorm rather than
// BatchNorm: it keeps no running statistics, so the model is all parameters and every replica's
// state is what the strategies average.
// Thread-safety: as any libtorch module (one thread per instance).

#include <cstdint>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

namespace fast::torch {

class ResidualBlockImpl : public ::torch::nn::Module {
 public:
  ResidualBlockImpl(std::int64_t in, std::int64_t out, std::int64_t stride);
  ::torch::Tensor forward(const ::torch::Tensor& x);
  // Multiply-accumulates of one sample whose input is in x h x w; h and w become the output's.
  double macs(std::int64_t& h, std::int64_t& w) const;

 private:
  std::int64_t in_, out_, stride_;
  ::torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr}, shortcut_{nullptr};
  ::torch::nn::GroupNorm norm1_{nullptr}, norm2_{nullptr}, shortcut_norm_{nullptr};
};
// TORCH_MODULE(ResidualBlock), spelled out: the macro names torch::nn, which inside fast::torch means fast::torch::nn.
class ResidualBlock : public ::torch::nn::ModuleHolder<ResidualBlockImpl> {
 public:
  using ::torch::nn::ModuleHolder<ResidualBlockImpl>::ModuleHolder;
};

class ResNetImpl : public ::torch::nn::Module {
 public:
  // channels: of the input samples; classes: of the output logits (both >= 1).
  ResNetImpl(std::int64_t channels, std::int64_t classes);
  ::torch::Tensor forward(const ::torch::Tensor& x);
  // Multiply-accumulates of the forward pass of one sample of `channels` x h x w.
  double macs(std::int64_t h, std::int64_t w) const;

 private:
  std::int64_t channels_, classes_;
  ::torch::nn::Conv2d stem_{nullptr};
  ::torch::nn::GroupNorm stem_norm_{nullptr};
  ::torch::nn::ModuleList blocks_{nullptr};
  ::torch::nn::Linear head_{nullptr};
};
// TORCH_MODULE(ResNet), spelled out: the macro names torch::nn, which inside fast::torch means fast::torch::nn.
class ResNet : public ::torch::nn::ModuleHolder<ResNetImpl> {
 public:
  using ::torch::nn::ModuleHolder<ResNetImpl>::ModuleHolder;
};

}  // namespace fast::torch
