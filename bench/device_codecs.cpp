// Benchmark (m): encode throughput on the device (docs/gpu.md). One f32 gradient of --n
// values (default 6,553,600 = 25 MiB, normal(0, 1e-3), as (d)) on --device; per codec a warm-up
// encode, then --reps timed encodes by fast::torch::DeviceEncoder (the work on the device and the
// copy of the encoded parts to the host: the time until the payload is in host memory) and, in the
// same run, the host codec (compress::make_codec) on a host copy of the same values.
// GB/s = input bytes (4 n) / median encode time / 1e9. Goal: topk:ratio=0.01 on a GPU
// >= 20 GB/s. On a CPU (--device cpu) the figure is libtorch's CPU kernels, not a GPU's.
//
// usage: bench_device_codecs [--device cpu|cuda|cuda:K] [--n N] [--reps R] [--codecs a,b,...] [--out CSV]
// CSV columns: device,codec,n,payload_bytes,device_encode_s,device_GBps,host_encode_s,host_GBps,device_vs_host

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "bench_util.hpp"
#include "fast/adapters/torch/device.hpp"
#include "fast/adapters/torch/device_codec.hpp"
#include "fast/compress/codec.hpp"
#include "fast/core/error.hpp"

namespace {

using fast::bench::median;
using fast::bench::now;
using fast::bench::split;

// Median seconds of `reps` calls of f after one warm-up call.
template <typename F>
double timed(std::size_t reps, F&& f) {
  f();
  std::vector<double> t;
  for (std::size_t r = 0; r < reps; ++r) {
    const double t0 = now();
    f();
    t.push_back(now() - t0);
  }
  return median(t);
}

}  // namespace

int main(int argc, char** argv) try {
  std::string device_spec = "cpu", codecs = "fp16,bf16,sign,topk:ratio=0.01", out_path;
  std::size_t n = 6553600, reps = 9;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument("missing value after " + a);
    const std::string v = argv[++i];
    if (a == "--device")
      device_spec = v;
    else if (a == "--n")
      n = std::stoull(v);
    else if (a == "--reps")
      reps = std::stoull(v);
    else if (a == "--codecs")
      codecs = v;
    else if (a == "--out")
      out_path = v;
    else
      throw std::invalid_argument(
          "unknown option " + a +
          "; usage: bench_device_codecs [--device D] [--n N] [--reps R] [--codecs a,b] [--out CSV]");
  }
  fast::torch::check_device(device_spec, "--device");
  const torch::Device device = fast::torch::worker_device(device_spec, 0);
  torch::manual_seed(1);
  const torch::Tensor host = torch::randn({static_cast<std::int64_t>(n)}) * 1e-3;
  const torch::Tensor x = host.to(device);
  std::string csv = "device,codec,n,payload_bytes,device_encode_s,device_GBps,host_encode_s,host_GBps,device_vs_host\n";
  std::printf("%-18s %12s %14s %10s %14s %10s %8s\n", "codec", "payload", "device enc s", "GB/s", "host enc s", "GB/s",
              "dev/host");
  for (const std::string& spec : split(codecs)) {
    fast::torch::DeviceEncoder encoder(spec);
    const auto codec = fast::compress::make_codec(spec);
    fast::core::Buffer device_out, host_out;
    const double td = timed(reps, [&] { encoder.encode(x, device_out); });
    const fast::core::ConstView view(host.data_ptr<float>(), n, fast::core::DType::f32);
    const double th = timed(reps, [&] { codec->encode(view, host_out); });
    const double bytes = 4.0 * static_cast<double>(n);
    std::printf("%-18s %12zu %14.6f %10.2f %14.6f %10.2f %7.2fx\n", spec.c_str(), device_out.bytes(), td,
                bytes / td / 1e9, th, bytes / th / 1e9, th / td);
    char line[512];
    std::snprintf(line, sizeof(line), "%s,%s,%zu,%zu,%.9f,%.4f,%.9f,%.4f,%.4f\n", device.str().c_str(), spec.c_str(), n,
                  device_out.bytes(), td, bytes / td / 1e9, th, bytes / th / 1e9, th / td);
    csv += line;
  }
  if (!out_path.empty()) {
    std::ofstream f(out_path);
    f << csv;
    if (!f) throw std::runtime_error("cannot write " + out_path);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_device_codecs: %s\n", fast::core::user_message(e).c_str());
  return 1;
}
