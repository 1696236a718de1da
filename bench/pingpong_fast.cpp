// Benchmark (e), latency part, FAST side: ping-pong between the two workers of a run of any
// runtime (`fast launch -n 2 -- bench_pingpong_fast`: zmq, one worker per process), through
// Context::send and Context::recv. Method and output: pingpong_procs.hpp.

#include <chrono>
#include <cstdlib>
#include <exception>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "fast/core/tensor_view.hpp"
#include "fast/runtime/launcher.hpp"
#include "fast/runtime/tag.hpp"
#include "pingpong_procs.hpp"

namespace {

void run(fast::runtime::Context& ctx, const bench::PingpongArgs& args, std::FILE* out) {
  const int peer = 1 - ctx.rank();
  std::uint32_t sequence = 0;
  for (const std::size_t bytes : args.sizes) {
    std::vector<float> buf(bytes / sizeof(float), 1.0f);
    const fast::core::MutableView view{std::span<float>(buf)};
    const std::size_t iters = bench::iters_for(args, bytes);
    auto trip = [&] {
      const fast::runtime::Tag tag = fast::runtime::make_tag(fast::runtime::TagKind::user, sequence++ & 0xFFFFFF, 0);
      if (ctx.rank() == 0) {
        ctx.send(peer, tag, view).wait();
        ctx.recv(peer, tag, view).wait();
      } else {
        ctx.recv(peer, tag, view).wait();
        ctx.send(peer, tag, view).wait();
      }
    };
    for (std::size_t i = 0; i < args.warmup; ++i) trip();
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < iters; ++i) trip();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (ctx.rank() == 0)
      std::fprintf(out, "%s,%zu,%zu,%.3f\n", args.label.c_str(), bytes, iters,
                   seconds / static_cast<double>(iters) / 2 * 1e6);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bench::PingpongArgs args = bench::parse_pingpong(argc, argv);
  const char* process = std::getenv("FAST_PROCESS_RANK");
  const bool writer = process == nullptr || std::string(process) == "0";
  std::FILE* out = args.out.empty() || !writer ? stdout : std::fopen(args.out.c_str(), "w");
  if (out == nullptr) {
    std::fprintf(stderr, "%s: cannot write %s\n", argv[0], args.out.c_str());
    return 1;
  }
  if (writer) std::fprintf(out, "impl,bytes,iters,one_way_us\n");
  try {
    fast::runtime::launch({.runtime = "zmq", .op_timeout_seconds = 600}, [&](fast::runtime::Context& ctx) {
      if (ctx.size() != 2) throw std::runtime_error("bench_pingpong_fast: expected 2 workers (fast launch -n 2)");
      run(ctx, args, out);
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
  if (out != stdout) std::fclose(out);
  return 0;
}
