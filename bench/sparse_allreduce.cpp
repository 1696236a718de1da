// Benchmark (i): CodecAllreduce's two reductions of sparse messages, measured against each other
// in the same run on the threads runtime: the all-gather of the top-k payloads (SparseReduce::
// gather) and the dense ring all-reduce of the decoded messages (SparseReduce::dense), per world
// size, tensor length and top-k density. Each configuration: 2 warm-up averages, then averages
// until 0.3 s and at least 5 have run; the time is the mean per average() of rank 0 (every rank
// ends each average() together). Prints CSV: workers,n,density,payload_bytes,gather_s,dense_s,
// gather_over_dense,auto (the choice SparseReduce::auto_choice makes). Sets kSparseDenseCrossover
// (docs/benchmarks.md (i)).
//
// usage: bench_sparse_allreduce [--workers 2,4] [--n 242762,4194304] [--out FILE]

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fast/collective/codec_allreduce.hpp"
#include "fast/runtime/threads/world.hpp"

namespace {

std::vector<long> parse_list(const char* text) {
  std::vector<long> out;
  for (const char* p = text; *p != '\0';) {
    char* end = nullptr;
    out.push_back(std::strtol(p, &end, 10));
    p = *end == ',' ? end + 1 : end;
    if (end == p && *p != '\0') break;
  }
  return out;
}

struct Result {
  double seconds = 0;
  std::size_t payload = 0;
  bool dense_auto = false;
};

Result measure(int workers, std::size_t n, double density, fast::collective::SparseReduce how) {
  Result result;
  fast::runtime::threads::World world({.size = workers, .op_timeout_seconds = 600});
  world.run([&](fast::runtime::Context& ctx) {
    fast::collective::Communicator comm(ctx);
    fast::collective::CodecAllreduce reduce(
        comm, {.codec = "topk:ratio=" + std::to_string(density), .seed = 1, .sparse = how});
    std::vector<float> data(n);
    const auto fill = [&](int it) {
      for (std::size_t i = 0; i < n; ++i)
        data[i] =
            static_cast<float>(((i * 2654435761u + static_cast<std::size_t>(ctx.rank() * 97 + it)) % 1000) - 500) *
            1e-3f;
    };
    for (int it = 0; it < 2; ++it) {
      fill(it);
      reduce.average(fast::core::MutableView(std::span<float>(data)), 0);
    }
    int iters = 0;
    double elapsed = 0;
    const auto t0 = std::chrono::steady_clock::now();
    // Every rank runs the same number of averages: rank 0 decides by broadcasting "go on".
    for (;;) {
      std::vector<int> go{(iters < 5 || elapsed < 0.3) ? 1 : 0};
      comm.broadcast(fast::core::MutableView(std::span<int>(go)), 0);
      if (go[0] == 0) break;
      fill(iters);
      reduce.average(fast::core::MutableView(std::span<float>(data)), 0);
      ++iters;
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    if (ctx.rank() == 0) {
      result.seconds = elapsed / iters;
      result.payload = reduce.feedback()->codec().encoded_bytes(n);
      fast::collective::CodecAllreduce probe(comm, {.codec = "topk:ratio=" + std::to_string(density)});
      result.dense_auto = probe.reduces_densely(n);
    }
  });
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<long> workers{2, 4}, lengths{242762, 4194304};
  std::string out;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--workers") == 0)
      workers = parse_list(argv[i + 1]);
    else if (std::strcmp(argv[i], "--n") == 0)
      lengths = parse_list(argv[i + 1]);
    else if (std::strcmp(argv[i], "--out") == 0)
      out = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: bench_sparse_allreduce [--workers 2,4] [--n 242762,4194304] [--out FILE]\n");
      return 2;
    }
  }
  std::FILE* f = out.empty() ? stdout : std::fopen(out.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "bench_sparse_allreduce: cannot write %s\n", out.c_str());
    return 1;
  }
  std::fprintf(f, "workers,n,density,payload_bytes,gather_s,dense_s,gather_over_dense,auto\n");
  for (long w : workers)
    for (long n : lengths)
      for (double d : {0.001, 0.01, 0.05, 0.1, 0.2, 0.3, 0.5}) {
        const Result g =
            measure(static_cast<int>(w), static_cast<std::size_t>(n), d, fast::collective::SparseReduce::gather);
        const Result dn =
            measure(static_cast<int>(w), static_cast<std::size_t>(n), d, fast::collective::SparseReduce::dense);
        std::fprintf(f, "%ld,%ld,%g,%zu,%.6g,%.6g,%.3f,%s\n", w, n, d, g.payload, g.seconds, dn.seconds,
                     g.seconds / dn.seconds, g.dense_auto ? "dense" : "gather");
        std::fflush(f);
      }
  if (f != stdout) std::fclose(f);
  return 0;
}
