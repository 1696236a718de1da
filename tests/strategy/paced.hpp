#pragma once
// A paced training loop for asynchronous strategies on the quadratic problem (quadratic.hpp):
// in each round, worker w takes steps_per_round[w] steps (free interleaving with the others),
// then every worker meets at a barrier of the Worker's communicator. The barrier bounds how far
// apart the workers drift in one round, so results do not depend on the thread scheduler (a
// worker cannot run all its steps before another starts), while unequal steps_per_round make
// workers take different numbers of steps, as a straggler does. Outside step(): the strategies
// themselves never wait for other workers.
//
// With unequal step rates, an asynchronous method whose communication conserves the sum of the
// replicas weights worker w's objective by its step rate, so the replicas tend (as the learning
// rate vanishes) to the weighted optimum sum_w s_w c_w / sum_w s_w, not the plain mean of the
// centres.

#include <cstdint>
#include <span>
#include <vector>

#include "fast/strategy/worker.hpp"
#include "quadratic.hpp"

namespace fast::strategy::testing {

struct Pacing {
  std::vector<int> steps_per_round;  // one entry per worker
  int rounds = 1;

  std::int64_t total_steps(int worker) const {
    return static_cast<std::int64_t>(steps_per_round[static_cast<std::size_t>(worker)]) * rounds;
  }
  // Coordinate i of sum_w s_w c_w / sum_w s_w.
  double weighted_optimum(std::size_t i) const {
    double num = 0, den = 0;
    for (std::size_t w = 0; w < steps_per_round.size(); ++w) {
      num += steps_per_round[w] * centre(static_cast<int>(w), i);
      den += steps_per_round[w];
    }
    return num / den;
  }
};

// Runs the paced loop on this worker: gradient of its quadratic at x, then worker.step().
inline void run_paced(Worker& worker, const Pacing& pacing, std::span<float> x, std::span<float> g) {
  const int r = worker.communicator().rank();
  for (int round = 0; round < pacing.rounds; ++round) {
    for (int k = 0; k < pacing.steps_per_round[static_cast<std::size_t>(r)]; ++k) {
      gradient(r, x, g);
      worker.step();
    }
    worker.communicator().barrier();
  }
}

}  // namespace fast::strategy::testing
