#pragma once
// Ping-pong between two processes (benchmark (e), latency part): rank 0 sends B bytes to rank 1,
// which sends them back; after `warmup` untimed round trips, `iters` round trips are timed on
// rank 0, and one_way = round trip / 2. The same method for FAST (pingpong_fast.cpp, under
// `fast launch -n 2`) and MPI (pingpong_mpi.cpp, MPI_Send/MPI_Recv under mpirun -np 2).
// Arguments: --sizes B1,B2,... (bytes, default 4096,1048576), --iters N (default 2000 for sizes
// up to 64 KiB, a tenth above), --warmup N (default 100), --label NAME, --out FILE (CSV; rank 0).
// CSV columns: impl,bytes,iters,one_way_us.

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace bench {

struct PingpongArgs {
  std::vector<std::size_t> sizes{4096, std::size_t{1} << 20};
  std::size_t iters = 0;  // 0: by size
  std::size_t warmup = 100;
  std::string label = "fast";
  std::string out;
};

inline std::size_t iters_for(const PingpongArgs& a, std::size_t bytes) {
  if (a.iters > 0) return a.iters;
  return bytes <= (std::size_t{64} << 10) ? 2000 : 200;
}

inline PingpongArgs parse_pingpong(int argc, char** argv) {
  PingpongArgs a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i], v = argv[i + 1];
    if (key == "--sizes") {
      a.sizes.clear();
      for (std::size_t at = 0; at < v.size();) {
        const std::size_t comma = v.find(',', at);
        a.sizes.push_back(std::strtoull(v.substr(at, comma - at).c_str(), nullptr, 10));
        at = comma == std::string::npos ? v.size() : comma + 1;
      }
    } else if (key == "--iters") {
      a.iters = std::strtoull(v.c_str(), nullptr, 10);
    } else if (key == "--warmup") {
      a.warmup = std::strtoull(v.c_str(), nullptr, 10);
    } else if (key == "--label") {
      a.label = v;
    } else if (key == "--out") {
      a.out = v;
    } else {
      std::fprintf(stderr, "%s: unknown option %s (--sizes, --iters, --warmup, --label, --out)\n", argv[0],
                   key.c_str());
      std::exit(2);
    }
  }
  for (std::size_t b : a.sizes)
    if (b == 0 || b % 4 != 0) {
      std::fprintf(stderr, "%s: --sizes: expected positive multiples of 4 bytes, got %zu\n", argv[0], b);
      std::exit(2);
    }
  return a;
}

}  // namespace bench
