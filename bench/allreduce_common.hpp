#pragma once
// Shared by bench/allreduce_fast.cpp, bench/allreduce_mpi.cpp and bench/allreduce_mpi_paired.cpp so
// every side uses exactly the same message sizes, iteration policy, measurement (time_size),
// bandwidth formulas and CSV format. No FAST or MPI includes here.
//
// Measurement (every program): for each message size, `warmup` untimed all-reduces, a barrier,
// then `iters` timed all-reduces back to back on every rank; a rank's time is (t_end - t_start) /
// iters; the reported time is the maximum over ranks (the slowest rank bounds a collective).
//   algbw = bytes / time                     (GB/s, 1 GB = 1e9 bytes)
//   busbw = algbw * 2 (n - 1) / n            (nccl-tests convention for all-reduce)

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace bench {

struct AllreduceArgs {
  std::size_t min_bytes = std::size_t{4} << 10;   // 4 KiB
  std::size_t max_bytes = std::size_t{64} << 20;  // 64 MiB
  std::size_t factor = 4;                         // sizes: min, min*factor, ... <= max
  // Iterations per size: clamp(budget_bytes / bytes, min_iters, max_iters).
  std::size_t budget_bytes = std::size_t{1} << 30;
  std::size_t min_iters = 10;
  std::size_t max_iters = 2000;
  std::size_t warmup = 3;                                 // untimed iterations per size (at least 1 is always run)
  std::vector<std::size_t> chunks{std::size_t{4} << 20};  // FAST only (the library default)
  std::vector<int> ranks{2, 4};                           // FAST only (MPI: from mpirun -np)
  std::string label;                                      // impl column of the CSV; "": fast / mpi
  std::string runtime = "threads";              // FAST only: threads | zmq (under fast launch) | mpi (under mpirun)
  std::string collectives;                      // FAST only, mpi: fast | native (empty: the runtime's default)
  std::vector<std::string> algorithms{"auto"};  // FAST only: allreduce algorithms (allreduce_algorithm names)
  bool shared_memory = true;  // FAST only: CommunicatorOptions::shared_memory (--shared-memory on|off)
};

inline std::vector<std::size_t> sizes(const AllreduceArgs& a) {
  std::vector<std::size_t> out;
  for (std::size_t b = a.min_bytes; b <= a.max_bytes; b *= a.factor) out.push_back(b);
  return out;
}

inline std::size_t iterations(const AllreduceArgs& a, std::size_t bytes) {
  return std::clamp(a.budget_bytes / std::max<std::size_t>(bytes, 1), a.min_iters, a.max_iters);
}

inline double busbw_factor(int n) { return n <= 1 ? 0.0 : 2.0 * (n - 1) / n; }

// What one rank measured for one message size.
struct SizeTiming {
  double seconds = 0;  // this rank's time per timed all-reduce (the caller takes the maximum over ranks)
  std::size_t iters = 0;
  bool wrong = false;  // the checked all-reduce returned something other than n(n+1)/2 somewhere
};

// The measurement of one message size, shared by every all-reduce program of bench/ (see the top of
// this file): on `count` floats at `data`, one checked all-reduce (rank r gives r+1; every element
// must come back as n(n+1)/2), then zero-fill (no overflow, no denormals), `warmup - 1` more untimed
// all-reduces, `barrier()`, and `iterations(a, bytes)` timed ones back to back (steady_clock).
// `allreduce(data, count)` reduces in place (sum) over all n ranks; every rank calls this alike.
template <typename Allreduce, typename Barrier>
SizeTiming time_size(const AllreduceArgs& a, float* data, std::size_t count, int rank, int n, Allreduce&& allreduce,
                     Barrier&& barrier) {
  SizeTiming t;
  std::fill(data, data + count, static_cast<float>(rank + 1));
  allreduce(data, count);
  const float expect = static_cast<float>(n * (n + 1) / 2);
  t.wrong = std::any_of(data, data + count, [&](float x) { return x != expect; });
  std::fill(data, data + count, 0.0f);
  for (std::size_t i = 1; i < a.warmup; ++i) allreduce(data, count);
  t.iters = iterations(a, count * sizeof(float));
  barrier();
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < t.iters; ++i) allreduce(data, count);
  t.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / static_cast<double>(t.iters);
  return t;
}

inline const char* csv_header() { return "impl,ranks,bytes,chunk_bytes,iters,time_us,algbw_GBps,busbw_GBps"; }

inline void print_row(std::FILE* f, const char* impl, int ranks, std::size_t bytes, std::size_t chunk,
                      std::size_t iters, double seconds) {
  const double algbw = static_cast<double>(bytes) / seconds / 1e9;
  std::fprintf(f, "%s,%d,%zu,%zu,%zu,%.3f,%.4f,%.4f\n", impl, ranks, bytes, chunk, iters, seconds * 1e6, algbw,
               algbw * busbw_factor(ranks));
  std::fflush(f);
}

[[noreturn]] inline void usage(const char* prog, const char* msg) {
  std::fprintf(stderr,
               "%s: %s\n"
               "usage: %s [--min-bytes B] [--max-bytes B] [--factor F] [--budget-bytes B] [--min-iters N]\n"
               "          [--max-iters N] [--warmup N] [--chunks B,B,...] [--ranks N,N,...] [--runtime "
               "threads|zmq|mpi] [--collectives fast|native] [--label NAME]\n"
               "          [--shared-memory on|off]\n"
               "          [--algorithms auto,ring,recursive-doubling,halving-doubling,tree]\n"
               "          [--out FILE.csv]\n"
               "  sizes accept suffixes K, M (KiB, MiB); --chunks, --ranks, --runtime, --collectives, --algorithms and "
               "--shared-memory are for the FAST program only;\n"
               "  FAST's rows are labelled fast-ALGORITHM, or fast (the label) for auto, the automatic choice, whose\n"
               "  pick is printed to stderr; only the ring runs every --chunks value, the others the default 4 MiB.\n",
               prog, msg, prog);
  std::exit(2);
}

inline std::size_t parse_size(const char* prog, const std::string& s) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  std::size_t mult = 1;
  if (end && *end == 'K')
    mult = std::size_t{1} << 10, ++end;
  else if (end && *end == 'M')
    mult = std::size_t{1} << 20, ++end;
  if (end == s.c_str() || (end && *end != '\0') || v == 0) usage(prog, ("bad size '" + s + "'").c_str());
  return static_cast<std::size_t>(v) * mult;
}

template <typename T, typename Parse>
std::vector<T> parse_list(const std::string& s, Parse parse) {
  std::vector<T> out;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    const std::size_t comma = s.find(',', pos);
    const std::string item = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    out.push_back(parse(item));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

// Parses argv; returns the --out path ("" = stdout).
inline std::string parse_args(int argc, char** argv, AllreduceArgs& a) {
  std::string out;
  const char* prog = argv[0];
  for (int i = 1; i < argc; ++i) {
    const std::string key = argv[i];
    if (key == "-h" || key == "--help") usage(prog, "all-reduce bus bandwidth benchmark");
    if (i + 1 >= argc) usage(prog, ("missing value after " + key).c_str());
    const std::string v = argv[++i];
    if (key == "--min-bytes")
      a.min_bytes = parse_size(prog, v);
    else if (key == "--max-bytes")
      a.max_bytes = parse_size(prog, v);
    else if (key == "--factor")
      a.factor = parse_size(prog, v);
    else if (key == "--budget-bytes")
      a.budget_bytes = parse_size(prog, v);
    else if (key == "--min-iters")
      a.min_iters = parse_size(prog, v);
    else if (key == "--max-iters")
      a.max_iters = parse_size(prog, v);
    else if (key == "--warmup")
      a.warmup = std::strtoull(v.c_str(), nullptr, 10);
    else if (key == "--chunks")
      a.chunks = parse_list<std::size_t>(v, [&](const std::string& s) { return parse_size(prog, s); });
    else if (key == "--ranks")
      a.ranks = parse_list<int>(v, [&](const std::string& s) { return static_cast<int>(parse_size(prog, s)); });
    else if (key == "--label")
      a.label = v;
    else if (key == "--runtime")
      a.runtime = v;
    else if (key == "--collectives")
      a.collectives = v;
    else if (key == "--shared-memory") {
      if (v != "on" && v != "off") usage(prog, "--shared-memory: expected on or off");
      a.shared_memory = v == "on";
    } else if (key == "--algorithms")
      a.algorithms = parse_list<std::string>(v, [](const std::string& s) { return s; });
    else if (key == "--out")
      out = v;
    else
      usage(prog, ("unknown option " + key).c_str());
  }
  if (a.factor < 2) usage(prog, "--factor must be >= 2");
  if (a.min_bytes % sizeof(float) != 0) usage(prog, "--min-bytes must be a multiple of 4");
  if (a.min_iters > a.max_iters) usage(prog, "--min-iters must be <= --max-iters");
  return out;
}

}  // namespace bench
