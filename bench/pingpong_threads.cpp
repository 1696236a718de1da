// Calibration microbenchmark: point-to-point latency and bandwidth of the `threads` runtime,
// measured by ping-pong between two workers (threads of one process), the way one worker's message
// reaches another in `fast train --runtime threads`. Used by experiments/calibrate.py to write a
// cluster file for the `sim` runtime (docs/simulation.md, "Validation").
//
// For each message size B (bytes of float32, from 4 B to --max-bytes, x2 each time): rank 0 sends B
// bytes to rank 1, which sends them back; after --warmup untimed round trips, --iters round trips
// are timed on rank 0; one_way(B) = round trip / 2. Ranks 0 and 1 are pinned to two different
// CPUs when the process may use two. The reported figures:
//   latency   = one_way(smallest size)                       (seconds)
//   bandwidth = B_max / (one_way(B_max) - latency)           (bytes/s)
// (experiments/calibrate.py fits its own figures to the per-size times.)
// --cold-mib M (default 256; 0 for the old, cache-hot measurement): each round trip sends from
// and receives into the next B-sized slot of a region of M MiB per rank, so messages are copied
// from and to memory that is not in the caches, as in a training run, where the model, gradients,
// optimizer state and activations of several workers evict each other (the hot figure, 39 GB/s
// on this machine when the two CPUs share caches, is the cache's speed, not a training run's).
// With --cold-mib > 0 it also measures the copy bandwidth of one core on cold memory: memcpy of
// 1 MiB blocks between rotating slots of two such regions ("copy_bandwidth_bytes_per_second",
// bytes copied per second), the figure of a cluster's hosts.memory_bandwidth (docs/clusters.md).
// Output: one line of JSON with these and the per-size one-way times ("sizes": [[B, seconds], ...]).

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <span>
#include <string>
#include <vector>

#include "fast/core/tensor_view.hpp"
#include "fast/runtime/threads/world.hpp"

namespace {

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Args {
  std::size_t max_bytes = std::size_t{16} << 20;
  int warmup = 20;
  int iters = 0;               // 0: 2000 for small messages, fewer for large ones (about 0.25 GB moved per size)
  std::size_t cold_mib = 256;  // 0: every round trip reuses the same buffer (cache-hot)
};

// Copy bandwidth of this core on cold memory: 1 MiB blocks between rotating slots of two regions
// of `mib` MiB (a stride that is not a power of two, so consecutive blocks are far apart).
double cold_copy_bandwidth(std::size_t mib) {
  const std::size_t block = std::size_t{1} << 20, slots = std::max<std::size_t>(mib, 2);
  std::vector<char> src(slots * block, 1), dst(slots * block, 0);
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const int n = 500;
    const double t0 = seconds_now();
    for (int i = 0; i < n; ++i) {
      const std::size_t a = (static_cast<std::size_t>(i) * 7919) % slots,
                        b = (static_cast<std::size_t>(i) * 104729 + 1) % slots;
      std::memcpy(dst.data() + b * block, src.data() + a * block, block);
    }
    best = std::max(best, static_cast<double>(n) * static_cast<double>(block) / (seconds_now() - t0));
  }
  if (dst[block / 2] != 1) std::abort();  // keeps the copies
  return best;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string key = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "usage: %s [--max-bytes B] [--warmup N] [--iters N] [--cold-mib M]\n", argv[0]);
      std::exit(2);
    }
    const std::string v = argv[++i];
    if (key == "--max-bytes")
      a.max_bytes = std::stoull(v);
    else if (key == "--warmup")
      a.warmup = std::stoi(v);
    else if (key == "--iters")
      a.iters = std::stoi(v);
    else if (key == "--cold-mib")
      a.cold_mib = std::stoull(v);
    else {
      std::fprintf(stderr, "%s: unknown option %s\n", argv[0], key.c_str());
      std::exit(2);
    }
  }
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  std::vector<std::size_t> sizes;
  for (std::size_t b = 4; b <= args.max_bytes; b *= 2) sizes.push_back(b);
  std::vector<double> one_way(sizes.size(), 0.0);
  try {
    fast::runtime::threads::World world({.size = 2, .op_timeout_seconds = 600});
    world.run([&](fast::runtime::Context& ctx) {
      const int r = ctx.rank();
      const int peer = 1 - r;
      // Rank r on CPU r (of the CPUs this process may use): the message crosses cores, as between
      // two workers that compute at the same time. Left to the scheduler, the two threads of a
      // ping-pong (only one runs at a time) often share a core, and the copy then runs from that
      // core's cache, many times faster than a copy between cores.
      cpu_set_t allowed;
      CPU_ZERO(&allowed);
      if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0 && CPU_COUNT(&allowed) >= 2) {
        int seen = 0;
        for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
          if (!CPU_ISSET(cpu, &allowed) || seen++ != r) continue;
          cpu_set_t one;
          CPU_ZERO(&one);
          CPU_SET(cpu, &one);
          pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
          break;
        }
      }
      // First touched by this thread. Cold: slots of max_bytes in a region of cold_mib MiB.
      const std::size_t slot = args.max_bytes / sizeof(float) + 1;
      const std::size_t slots = std::max<std::size_t>(1, (args.cold_mib << 20) / (slot * sizeof(float)));
      std::vector<float> buf(slot * slots, 1.0f);
      std::size_t next = 0;
      for (std::size_t k = 0; k < sizes.size(); ++k) {
        std::span<float> v;
        const int iters = args.iters > 0
                              ? args.iters
                              : static_cast<int>(std::clamp<std::size_t>((std::size_t{1} << 28) / sizes[k], 20, 2000));
        auto round_trip = [&] {
          // Both ranks step through their slots in the same order; 7919 is prime, so a region of
          // up to 7918 slots is walked through entirely before a slot repeats.
          v = std::span<float>(buf.data() + (next++ * 7919 % slots) * slot, sizes[k] / sizeof(float));
          if (r == 0) {
            ctx.send(peer, 1, fast::core::ConstView(std::span<const float>(v))).wait();
            ctx.recv(peer, 2, fast::core::MutableView(v)).wait();
          } else {
            ctx.recv(peer, 1, fast::core::MutableView(v)).wait();
            ctx.send(peer, 2, fast::core::ConstView(std::span<const float>(v))).wait();
          }
        };
        for (int i = 0; i < args.warmup; ++i) round_trip();
        const double t0 = seconds_now();
        for (int i = 0; i < iters; ++i) round_trip();
        const double t1 = seconds_now();
        if (r == 0) one_way[k] = (t1 - t0) / iters / 2;
      }
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
  const double copy_bandwidth = args.cold_mib > 0 ? cold_copy_bandwidth(args.cold_mib) : 0.0;
  const double latency = one_way.front();
  const double bandwidth = static_cast<double>(sizes.back()) / std::max(one_way.back() - latency, 1e-12);
  std::printf(
      "{\"impl\": \"threads_pingpong\", \"latency_seconds\": %.9g, \"bandwidth_bytes_per_second\": %.6g, "
      "\"cold_mib\": %zu, \"copy_bandwidth_bytes_per_second\": %.6g, \"sizes\": [",
      latency, bandwidth, args.cold_mib, copy_bandwidth);
  for (std::size_t k = 0; k < sizes.size(); ++k) std::printf("%s[%zu, %.9g]", k ? ", " : "", sizes[k], one_way[k]);
  std::printf("]}\n");
  return 0;
}
