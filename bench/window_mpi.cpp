// Benchmark (h): one-sided window operations under `mpirun -np 2`: FAST's Window over the `mpi`
// runtime, both ways (fast_window_service: a service activity of the owner answering
// point-to-point requests; fast_window_rma: the runtime's one-sided memory on MPI RMA, the
// default), against MPI RMA called directly with a passive target, in the same processes,
// alternating. Rank 1 issues the operations
// on rank 0's tensor; each operation is complete at the target when timed (FAST: its Work; MPI:
// MPI_Win_unlock). Two RMA variants:
//   mpi_rma_allocate  the best case: memory from MPI_Win_allocate (on one host OpenMPI's `osc sm`,
//                     plain loads and stores), a shared lock, MPI_Accumulate(MPI_SUM) or MPI_Get;
//   mpi_rma_create    what a FAST window on RMA would have to do: it exposes the caller's memory
//                     (MPI_Win_create), and its operations are atomic as a whole and count a
//                     version: an exclusive lock, MPI_Get, MPI_Win_flush, the sum formed at the
//                     requester, MPI_Put, MPI_Fetch_and_op on a version window, MPI_Win_unlock
//                     (get: a shared lock, MPI_Get and the version read, as the windows since 818b4d1).
// --owner idle: rank 0 waits in MPI (FAST: in a receive) meanwhile; --owner busy: rank 0's thread
// computes without calling MPI (as a training worker does), looking for the end every 10 ms.
// Prints CSV: impl,op,bytes,iterations,seconds_per_op,GBps. Decides where the mpi runtime's windows
// belong (docs/benchmarks.md, (h)).
//
// usage: mpirun -np 2 bench_window_mpi [--reps N] [--max-bytes B] [--owner idle|busy] [--out FILE]

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
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
  bool busy_owner = false;
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

// The timed part of every variant: for each size, accumulate(n) once to warm up, then `iterations`
// accumulate(n) and `iterations` get(n) (n: floats), each complete when it returns, one CSV row each.
template <typename Accumulate, typename Get>
void sweep(const Args& a, std::FILE* out, const char* impl, Accumulate&& accumulate, Get&& get) {
  for (const std::size_t bytes : sizes(a)) {
    const std::size_t n = bytes / sizeof(float), iters = iterations(bytes);
    accumulate(n);  // warm-up
    double t0 = now();
    for (std::size_t i = 0; i < iters; ++i) accumulate(n);
    row(out, impl, "accumulate", bytes, iters, now() - t0);
    t0 = now();
    for (std::size_t i = 0; i < iters; ++i) get(n);
    row(out, impl, "get", bytes, iters, now() - t0);
  }
}

// Computes (no MPI call) for `seconds`.
void spin(double seconds) {
  volatile double x = 1;
  const double until = now() + seconds;
  while (now() < until)
    for (int i = 0; i < 1000; ++i) x = x * 1.0000001 + 1e-9;
}

// Rank 0 until rank 1 sends the end (tag 7 of MPI_COMM_WORLD): waiting in MPI, or computing.
void owner_waits(const Args& a) {
  int end = 0, flag = 0;
  MPI_Request r;
  MPI_Irecv(&end, 1, MPI_INT, 1, 7, MPI_COMM_WORLD, &r);
  if (!a.busy_owner) {
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    return;
  }
  while (flag == 0) {
    spin(0.01);
    MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
  }
}

void end_owner() {
  int end = 1;
  MPI_Send(&end, 1, MPI_INT, 0, 7, MPI_COMM_WORLD);
}

// FAST: a Window over the mpi runtime, its windows on MPI RMA (`windows` = "rma", the default) or
// on the owner's service; rank 1 accumulates into and gets from rank 0's tensor.
void fast_side(const Args& a, const std::string& windows, std::FILE* out) {
  const std::string impl = "fast_window_" + windows;
  fast::runtime::launch(
      {.runtime = "mpi", .op_timeout_seconds = 600, .windows = windows}, [&](fast::runtime::Context& ctx) {
        fast::collective::Communicator comm(ctx);
        std::vector<float> exposed(a.max_bytes / sizeof(float)), mine(a.max_bytes / sizeof(float), 1.0f);
        fast::collective::Window window(comm, "bench", fast::core::MutableView(std::span<float>(exposed)));
        if (ctx.rank() == 1) {
          sweep(
              a, out, impl.c_str(),
              [&](std::size_t n) {
                window.accumulate(0, fast::core::ConstView(std::span<const float>(mine.data(), n))).wait();
              },
              [&](std::size_t n) { window.get(0, fast::core::MutableView(std::span<float>(mine.data(), n))).wait(); });
          ctx.send(0, fast::runtime::make_tag(fast::runtime::TagKind::user, 1, 0), {}).wait();
        } else {
          fast::core::Work done =
              ctx.recv(1, fast::runtime::make_tag(fast::runtime::TagKind::user, 1, 0), fast::core::MutableView());
          while (a.busy_owner ? !done.is_completed() : !done.wait(1.0)) {
            if (a.busy_owner) spin(0.01);
          }
          done.wait();
        }
        window.close();
      });
}

// MPI RMA, passive target, best case: memory from MPI_Win_allocate, a shared lock per operation.
void rma_allocate_side(const Args& a, int rank, std::FILE* out) {
  float* base = nullptr;
  MPI_Win win;
  MPI_Win_allocate(static_cast<MPI_Aint>(a.max_bytes), sizeof(float), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
  std::memset(base, 0, a.max_bytes);
  std::vector<float> mine(a.max_bytes / sizeof(float), 1.0f);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 1) {
    sweep(
        a, out, "mpi_rma_allocate",
        [&](std::size_t count) {
          const int n = static_cast<int>(count);
          MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
          MPI_Accumulate(mine.data(), n, MPI_FLOAT, 0, 0, n, MPI_FLOAT, MPI_SUM, win);
          MPI_Win_unlock(0, win);
        },
        [&](std::size_t count) {
          const int n = static_cast<int>(count);
          MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
          MPI_Get(mine.data(), n, MPI_FLOAT, 0, 0, n, MPI_FLOAT, win);
          MPI_Win_unlock(0, win);
        });
    end_owner();
  } else {
    owner_waits(a);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_free(&win);
}

// MPI RMA as a FAST window would use it: the caller's memory (MPI_Win_create), each operation
// atomic as a whole under an exclusive lock and counted in a version (a second window).
void rma_create_side(const Args& a, int rank, std::FILE* out) {
  std::vector<float> exposed(a.max_bytes / sizeof(float), 0.0f), mine(exposed.size(), 1.0f), sum(exposed.size());
  MPI_Win win, versions;
  MPI_Win_create(exposed.data(), static_cast<MPI_Aint>(a.max_bytes), sizeof(float), MPI_INFO_NULL, MPI_COMM_WORLD,
                 &win);
  std::uint64_t* version = nullptr;
  MPI_Win_allocate(sizeof(std::uint64_t), sizeof(std::uint64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &version, &versions);
  *version = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 1) {
    const std::uint64_t one = 1, none = 0;
    std::uint64_t seen = 0;
    auto count_version = [&](const std::uint64_t* add, MPI_Op op) {
      MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, versions);
      MPI_Fetch_and_op(add, &seen, MPI_UINT64_T, 0, 0, op, versions);
      MPI_Win_unlock(0, versions);
    };
    sweep(
        a, out, "mpi_rma_create",
        [&](std::size_t count) {
          const int n = static_cast<int>(count);
          MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
          MPI_Get(sum.data(), n, MPI_FLOAT, 0, 0, n, MPI_FLOAT, win);
          MPI_Win_flush(0, win);
          for (std::size_t i = 0; i < count; ++i) sum[i] += mine[i];
          MPI_Put(sum.data(), n, MPI_FLOAT, 0, 0, n, MPI_FLOAT, win);
          count_version(&one, MPI_SUM);
          MPI_Win_unlock(0, win);
        },
        [&](std::size_t count) {
          const int n = static_cast<int>(count);
          MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
          MPI_Get(sum.data(), n, MPI_FLOAT, 0, 0, n, MPI_FLOAT, win);
          count_version(&none, MPI_NO_OP);
          MPI_Win_unlock(0, win);
        });
    end_owner();
  } else {
    owner_waits(a);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_free(&versions);
  MPI_Win_free(&win);
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i], value = argv[i + 1];
    if (key == "--reps")
      a.reps = std::atoi(value.c_str());
    else if (key == "--max-bytes")
      a.max_bytes = std::strtoull(value.c_str(), nullptr, 10);
    else if (key == "--out")
      a.out = value;
    else if (key == "--owner" && (value == "idle" || value == "busy"))
      a.busy_owner = value == "busy";
    else {
      std::fprintf(stderr, "usage: mpirun -np 2 %s [--reps N] [--max-bytes B] [--owner idle|busy] [--out FILE]\n",
                   argv[0]);
      return 2;
    }
  }
  const char* rank_text = std::getenv("OMPI_COMM_WORLD_RANK");
  const bool writer = rank_text != nullptr && std::string(rank_text) == "1";  // rank 1 measures
  std::FILE* out = !writer ? std::fopen("/dev/null", "w") : a.out.empty() ? stdout : std::fopen(a.out.c_str(), "w");
  if (out == nullptr) return 1;
  if (writer) std::fprintf(out, "impl,op,bytes,iterations,seconds_per_op,GBps\n");
  for (int rep = 0; rep < a.reps; ++rep) {
    fast_side(a, "service", out);  // initialises MPI (MPI_THREAD_MULTIPLE) the first time
    fast_side(a, "rma", out);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
      std::fprintf(stderr, "%s: run it with mpirun -np 2\n", argv[0]);
      return 2;
    }
    rma_allocate_side(a, rank, out);
    rma_create_side(a, rank, out);
  }
  if (out != stdout) std::fclose(out);
  return 0;
}
