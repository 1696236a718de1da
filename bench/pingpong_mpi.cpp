// Benchmark (e), latency part, peer side: ping-pong with MPI_Send/MPI_Recv between the two ranks
// of `mpirun -np 2`. Method and output: pingpong_procs.hpp.

#include <mpi.h>

#include <vector>

#include "pingpong_procs.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const bench::PingpongArgs args = bench::parse_pingpong(argc, argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) std::fprintf(stderr, "%s: expected 2 ranks (mpirun -np 2)\n", argv[0]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  std::FILE* out = args.out.empty() || rank != 0 ? stdout : std::fopen(args.out.c_str(), "w");
  if (out == nullptr) MPI_Abort(MPI_COMM_WORLD, 1);
  if (rank == 0) std::fprintf(out, "impl,bytes,iters,one_way_us\n");
  const int peer = 1 - rank;
  for (const std::size_t bytes : args.sizes) {
    std::vector<char> buf(bytes, 1);
    const int count = static_cast<int>(bytes);
    const std::size_t iters = bench::iters_for(args, bytes);
    auto trip = [&] {
      if (rank == 0) {
        MPI_Send(buf.data(), count, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
        MPI_Recv(buf.data(), count, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(buf.data(), count, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf.data(), count, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
      }
    };
    for (std::size_t i = 0; i < args.warmup; ++i) trip();
    const double start = MPI_Wtime();
    for (std::size_t i = 0; i < iters; ++i) trip();
    const double seconds = MPI_Wtime() - start;
    if (rank == 0)
      std::fprintf(out, "%s,%zu,%zu,%.3f\n", args.label.c_str(), bytes, iters,
                   seconds / static_cast<double>(iters) / 2 * 1e6);
  }
  if (out != stdout) std::fclose(out);
  MPI_Finalize();
  return 0;
}
