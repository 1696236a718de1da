// Benchmark (g), paired: all-reduce time through FAST's `mpi` runtime against MPI_Allreduce called
// directly, in the SAME processes under one `mpirun`, taking turns. Separate programs (bench/run.sh's
// other (g) columns) differ by more than the 5% the goal asks to resolve on a shared VM: their
// A/A pair, the same program twice, spreads 0.41-1.78x per repetition (docs/benchmarks.md, (g)).
// Here every implementation reduces the same buffer, at the same thread level (MPI_THREAD_MULTIPLE,
// as FAST initialises MPI), and each round runs them one after the other, so a slow spell of the
// machine falls on one round's pair rather than on one implementation. The report compares them
// round by round (bench/report.py, "mpi").
//
// Each round, in an order that turns by one every round:
//   direct        MPI_Allreduce(MPI_IN_PLACE, float, MPI_SUM) on MPI_COMM_WORLD, no FAST thread alive;
//   fast_native   Communicator::allreduce under fast::runtime::launch({.runtime = "mpi",
//                 .collectives = "native"}) (MPI_Allreduce on the runtime's duplicate communicator);
//   fast_ring     the same launch with .collectives = "fast" (FAST's ring over MPI point-to-point);
//   direct_again  direct once more (an A/A pair: what the method itself cannot tell apart).
// Per message size, bench::time_size (bench/allreduce_common.hpp): one checked all-reduce (rank r
// gives r+1; every element must be n(n+1)/2), warm-up, a barrier, the timed loop; a rank's time /
// iterations, the maximum over ranks.
//
// CSV (rank 0): impl,ranks,round,bytes,iters,time_us,busbw_GBps
// usage: mpirun -np N bench_allreduce_mpi_paired [--rounds R] [--impls A,B,...] [--max-bytes B] [--out FILE]
//        --impls: which of the four, in the first round's order (default: all, as listed above)
//        (any other option of bench/allreduce_common.hpp too; --chunks' first value is the ring's)

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "allreduce_common.hpp"
#include "fast/collective/communicator.hpp"
#include "fast/runtime/launcher.hpp"

namespace {

// One all-reduce of `count` floats in place, and a barrier, by one implementation.
struct Reducer {
  std::function<void(float*, std::size_t)> allreduce;
  std::function<void()> barrier;
};

// Times every size of `args` with `reducer` on every rank (bench::time_size); rank 0 writes its
// rows. Returns the number of wrong sums this rank saw.
int sweep(const Reducer& reducer, const bench::AllreduceArgs& args, std::vector<float>& buf, int rank, int n,
          const std::string& impl, int round, std::FILE* out) {
  int wrong = 0;
  for (const std::size_t bytes : bench::sizes(args)) {
    const bench::SizeTiming t =
        bench::time_size(args, buf.data(), bytes / sizeof(float), rank, n, reducer.allreduce, reducer.barrier);
    wrong += t.wrong ? 1 : 0;
    double worst = 0;  // MPI_COMM_WORLD is free to use here: FAST's runtime works on duplicates
    MPI_Allreduce(&t.seconds, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) {
      std::fprintf(out, "%s,%d,%d,%zu,%zu,%.3f,%.4f\n", impl.c_str(), n, round, bytes, t.iters, worst * 1e6,
                   static_cast<double>(bytes) / worst / 1e9 * bench::busbw_factor(n));
      std::fflush(out);
    }
  }
  return wrong;
}

int direct(const bench::AllreduceArgs& args, std::vector<float>& buf, int rank, int n, const std::string& impl,
           int round, std::FILE* out) {
  const Reducer mpi{[](float* data, std::size_t count) {
                      MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
                    },
                    [] { MPI_Barrier(MPI_COMM_WORLD); }};
  return sweep(mpi, args, buf, rank, n, impl, round, out);
}

// The same sweep on the worker of an `mpi` launch with the given collectives.
int through_fast(const bench::AllreduceArgs& args, std::vector<float>& buf, int rank, int n,
                 const std::string& collectives, int round, std::FILE* out) {
  int wrong = 0;
  fast::runtime::launch(
      {.runtime = "mpi", .op_timeout_seconds = 600, .collectives = collectives}, [&](fast::runtime::Context& ctx) {
        fast::collective::Communicator comm(ctx);
        const fast::collective::AllreduceOptions opts{.op = fast::collective::ReduceOp::sum,
                                                      .chunk_bytes = args.chunks.front()};
        const Reducer reducer{[&](float* data, std::size_t count) {
                                const std::span<float> v(data, count);
                                comm.allreduce(fast::core::MutableView(v), opts);
                              },
                              [&] { comm.barrier(); }};
        wrong = sweep(reducer, args, buf, rank, n, collectives == "native" ? "fast_native" : "fast_ring", round, out);
      });
  return wrong;
}

}  // namespace

int main(int argc, char** argv) {
  // As FAST's mpi runtime does: FAST's launches below find MPI initialised and use it.
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);

  // --rounds is this program's own; the rest are bench/allreduce_common.hpp's.
  int rounds = 10;
  std::vector<std::string> impls{"direct", "fast_native", "fast_ring", "direct_again"};
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string key = argv[i];
    if (key == "--rounds" && i + 1 < argc)
      rounds = std::atoi(argv[++i]);
    else if (key == "--impls" && i + 1 < argc)
      impls = bench::parse_list<std::string>(argv[++i], [](const std::string& s) { return s; });
    else
      rest.push_back(argv[i]);
  }
  bench::AllreduceArgs args;
  const std::string out_path = bench::parse_args(static_cast<int>(rest.size()), rest.data(), args);
  if (rounds < 1) bench::usage(argv[0], "--rounds must be >= 1");
  for (const std::string& impl : impls)
    if (impl != "direct" && impl != "direct_again" && impl != "fast_native" && impl != "fast_ring")
      bench::usage(argv[0],
                   ("--impls: expected direct, fast_native, fast_ring or direct_again, got '" + impl + "'").c_str());
  std::FILE* out = stdout;
  if (rank == 0 && !out_path.empty()) out = std::fopen(out_path.c_str(), "w");
  if (out == nullptr) {
    std::fprintf(stderr, "%s: cannot write %s\n", argv[0], out_path.c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (rank == 0) std::fprintf(out, "impl,ranks,round,bytes,iters,time_us,busbw_GBps\n");

  std::vector<float> buf(args.max_bytes / sizeof(float));  // the one buffer every implementation reduces
  int wrong = 0;
  try {
    for (int round = 1; round <= rounds; ++round) {
      for (std::size_t k = 0; k < impls.size(); ++k) {
        const std::string& impl = impls[(k + static_cast<std::size_t>(round) - 1) % impls.size()];
        if (rank == 0) std::fprintf(stderr, "  round %d/%d: %s, %d ranks\n", round, rounds, impl.c_str(), n);
        if (impl.rfind("direct", 0) == 0)
          wrong += direct(args, buf, rank, n, impl, round, out);
        else
          wrong += through_fast(args, buf, rank, n, impl == "fast_native" ? "native" : "fast", round, out);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: rank %d: %s\n", argv[0], rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int total = 0;
  MPI_Allreduce(&wrong, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0 && total != 0) std::fprintf(stderr, "%s: %d wrong sums\n", argv[0], total);
  if (out != stdout) std::fclose(out);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
