// Benchmark (h): one-sided window operations under `mpirun -np 2`: FAST's Window (a service
// activity of the owner answering point-to-point requests, here over the `mpi` runtime) against
// MPI RMA with a passive target (MPI_Win_lock / MPI_Accumulate or MPI_Get / MPI_Win_unlock), in the
// same processes, alternating. Rank 1 issues the operations on rank 0's tensor while rank 0 waits;
// each operation is complete at the target when timed (FAST: its Work; MPI: MPI_Win_unlock).
// Prints CSV: impl,op,bytes,iterations,seconds_per_op,GBps. Decides where the mpi runtime's windows
// belong (docs/benchmarks.md, (h)).
//
// usage: mpirun -np 2 bench_window_mpi [--reps N] [--max-bytes B] [--out FILE]

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fast/collective/communicator.hpp"
#include "fast/collective/window.hpp"
#include "fast/runtime/launcher.hpp"

namespace {

struct Args {
  int reps = 3;
  std::size_t max_bytes = std::size_t{16} << 20;
  std::string out;
};

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::size_t iterations(std::size_t bytes) { return std::clamp<std::size_t>((std::size_t{256} << 20) / bytes, 5, 2000); }

std::vector<std::size_t> sizes(const Args& a) {
  std::vector<std::size_t> s;
  for (std::size_t b = 4096; b <= a.max_bytes; b *= 4) s.push_back(b);
  return s;
}

void row(std::FILE* out, const char* impl, const char* op, std::size_t bytes, std::size_t iters, double seconds) {
  const double per = seconds / static_cast<double>(iters);
  std::fprintf(out, "%s,%s,%zu,%zu,%.9f,%.4f\n", impl, op, bytes, iters, per, static_cast<double>(bytes) / per / 1e9);
  std::fflush(out);
}

// FAST: a Window over the mpi runtime; rank 1 accumulates into and gets from rank 0's tensor.
void fast_side(const Args& a, std::FILE* out) {
  fast::runtime::launch({.runtime = "mpi", .op_timeout_seconds = 600}, [&](fast::runtime::Context& ctx) {
    fast::collective::Communicator comm(ctx);
    std::vector<float> exposed(a.max_bytes / sizeof(float)), mine(a.max_bytes / sizeof(float), 1.0f);
    fast::collective::Window window(comm, "bench", fast::core::MutableView(std::span<float>(exposed)));
    if (ctx.rank() == 1) {
      for (const std::size_t bytes : sizes(a)) {
        const std::size_t n = bytes / sizeof(float), iters = iterations(bytes);
        const fast::core::ConstView src(std::span<const float>(mine.data(), n));
        const fast::core::MutableView dst(std::span<float>(mine.data(), n));
        window.accumulate(0, src).wait();  // warm-up
        double t0 = now();
        for (std::size_t i = 0; i < iters; ++i) window.accumulate(0, src).wait();
        row(out, "fast_window", "accumulate", bytes, iters, now() - t0);
        t0 = now();
        for (std::size_t i = 0; i < iters; ++i) window.get(0, dst).wait();
        row(out, "fast_window", "get", bytes, iters, now() - t0);
      }
    }
    window.close();
  });
}

// MPI RMA, passive target: rank 1 locks rank 0's window for each operation.
void rma_side(const Args& a, int rank, std::FILE* out) {
  float* base = nullptr;
  MPI_Win win;
  MPI_Win_allocate(static_cast<MPI_Aint>(a.max_bytes), sizeof(float), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
  std::memset(base, 0, a.max_bytes);
  std::vector<float> mine(a.max_bytes / sizeof(float), 1.0f);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 1) {
    for (const std::size_t bytes : sizes(a)) {
      const int n = static_cast<int>(bytes / sizeof(float));
      const std::size_t iters = iterations(bytes);
      auto accumulate = [&] {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        MPI_Accumulate(mine.data(), n, MPI_FLOAT, 0, 0, n, MPI_FLOAT, MPI_SUM, win);
        MPI_Win_unlock(0, win);
      };
      accumulate();  // warm-up
      double t0 = now();
      for (std::size_t i = 0; i < iters; ++i) accumulate();
      row(out, "mpi_rma", "accumulate", bytes, iters, now() - t0);
      t0 = now();
      for (std::size_t i = 0; i < iters; ++i) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        MPI_Get(mine.data(), n, MPI_FLOAT, 0, 0, n, MPI_FLOAT, win);
        MPI_Win_unlock(0, win);
      }
      row(out, "mpi_rma", "get", bytes, iters, now() - t0);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_free(&win);
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i], value = argv[i + 1];
    if (key == "--reps") a.reps = std::atoi(value.c_str());
    else if (key == "--max-bytes") a.max_bytes = std::strtoull(value.c_str(), nullptr, 10);
    else if (key == "--out") a.out = value;
    else {
      std::fprintf(stderr, "usage: mpirun -np 2 %s [--reps N] [--max-bytes B] [--out FILE]\n", argv[0]);
      return 2;
    }
  }
  const char* rank_text = std::getenv("OMPI_COMM_WORLD_RANK");
  const bool writer = rank_text != nullptr && std::string(rank_text) == "1";  // rank 1 measures
  std::FILE* out = !writer ? std::fopen("/dev/null", "w") : a.out.empty() ? stdout : std::fopen(a.out.c_str(), "w");
  if (out == nullptr) return 1;
  if (writer) std::fprintf(out, "impl,op,bytes,iterations,seconds_per_op,GBps\n");
  for (int rep = 0; rep < a.reps; ++rep) {
    fast_side(a, out);  // initialises MPI (MPI_THREAD_MULTIPLE) the first time
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
      std::fprintf(stderr, "%s: run it with mpirun -np 2\n", argv[0]);
      return 2;
    }
    rma_side(a, rank, out);
  }
  if (out != stdout) std::fclose(out);
  return 0;
}
