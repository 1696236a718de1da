#pragma once
// Strategy `allreduce`: synchronous data parallelism. Each step every worker's gradient is
// averaged with a ring all-reduce, then every worker applies the same optimizer step, so replicas
// stay identical (the FAST proposal, Statement 1: with synchronous delivery of every update, replicas are
// consistent; with W workers of batch b it is mini-batch SGD with batch W*b).
//
//   g = (1/W) sum_w g_w ;  params <- optimizer(params, g, lr)
//
// Cost per step: 2 (W-1)/W * |g| bytes sent per worker; waits for the slowest worker.
// With compress (docs/compression.md): the average goes through collective::CodecAllreduce with
// error feedback on each worker's gradient; replicas stay identical (every worker decodes the
// same messages in the same order).
// With dgc (compress::Dgc): each worker's gradient first goes through DGC's clipping, weight decay
// and momentum correction at the step's learning rate; the codec sends the top of the accumulated
// updates at the step's density; the average of the messages is applied with plain SGD at rate 1
// (dgc_update_optimizer).
//
// On a lost peer: the strategy is synchronous (every step waits for every worker), so it cannot
// go on; the launcher ends the run at once with the lost worker's PeerLost (fast exits with 3).
// In an elastic group (docs/faults.md, "Elastic synchronous training") the survivors regroup and
// go on, with a codec and dgc too (not with a robust aggregate): the survivors of a loss and an
// admitted worker forget their residuals and DGC's velocity (forget_own_state()).

#include <memory>

#include "fast/collective/codec_allreduce.hpp"
#include "fast/strategy/aggregate.hpp"
#include "fast/strategy/strategy.hpp"

namespace fast::strategy {

class AllreduceStrategy final : public Strategy {
 public:
  AllreduceStrategy(const StrategyOptions& options, collective::Communicator& comm);
  std::string_view name() const override { return "allreduce"; }
  StepOutcome step(const StepInput& input) override;
  // Replicas are identical: the representative model is this worker's own parameters; with DGC's
  // local view (dgc_local_view), the shared parameters x every worker holds, while each worker's
  // parameters are its own view x - v (compress::Dgc), so the replicas differ.
  void representative(ModelState state, std::span<float> out) override;
  std::span<const float> representative_in_place(ModelState state) const override;
  bool replicas_identical() const override;
  bool steps_worker_optimizer() const override { return !dgc_; }  // with dgc: dgc_update_
  std::size_t state_bytes() const override { return dgc_ ? dgc_->state_bytes() : 0; }  // DGC's u (and x)
  // With the local view, writes x back into the worker's parameters: after finish() they are the
  // shared model, identical on every worker (as without it).
  void finish(ModelState state) override;
  // Builds the codec's all-reduce (when compress is not "none") with the model's layout.
  void attach(ModelState state) override;
  // Elastic groups. forget_own_state: the error-feedback residuals
  // (CodecAllreduce::forget_residuals) and DGC's velocity start afresh and, with the local view,
  // the parameters become the shared x. regrouped: DGC's clipping bound follows the group's size.
  // The all-reduce follows the new members by itself.
  void forget_own_state(ModelState state) override;
  void regrouped(ModelState state) override;
  // Checkpoints: the codec's all-reduce ("allreduce.codec...": error-feedback residuals, random
  // stream, PowerSGD's Q) and DGC's velocity and update optimizer ("allreduce.dgc..."); nothing
  // without a codec. restore_state: after attach(), before the first step.
  void save_state(Checkpoint& out) override;
  void restore_state(const Checkpoint& checkpoint, std::string_view source, ModelState state) override;

 private:
  StepOutcome dgc_step(const StepInput& input, double t0);
  // A robust aggregate by slices of the coordinates: an all-to-all, the rule on one slice (krum:
  // with the distances summed over the slices by an all-reduce), an all-gather.
  void robust_aggregate(std::span<float> grads);

  StrategyOptions options_;
  std::unique_ptr<collective::CodecAllreduce> reduce_;  // with a codec
  std::unique_ptr<compress::Dgc> dgc_;                  // with dgc
  std::unique_ptr<optim::Optimizer> dgc_update_;        // with dgc: plain SGD
  bool finished_ = false;                               // finish() ran
  Aggregate aggregate_;                                 // mean: the ring all-reduce
  // Robust aggregate buffers, W x ceil(n / W) floats, kept across steps: the padded gradient (then
  // this worker's slice result), my slice of every gradient (then every slice result); krum's W x W.
  std::vector<float> padded_;
  std::vector<float> gathered_;
  std::vector<double> distances_;
};

}  // namespace fast::strategy
