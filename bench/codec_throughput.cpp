// Benchmark (d): codec throughput. Encode + decode of one f32 gradient (default 6,553,600 values =
// 25 MiB, normal(0, 1e-3)) per codec, against the peer "memcpy of the same bytes" in the same run.
// A plain timed loop (like the other bench/ programs, no Google Benchmark): per codec one warm-up
// encode + decode (buffers sized, powersgd's Q warm), then --reps timed repetitions of encode and of
// decode; the reported times are medians. GB/s = input bytes (4 n) / (encode + decode) / 1e9.
// powersgd runs on a layout of one matrix of --rows x (n / rows) (default 2560 x 2560).
//
// usage: bench_codec_throughput [--n N] [--reps R] [--rows ROWS] [--codecs a,b,...] [--out CSV]
// CSV columns: codec,n,payload_bytes,ratio,encode_s,decode_s,GBps,memcpy_GBps,vs_memcpy,goal_GBps

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "fast/compress/codec.hpp"
#include "fast/core/layout.hpp"

namespace {

using fast::bench::median;
using fast::bench::now;
using fast::bench::split;

// The goals of docs/benchmarks.md (GB/s of input); 0 = none.
double goal_of(const std::string& spec) {
  const std::string name = spec.substr(0, spec.find(':'));
  if (name == "fp16" || name == "bf16" || name == "int8" || name == "sign") return 1.0;
  if (spec == "topk:ratio=0.01") return 0.3;
  return 0.0;
}

}  // namespace

int main(int argc, char** argv) try {
  std::size_t n = 6553600, reps = 7, rows = 2560;
  // threshold 2.576 sigma keeps about 1% of a normal(0, sigma) gradient.
  std::string codecs =
      "none,fp16,bf16,int8,sign,topk:ratio=0.01,randk:ratio=0.01,threshold:value=0.002576,powersgd:rank=4";
  std::string out_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error("missing value after " + a);
      return argv[++i];
    };
    if (a == "--n")
      n = std::stoull(next());
    else if (a == "--reps")
      reps = std::stoull(next());
    else if (a == "--rows")
      rows = std::stoull(next());
    else if (a == "--codecs")
      codecs = next();
    else if (a == "--out")
      out_path = next();
    else
      throw std::runtime_error("unknown argument " + a + " (see the header of bench/codec_throughput.cpp)");
  }
  if (n == 0 || reps == 0 || rows == 0 || n % rows != 0)
    throw std::runtime_error("need n, reps, rows > 0 and rows | n");

  std::vector<float> x(n), y(n);
  std::mt19937 g(2026);
  std::normal_distribution<float> d(0.0f, 1e-3f);
  for (auto& v : x) v = d(g);
  const fast::core::Layout matrix{fast::core::TensorBlock{0, n, rows, {rows, n / rows}, "w"}};

  // Peer: memcpy of the same 4 n bytes (y is written once first, so no page faults are timed).
  std::memcpy(y.data(), x.data(), 4 * n);
  std::vector<double> t_copy;
  for (std::size_t r = 0; r < std::max<std::size_t>(reps, 5); ++r) {
    const double t0 = now();
    std::memcpy(y.data(), x.data(), 4 * n);
    t_copy.push_back(now() - t0);
  }
  const double bytes = 4.0 * static_cast<double>(n);
  const double memcpy_gbps = bytes / median(t_copy) / 1e9;

  std::FILE* csv = out_path.empty() ? nullptr : std::fopen(out_path.c_str(), "w");
  if (!out_path.empty() && csv == nullptr) throw std::runtime_error("cannot write " + out_path);
  if (csv) std::fprintf(csv, "codec,n,payload_bytes,ratio,encode_s,decode_s,GBps,memcpy_GBps,vs_memcpy,goal_GBps\n");
  std::printf("codec throughput: n = %zu f32 (%.1f MB), normal(0, 1e-3), median of %zu; memcpy %.2f GB/s\n", n,
              bytes / 1e6, reps, memcpy_gbps);
  std::printf("%-28s %12s %8s %10s %10s %8s %9s %6s %s\n", "codec", "payload B", "ratio", "encode ms", "decode ms",
              "GB/s", "x memcpy", "goal", "verdict");
  bool all_met = true;
  for (const std::string& spec : split(codecs)) {
    auto codec = fast::compress::make_codec(spec, 1, spec.rfind("powersgd", 0) == 0 ? &matrix : nullptr);
    fast::core::Buffer payload;
    codec->encode(fast::core::ConstView(std::span<const float>(x)), payload);
    codec->decode(payload.view(), fast::core::MutableView(std::span<float>(y)));
    std::vector<double> te, td;
    for (std::size_t r = 0; r < reps; ++r) {
      const double t0 = now();
      codec->encode(fast::core::ConstView(std::span<const float>(x)), payload);
      const double t1 = now();
      codec->decode(payload.view(), fast::core::MutableView(std::span<float>(y)));
      const double t2 = now();
      te.push_back(t1 - t0);
      td.push_back(t2 - t1);
    }
    const double enc = median(te), dec = median(td);
    const double gbps = bytes / (enc + dec) / 1e9;
    const double goal = goal_of(spec);
    const bool met = gbps >= goal;
    all_met = all_met && met;
    const double ratio = bytes / static_cast<double>(payload.numel());
    std::printf("%-28s %12zu %8.1f %10.2f %10.2f %8.3f %9.3f %6.1f %s\n", spec.c_str(), payload.numel(), ratio,
                enc * 1e3, dec * 1e3, gbps, gbps / memcpy_gbps, goal,
                goal == 0 ? "-"
                : met     ? "MET"
                          : "MISSED");
    if (csv)
      std::fprintf(csv, "%s,%zu,%zu,%.3f,%.6f,%.6f,%.4f,%.4f,%.4f,%.1f\n", spec.c_str(), n, payload.numel(), ratio, enc,
                   dec, gbps, memcpy_gbps, gbps / memcpy_gbps, goal);
  }
  if (csv) std::fclose(csv);
  std::printf("goals (GB/s of input, encode + decode): >= 1 for fp16, bf16, int8, sign; >= 0.3 for topk 1%%: %s\n",
              all_met ? "all MET" : "some MISSED");
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_codec_throughput: error: %s\n", e.what());
  return 1;
}
