#pragma once
// Evaluator: one evaluation round of a distributed run (collective: every worker calls run() at
// the same step). It measures how far the replicas are apart and scores the representative model:
//
//   consensus distance  (1/W) sum_i ||x_i - xbar||^2, xbar the average replica (0, without any
//                       communication, for strategies whose replicas are identical)
//   replica accuracies  each replica on the whole test set (skipped when replicas are identical:
//                       then they all equal the representative's); min, max and the best rank
//   representative      per FinalModel: `average` (the strategy's representative, by default the
//                       consensus average), `rank0` (worker 0's replica), `best` (the replica with
//                       the highest test accuracy, lowest rank on ties)
//   its test score      each worker scores an equal slice of the test set; the sums are all-reduced
//
// Every collective part runs among the communicator's group (after Worker::finish of an
// asynchronous strategy, the surviving workers): averages, spreads and test-set slices are over
// its members; `rank0` then means the lowest-ranked member.
//
// One per worker; not thread-safe. The replica's parameters are unchanged by run().

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "fast/adapters/torch/evaluate.hpp"
#include "fast/adapters/torch/fashion_mnist.hpp"
#include "fast/adapters/torch/replica.hpp"
#include "fast/strategy/worker.hpp"

namespace fast::torch {

enum class FinalModel { average, rank0, best };

// "average" | "rank0" | "best"; InvalidArgument listing them otherwise.
FinalModel parse_final_model(const std::string& name);
std::vector<std::string> final_model_names();

struct RoundResult {
  EvalResult representative;      // the representative model on the whole test set
  double consensus_distance = 0;  // mean squared distance of the replicas to their average
  double replica_accuracy_min = 0;
  double replica_accuracy_max = 0;
  int representative_rank = -1;  // the replica chosen (rank0, best), -1 for the average
};

class Evaluator {
 public:
  // private_compute: scoring `model` draws nothing from libtorch's process-wide generator, so the
  // worker's own passes of a round (the consensus distance, the scoring of its slice) may run as
  // computations of no simulated time (runtime::Context::compute_overlapped): under sim beside the
  // other workers', on the compute threads. Otherwise they run inline, one worker after another.
  Evaluator(strategy::Worker& worker, Replica& replica, Model& model, std::shared_ptr<const Dataset> test,
            FinalModel final_model, bool private_compute = false);

  // Collective round (above). With replica_accuracies = false (mid-run evaluations), each replica
  // is not scored on the whole test set (min/max left at -1), unless `best` needs it. A round
  // comes between two steps (mid-run, of a lockstep run) or after the last, where the replica's
  // gradient is not needed (the next step writes it afresh: ModelSide::gradient zeroes it first):
  // the gradient holds the representative where that is not the replica itself (a model-sized
  // buffer fewer per worker, on every worker at once: a gigabyte at 1,024 simulated mlp workers).
  // The gradient is overwritten.
  RoundResult run(bool replica_accuracies = true);
  // Not collective, for asynchronous strategies mid-run: scores Worker::snapshot() (the current
  // representative) on the whole test set and reports the published replicas' consensus
  // distance. Replica accuracies are not measured (left at -1): that would take every worker.
  RoundResult snapshot_round();
  // The representative model of the last run() or snapshot_round() (empty before the first and
  // after release_representative()): this worker's own parameters where the strategy's
  // representative is them (read in place, no copy).
  std::span<const float> representative() const noexcept;
  // The L2 norm of representative() (core::sum_of_squares), computed as the round's own passes
  // are (private_compute: under sim beside the other workers', on the compute threads).
  double representative_norm();
  // Forgets the last round's representative and frees its buffer where it has one of its own
  // (snapshot_round's: a model-sized block per worker, which under sim would otherwise stay on
  // every worker from one evaluation to the next). For a caller done with representative() until
  // the next round, and before the gradient that holds run()'s is written again.
  void release_representative();

 private:
  EvalResult score_sliced(std::span<float> candidate);
  // Runs `work` (this worker's own memory only) as private_compute says.
  void compute(const std::function<void()>& work);

  strategy::Worker& worker_;
  Replica& replica_;
  Model& model_;
  std::shared_ptr<const Dataset> test_;
  FinalModel final_;
  // The buffer of a round's representative that is not the replica itself: the replica's
  // gradient (run()), or representative_ where the gradient's length differs.
  std::span<float> representative_buffer();

  std::vector<float> representative_;
  bool in_place_ = false;  // the last run()'s representative is the replica's parameters
  bool in_grads_ = false;  // the last run()'s representative is in the replica's gradient
  bool private_compute_;
};

}  // namespace fast::torch
