#pragma once
// Strategy `local-sgd`: periodic model averaging (Stich 2019 "Local SGD converges fast and
// communicates little"; SparkNet's and the taxonomy sec. 3.4's "model averaging"). Each worker runs
// its own optimizer on its own mini-batches and, every `period` steps, the replicas are replaced
// by their average:
//
//   x_i <- optimizer(x_i, g_i, lr)                    every step, locally
//   x_i <- (1/W) sum_j x_j   when (t + 1) mod period == 0     (ring all-reduce of the parameters)
//
// The first `sync_warmup` steps are synchronous gradient averaging (as `allreduce`), which helps
// early training where replicas drift fastest. Optimizer state (momentum, Adam moments) stays
// local. Communication is 1/period of `allreduce`'s; replicas differ between averagings, so the
// representative model is their average. With period = 1 and plain SGD it is `allreduce`.
// With compress: the averaging sends the change since the last average, x_i - a (a: the last
// average, identical on every worker), through collective::CodecAllreduce with error feedback:
// x_i <- a + avg_j(x_j - a) as decoded, the same on every worker; warm-up gradients likewise.
//
// On a lost peer: the averaging all-reduce needs every worker, so the run cannot go on; the
// launcher ends it at once with the lost worker's PeerLost. In an elastic group (docs/faults.md,
// "Elastic synchronous training") the survivors regroup and go on, with a codec too: the first
// step (step 0) averages the initial replicas among the members then, before its local update
// (its gradient is taken at the worker's own initial replica), and the survivors of a loss and an
// admitted worker forget the codec's residuals (forget_own_state()).

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "fast/collective/codec_allreduce.hpp"
#include "fast/strategy/strategy.hpp"

namespace fast::strategy {

class LocalSgdStrategy final : public Strategy {
 public:
  // InvalidArgument when period < 1 or sync_warmup < 0.
  LocalSgdStrategy(const StrategyOptions& options, collective::Communicator& comm);
  std::string_view name() const override { return "local-sgd"; }
  StepOutcome step(const StepInput& input) override;
  // The averaging steps after the warm-up: the local update, then the averaging. Warm-up steps
  // average gradients before the update; the other steps have no collective.
  // With a codec in an elastic group, step 0 too (it averages the initial replicas first).
  bool changes_state_before_last_collective(std::int64_t step) const override {
    return (step >= options_.sync_warmup && (step + 1) % options_.period == 0) || averages_initial_replicas(step);
  }
  // With a codec: the codec's all-reduce and the first anchor a (the average of the initial
  // replicas, which the parameters become; in an elastic group, at step 0 instead).
  void attach(ModelState state) override;
  // Elastic groups: with a codec, the residuals start afresh (as allreduce's).
  void forget_own_state(ModelState state) override;
  // With a codec: the last average (anchor).
  std::size_t state_bytes() const override { return bytes_of(anchor_); }
  // Checkpoints with a codec: the anchor a ("local_sgd.anchor") and the codec's all-reduce
  // ("local_sgd.codec..."); nothing without one. restore_state: after attach(), before the first step.
  void save_state(Checkpoint& out) override;
  void restore_state(const Checkpoint& checkpoint, std::string_view source, ModelState state) override;

 private:
  // anchor_ = params = the members' average of params (collective).
  void average_initial_replicas(std::span<float> params);
  // Whether step `step` starts by averaging the initial replicas (a codec, an elastic group, step 0).
  bool averages_initial_replicas(std::int64_t step) const;

  StrategyOptions options_;
  std::unique_ptr<collective::CodecAllreduce> reduce_;  // with a codec
  std::vector<float> anchor_;                           // with a codec: the last average
  std::vector<float> delta_;
};

}  // namespace fast::strategy
