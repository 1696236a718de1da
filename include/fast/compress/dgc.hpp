#pragma once
// Deep Gradient Compression (Lin et al., "Deep Gradient Compression: reducing the communication
// bandwidth for distributed training", ICLR 2018), the worker's side: what turns a local gradient
// into the vector a sparsifying codec with error feedback (compress::ErrorFeedback) sends, and what
// is reset once it was sent. Strategies that send gradients (allreduce, ps) use it; the update they
// then apply is x <- x - G with G the average of the workers' sparse messages, because the
// momentum and the learning rate were applied here, before the sparsification.
//
// One step of worker w, with local gradient g, parameters x, N workers (docs/compression.md):
//   1. local gradient clipping (clip_norm C > 0): g <- g * min(1, (C / sqrt(N)) / ||g||_2)
//   2. weight decay:                            g <- g + lambda x
//   3. momentum correction:                     u <- m u + (1 - dampening) g   (u <- g at the first
//                                               step, as torch's SGD), a <- lr_t u, or
//                                               a <- lr_t (g + m u) (nesterov); with momentum 0, lr_t g
//   4. accumulation and sparsification, by ErrorFeedback around the codec: v <- v + a; the codec
//      sends s = topk(v) at this step's density; v <- v - s
//   5. momentum factor masking (masking = true): u_i <- 0 and v_i <- 0 wherever s_i != 0.
// The learning rate is applied in step 3, when the gradient is taken, not when its accumulation is
// sent: under a decaying schedule a coordinate sent many steps after its gradient arrived moves by
// the rate of the steps that computed it, as in dense momentum SGD (x <- x - lr_t u_t), and not by
// the smaller rate of the step that happened to send it.
// Without masking and at density 1 every a is sent whole, and the average of the workers' u is
// the momentum buffer dense momentum SGD keeps for the averaged gradient: DGC is then dense
// momentum SGD up to float rounding (tests/compress/dgc_test.cpp). Without masking, at any density
// and under any schedule, sum of the messages sent + v == sum of the a's (what dense momentum SGD
// would have applied), to float64 rounding.
//
// Local view (local_view = true; FAST's addition, not in the paper): the worker takes its gradient
// at x - v, the shared parameters x with its own updates not sent yet (the residual v) applied,
// instead of at x. Without it a coordinate's update waits in v for the steps until it is sent
// (about 1/density of them), and every gradient meanwhile is taken as if it had not happened. The
// strategy either writes the new shared parameters into the worker's parameters as before and calls
// view(), which keeps x here and writes x - v in their place (ps), or updates the kept x in place
// (shared()) and calls look(), which writes x - v (allreduce). The representative model is x
// (shared()): every worker holds the same x, which is what the messages built; x - v differs from
// worker to worker.
//
// Sparsity warm-up (warmup_steps T > 0): the density of step t < T decays exponentially from
// warmup_ratio (r0) to the codec's ratio (r): density(t) = r0^(1 - t/T) * r^(t/T); from step T on,
// r. With r0 <= r, or T = 0, every step has density r.
//
// Thread-safety: one Dgc per worker, used by one activity at a time. Owns its velocity u (n f32).

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace fast::core {
struct SavedState;  // fast/core/saved_state.hpp
}  // namespace fast::core

namespace fast::compress {

struct DgcOptions {
  double momentum = 0;            // m in [0, 1) (0: plain SGD, no velocity)
  double dampening = 0;           // in [0, 1]; must be 0 with nesterov
  bool nesterov = false;          // a = g + m u instead of u
  double weight_decay = 0;        // lambda >= 0, added to the (clipped) gradient
  double clip_norm = 0;           // C >= 0: global L2 bound, C / sqrt(workers) per worker; 0: no clipping
  int workers = 1;                // N >= 1
  bool masking = true;            // momentum factor masking
  double ratio = 0.01;            // the codec's keep ratio after the warm-up, in (0, 1]
  double warmup_ratio = 0.25;     // density at step 0 of the warm-up, in (0, 1]
  std::int64_t warmup_steps = 0;  // T >= 0 (0: no warm-up)
  bool local_view = false;        // the gradient at x - v (above)
};

class Dgc {
 public:
  // InvalidArgument naming the option, its range and the value for an option outside its range.
  Dgc(const DgcOptions& options, std::size_t numel);

  // The codec's keep ratio for step `step` (0-based), as above.
  double density(std::int64_t step) const;

  // Steps 1-3 in place: grads (this worker's gradient g, numel elements) becomes a, the update of
  // this step at learning rate lr (>= 0, finite: the schedule's rate of this step); params (x, numel
  // elements) is read for the weight decay. Returns false, leaving u unchanged and grads all zero
  // (nothing new to send), when g holds NaN or infinity; the caller decides what that means.
  // InvalidArgument for spans of another length or a bad lr.
  bool accumulate(std::span<float> grads, std::span<const float> params, double lr);

  // Step 5 for u: u_i <- 0 wherever sent[j] != 0, i = offset + j (sent: this worker's message, or
  // a slice of it starting at element offset). Nothing without masking. The caller clears v
  // (ErrorFeedback::clear_sent). InvalidArgument when the slice exceeds numel.
  void mask(std::span<const float> sent, std::size_t offset = 0);

  // Local view. view: params (a slice of the worker's parameters starting at element offset)
  // holds the new shared parameters x; keeps them, then does look(). look: writes the kept x minus
  // residual into params (residual: v of that slice, from the strategy's ErrorFeedback: the same
  // length, or empty, meaning 0: then params become x). Both InvalidArgument without local_view,
  // for a slice outside the numel elements, and (look) before anything was kept. shared(): the kept
  // x, n elements once the first view() ran (a strategy views the whole vector at attach() with an
  // empty residual), empty before; the strategy may update it in place.
  void view(std::span<float> params, std::span<const double> residual, std::size_t offset = 0);
  void look(std::span<float> params, std::span<const double> residual, std::size_t offset = 0) const;
  std::span<const float> shared() const noexcept { return shared_; }
  std::span<float> shared() noexcept { return shared_; }

  // u, the velocity (empty when momentum is 0).
  std::span<const float> velocity() const noexcept { return velocity_; }
  // Bytes of what DGC keeps from one step to the next: u and, with the local view, the kept x
  // (Strategy::state_bytes of the strategies that run it).
  std::size_t state_bytes() const noexcept { return (velocity_.size() + shared_.size()) * sizeof(float); }
  // Elastic runs (docs/faults.md, "Elastic synchronous training"). forget_velocity: u starts
  // afresh, as before the first accumulate() (which then sets u = a), for a worker that took
  // another's state; the kept x stays. set_workers: the clipping bound follows the group's size
  // (>= 1; InvalidArgument otherwise, and nothing changes).
  void forget_velocity() noexcept;
  void set_workers(int workers);
  // The factor the last accumulate() scaled the gradient by (1: not clipped).
  double last_clip_scale() const noexcept { return clip_scale_; }
  const DgcOptions& options() const noexcept { return options_; }

  // Checkpoints: u ("<prefix>.velocity", empty when momentum is 0), whether accumulate() has run
  // ("<prefix>.started") and the units of the residual v the strategy saves beside it
  // ("<prefix>.residual_units" = kResidualUnits: updates, the learning rate applied; a checkpoint
  // of an older FAST held gradients and has no such entry) and, once a local view is held,
  // x ("<prefix>.shared"; the worker's saved parameters are then x - v). restore takes them back
  // into a Dgc of the same options and size (IoError naming `source` otherwise, an older checkpoint
  // included; nothing changes then). A checkpoint with x resumed without local_view writes x into
  // params (the worker's parameters, restored before: they held x - v); one without x resumed with
  // local_view keeps params as x (they are x). The strategy then look()s again.
  static constexpr std::int64_t kResidualUnits = 1;
  void save(std::string_view prefix, core::SavedState& out) const;
  void restore(std::string_view prefix, const core::SavedState& in, std::string_view source, std::span<float> params);

 private:
  DgcOptions options_;
  std::size_t numel_;
  std::vector<float> velocity_;
  std::vector<float> shared_;  // x, with local_view once view() ran (n elements), else empty
  bool first_ = true;
  double clip_scale_ = 1;
};

}  // namespace fast::compress
