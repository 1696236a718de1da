// Benchmark (a), FAST side: bus bandwidth of the all-reduce (each algorithm of --algorithms) (MPI_SUM-like, float) of
// FAST's `threads` runtime (for each rank count of --ranks), of the `zmq` runtime with --runtime zmq (one worker per
// process, started by `fast launch -n N -- bench_allreduce_fast --runtime zmq`;
// --ranks is then the launch's), or of the `mpi` runtime with --runtime mpi (started by
// `mpirun -np N`; --collectives native calls MPI_Allreduce through the Communicator, fast its ring),
// for each chunk size of --chunks and each message size. Method,
// formulas and CSV columns: bench/allreduce_common.hpp (shared with the MPI side). The ranks
// combine their times and checks with collectives, so the same code runs in one process or many.
//
// Each message size is measured by bench::time_size (allreduce_common.hpp): a checked all-reduce,
// warm-up, a barrier, the timed loop on zero-filled data, as on the MPI side.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "allreduce_common.hpp"
#include "fast/collective/communicator.hpp"
#include "fast/runtime/launcher.hpp"

namespace {

// The slowest rank's seconds (every rank passes its own; all get the maximum).
double slowest(fast::collective::Communicator& comm, double mine) {
  std::vector<double> all(static_cast<std::size_t>(comm.size()));
  comm.allgather(fast::core::ConstView(std::span<const double>(&mine, 1)),
                 fast::core::MutableView(std::span<double>(all)));
  return *std::max_element(all.begin(), all.end());
}

// Chunk sizes to run an algorithm with: only the ring pipelines by chunk_bytes, so every --chunks
// value for it, and for the others (auto included) the library's default.
std::vector<std::size_t> chunks_for(const bench::AllreduceArgs& args, const std::string& algorithm) {
  if (algorithm == "ring") return args.chunks;
  return {fast::collective::AllreduceOptions{}.chunk_bytes};
}

void measure(fast::runtime::Context& ctx, const bench::AllreduceArgs& args, std::FILE* out) {
  fast::collective::Communicator comm(ctx, {.shared_memory = args.shared_memory});
  const int r = ctx.rank(), n = ctx.size();
  double wrong = 0;                                        // this rank saw a wrong sum
  std::vector<float> buf(args.max_bytes / sizeof(float));  // first touched by this rank's thread
  for (const std::string& algorithm_name : args.algorithms)
    for (const std::size_t chunk : chunks_for(args, algorithm_name)) {
      const auto algorithm = fast::collective::parse_allreduce_algorithm(algorithm_name, "--algorithms");
      const std::string base = args.label.empty() ? std::string("fast") : args.label;
      const std::string impl = algorithm_name == "auto" ? base : base + "-" + algorithm_name;
      const fast::collective::AllreduceOptions opts{
          .op = fast::collective::ReduceOp::sum, .chunk_bytes = chunk, .algorithm = algorithm};
      for (const std::size_t bytes : bench::sizes(args)) {
        if (r == 0 && algorithm == fast::collective::AllreduceAlgorithm::automatic)
          std::fprintf(stderr, "  auto, %d ranks, %zu bytes: %s\n", n, bytes,
                       std::string(fast::collective::name_of(comm.resolve(bytes, opts))).c_str());
        const bench::SizeTiming t = bench::time_size(
            args, buf.data(), bytes / sizeof(float), r, n,
            [&](float* data, std::size_t count) {
              comm.allreduce(fast::core::MutableView(std::span<float>(data, count)), opts);
            },
            [&] { comm.barrier(); });
        if (t.wrong) wrong = 1;
        const double worst = slowest(comm, t.seconds);
        if (r == 0) bench::print_row(out, impl.c_str(), n, bytes, chunk, t.iters, worst);
      }
    }
  if (slowest(comm, wrong) != 0) throw std::runtime_error("FAST all-reduce returned a wrong sum on some rank");
}

}  // namespace

int main(int argc, char** argv) {
  bench::AllreduceArgs args;
  std::string out_path = bench::parse_args(argc, argv, args);
  // Only rank 0's process writes: the others' ranks, as the launcher tells them.
  const char* process = std::getenv(args.runtime == "mpi" ? "OMPI_COMM_WORLD_RANK" : "FAST_PROCESS_RANK");
  if (args.runtime != "threads" && process != nullptr && std::string(process) != "0") out_path = "/dev/null";
  std::FILE* out = out_path.empty() ? stdout : std::fopen(out_path.c_str(), "w");
  if (out == nullptr) {
    std::fprintf(stderr, "%s: cannot write %s\n", argv[0], out_path.c_str());
    return 1;
  }
  if (args.runtime != "threads" && args.runtime != "zmq" && args.runtime != "mpi")
    bench::usage(argv[0], "--runtime: expected threads, zmq or mpi");
  std::fprintf(out, "%s\n", bench::csv_header());
  try {
    if (args.runtime != "threads") {  // the world is the launcher's; rank 0's process prints
      fast::runtime::launch({.runtime = args.runtime, .op_timeout_seconds = 600, .collectives = args.collectives},
                            [&](fast::runtime::Context& ctx) { measure(ctx, args, out); });
    } else {
      for (const int n : args.ranks) {
        if (n < 1) bench::usage(argv[0], "--ranks must be >= 1");
        if (out != stdout) std::fprintf(stderr, "  fast: %d ranks (threads of one process)...\n", n);
        fast::runtime::launch({.runtime = "threads", .workers = n, .op_timeout_seconds = 600},
                              [&](fast::runtime::Context& ctx) { measure(ctx, args, out); });
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
  if (out != stdout) std::fclose(out);
  return 0;
}
