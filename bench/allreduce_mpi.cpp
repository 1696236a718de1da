// Benchmark (a), peer side: bus bandwidth of OpenMPI's MPI_Allreduce (MPI_SUM, MPI_FLOAT, in place),
// with exactly the iteration policy, formulas and CSV of bench/allreduce_fast.cpp
// (bench/allreduce_common.hpp). Run under mpirun; the rank count is the world size.
// Timing: bench::time_size (MPI_Barrier, then the timed loop), max over ranks with MPI_Reduce(MPI_MAX).

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "allreduce_common.hpp"

int main(int argc, char** argv) {
  // BENCH_MPI_THREAD_MULTIPLE=1: initialise as FAST's mpi runtime does (MPI_THREAD_MULTIPLE), to
  // tell what the thread level costs apart from what FAST adds (docs/benchmarks.md, (g)).
  const char* multiple = std::getenv("BENCH_MPI_THREAD_MULTIPLE");
  if (multiple != nullptr && std::string(multiple) == "1") {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  } else {
    MPI_Init(&argc, &argv);
  }
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);

  bench::AllreduceArgs args;
  const std::string out_path = bench::parse_args(argc, argv, args);
  std::FILE* out = stdout;
  if (rank == 0) {
    if (!out_path.empty()) out = std::fopen(out_path.c_str(), "w");
    if (out == nullptr) {
      std::fprintf(stderr, "%s: cannot write %s\n", argv[0], out_path.c_str());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    std::fprintf(out, "%s\n", bench::csv_header());
  }

  std::vector<float> buf(args.max_bytes / sizeof(float));
  int failures = 0;
  for (const std::size_t bytes : bench::sizes(args)) {
    const bench::SizeTiming t = bench::time_size(
        args, buf.data(), bytes / sizeof(float), rank, n,
        [](float* data, std::size_t count) {
          MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        },
        [] { MPI_Barrier(MPI_COMM_WORLD); });
    failures += t.wrong ? 1 : 0;
    double worst = 0;
    MPI_Reduce(&t.seconds, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) bench::print_row(out, args.label.empty() ? "mpi" : args.label.c_str(), n, bytes, 0, t.iters, worst);
  }
  int total_failures = 0;
  MPI_Reduce(&failures, &total_failures, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    if (out != stdout) std::fclose(out);
    if (total_failures != 0)
      std::fprintf(stderr, "%s: MPI_Allreduce returned wrong sums (%d)\n", argv[0], total_failures);
  }
  MPI_Finalize();
  return total_failures == 0 ? 0 : 1;
}
