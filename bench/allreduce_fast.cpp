// Benchmark (a), FAST side: bus bandwidth of the ring all-reduce (MPI_SUM-like, float) of FAST's
// `threads` runtime, for each rank count of --ranks, each chunk size of --chunks and each message
// size. Method, formulas and CSV columns: bench/allreduce_common.hpp (shared with the MPI side).
//
// Each message size starts with one checked all-reduce (rank r contributes r+1 everywhere; every
// element must come back as n(n+1)/2), then warm-up iterations, a barrier, and the timed loop on
// zero-filled data (zeros: no overflow, no denormals, the same work for both implementations).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "allreduce_common.hpp"
#include "fast/collective/communicator.hpp"
#include "fast/runtime/threads/world.hpp"

namespace {

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void run_world(int n, const bench::AllreduceArgs& args, std::FILE* out) {
  const std::vector<std::size_t> sizes = bench::sizes(args);
  std::vector<double> rank_seconds(static_cast<std::size_t>(n), 0.0);  // written by rank r, read by rank 0
  std::vector<std::string> errors(static_cast<std::size_t>(n));

  fast::runtime::threads::World world({.size = n, .op_timeout_seconds = 600});
  world.run([&](fast::runtime::Context& ctx) {
    fast::collective::Communicator comm(ctx);
    const int r = ctx.rank();
    std::vector<float> buf(args.max_bytes / sizeof(float));  // first touched by this rank's thread
    for (const std::size_t chunk : args.chunks) {
      const fast::collective::AllreduceOptions opts{.op = fast::collective::ReduceOp::sum, .chunk_bytes = chunk};
      for (const std::size_t bytes : sizes) {
        const std::span<float> v(buf.data(), bytes / sizeof(float));
        const fast::core::MutableView view(v);
        // Checked first iteration.
        std::fill(v.begin(), v.end(), static_cast<float>(r + 1));
        comm.allreduce(view, opts);
        const float expect = static_cast<float>(n * (n + 1) / 2);
        const auto bad = std::find_if(v.begin(), v.end(), [&](float x) { return x != expect; });
        if (bad != v.end() && errors[static_cast<std::size_t>(r)].empty()) {
          errors[static_cast<std::size_t>(r)] = "rank " + std::to_string(r) + ": wrong sum " + std::to_string(*bad) +
                                                " (expected " + std::to_string(expect) + ") at bytes=" +
                                                std::to_string(bytes);
        }
        std::fill(v.begin(), v.end(), 0.0f);
        for (std::size_t i = 1; i < args.warmup; ++i) comm.allreduce(view, opts);

        const std::size_t iters = bench::iterations(args, bytes);
        comm.barrier();
        const double t0 = seconds_now();
        for (std::size_t i = 0; i < iters; ++i) comm.allreduce(view, opts);
        const double t1 = seconds_now();
        rank_seconds[static_cast<std::size_t>(r)] = (t1 - t0) / static_cast<double>(iters);
        comm.barrier();  // every rank has written its time
        if (r == 0) {
          const double worst = *std::max_element(rank_seconds.begin(), rank_seconds.end());
          bench::print_row(out, args.label.empty() ? "fast" : args.label.c_str(), n, bytes, chunk, iters, worst);
        }
        // rank_seconds is rewritten only after the next timed loop, which rank 0 takes part in.
      }
    }
  });
  for (const std::string& e : errors) {
    if (!e.empty()) throw std::runtime_error("FAST all-reduce returned a wrong result: " + e);
  }
}

}  // namespace

int main(int argc, char** argv) {
  bench::AllreduceArgs args;
  const std::string out_path = bench::parse_args(argc, argv, args);
  std::FILE* out = out_path.empty() ? stdout : std::fopen(out_path.c_str(), "w");
  if (out == nullptr) {
    std::fprintf(stderr, "%s: cannot write %s\n", argv[0], out_path.c_str());
    return 1;
  }
  std::fprintf(out, "%s\n", bench::csv_header());
  try {
    for (const int n : args.ranks) {
      if (n < 1) bench::usage(argv[0], "--ranks must be >= 1");
      if (out != stdout) std::fprintf(stderr, "  fast: %d ranks (threads of one process)...\n", n);
      run_world(n, args, out);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
  if (out != stdout) std::fclose(out);
  return 0;
}
