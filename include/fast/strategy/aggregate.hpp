#pragma once
// Robust aggregation of the workers' gradients (StrategyOptions::aggregate; docs/faults.md): how W
// gradients become the one every replica applies, when some workers may send garbage.
//
//   mean            the average (what the ring all-reduce computes); one bad gradient moves it
//                   arbitrarily far
//   median          per coordinate, the median of the W values (the mean of the two middle ones
//                   when W is even); tolerates fewer than W / 2 bad workers
//   trimmed-mean:F  per coordinate, the mean of the W - 2F values left after dropping the F
//                   lowest and the F highest; needs W > 2F
//   krum:F          the one gradient whose squared distances to its W - F - 2 nearest others sum
//                   to the least (Blanchard et al., "Machine learning with adversaries: Byzantine
//                   tolerant gradient descent", NeurIPS 2017); needs W > 2F + 2
//   multi-krum:F[:M] the mean of the M gradients with the least Krum scores (the paper's
//                   Multi-Krum; ties: the lowest ranks), M in [1, W - F], default W - F; krum:F is
//                   multi-krum:F:1. Averaging M honest gradients keeps most of the mean's variance
//                   reduction where Krum applies one worker's gradient; needs W > 2F + 2
//
// Every rule but mean needs the W values of each coordinate in one place: `allreduce` cuts the
// coordinates into W slices (an all-to-all, the rule on one slice each, an all-gather), `ps` sync
// applies it on the servers. The result depends only on the W values in rank order, so replicas
// stay identical. Non-finite values: median and trimmed-mean order NaN after
// every number (so a NaN is trimmed like a very large value), krum gives a gradient with a
// non-finite value an infinite score (never chosen while a finite one exists).
//
// Thread-safety: an Aggregate is immutable after parse; apply() may run concurrently.

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace fast::core {
class SpecFamily;  // fast/core/spec.hpp
}  // namespace fast::core

namespace fast::strategy {

// The declarations of the rules and their keys (core/spec.hpp: positional syntax, ':' between F
// and M): what Aggregate::parse reads and `fast config-doc` documents.
const core::SpecFamily& aggregate_family();

enum class AggregateRule { mean, median, trimmed_mean, krum, multi_krum };

class Aggregate {
 public:
  // "mean" | "median" | "trimmed-mean:F" | "krum:F" | "multi-krum:F[:M]" for `workers` workers;
  // InvalidArgument as core/spec.hpp says ("aggregate spec '...': ...") for a malformed spec, and
  // naming the spec and the bounds on F and M for workers too few.
  static Aggregate parse(const std::string& spec, int workers);

  AggregateRule rule() const noexcept { return rule_; }
  int tolerated() const noexcept { return f_; }  // F (0 for mean and median)
  bool is_mean() const noexcept { return rule_ == AggregateRule::mean; }
  // krum and multi-krum: the rules that choose whole gradients by their Krum scores.
  bool by_krum_score() const noexcept { return rule_ == AggregateRule::krum || rule_ == AggregateRule::multi_krum; }
  int selected() const noexcept { return m_; }  // M: 1 for krum, the gradients multi-krum averages

  // `gradients`: W gradients of n floats each, worker w's at [w n, (w + 1) n); writes the
  // aggregate (n floats) to out. Returns, for krum and multi-krum, the index of the worker with the
  // least score (-1 otherwise).
  int apply(std::span<const float> gradients, int workers, std::span<float> out) const;

 private:
  AggregateRule rule_ = AggregateRule::mean;
  int f_ = 0;
  int m_ = 1;
};

// Krum in two parts, so that the distances can be summed over slices of the coordinates:
// krum_distances writes the W x W squared distances between the W rows of `gradients` (W rows of
// gradients.size() / W floats); krum_choice picks the worker whose W - F - 2 smallest distances
// sum to the least (a non-finite distance counts as infinite; ties: the lowest rank).
void krum_distances(std::span<const float> gradients, int workers, std::span<double> distances);
int krum_choice(std::span<const double> distances, int workers, int tolerated);
// The `count` workers with the least scores (as krum_choice; ties: the lowest ranks), in increasing
// rank order; the first of krum_choice's order is krum_choice.
std::vector<int> krum_selection(std::span<const double> distances, int workers, int tolerated, int count);
// out[i] = the mean of rows[r][i] over the selected rows r (W rows of out.size() floats in `rows`),
// summed in double in increasing rank order: the same bits on every worker.
void average_rows(std::span<const float> rows, std::span<const int> selected, std::span<float> out);

// Fault injection (StrategyOptions::fault_inject, for tests and demonstrations): "KIND@W1,W2,..."
// with KIND nan | zeros | scale:FACTOR makes workers W1, W2, ... replace their gradient, before
// every exchange, by NaNs, by zeros, or by FACTOR times itself. The testing aids of lost workers
// (docs/faults.md) make those workers' processes kill themselves (SIGKILL, kill_process()):
// exit-while-admitting in Worker::admit, right after the members agreed to admit a worker taken
// back and before they send it anything; exit-while-agreeing inside that agreement's all-gather,
// once its first message of it left, so that the all-gather completes on some members only (both:
// the Worker refuses them without an elastic Communicator); exit-while-checkpointing once its
// file of the first checkpoint it writes is in place, before the workers check together that
// every file was written (the manifest is never written; the run needs checkpoint_dir: a periodic
// checkpoint, or else the final one). "" injects nothing. parse(): InvalidArgument naming the spec
// for a bad one.
class FaultInjection {
 public:
  static FaultInjection parse(const std::string& spec, int workers);
  // Applies the fault to `gradient` if `rank` is one of the faulty workers and the kind changes
  // gradients; otherwise leaves it as it is.
  void apply(int rank, std::span<float> gradient) const;
  bool active() const noexcept { return !ranks_.empty(); }
  // Whether the kind is exit-while-admitting (any worker), and whether `rank` is one it kills.
  bool exits_while_admitting() const noexcept { return active() && kind_ == Kind::exit_while_admitting; }
  bool exits_while_admitting(int rank) const;
  // The same for exit-while-agreeing, and for exit-while-checkpointing.
  bool exits_while_agreeing() const noexcept { return active() && kind_ == Kind::exit_while_agreeing; }
  bool exits_while_agreeing(int rank) const;
  bool exits_while_checkpointing() const noexcept { return active() && kind_ == Kind::exit_while_checkpointing; }
  bool exits_while_checkpointing(int rank) const;
  // exit-while-ending: the worker kills itself at the end of the run, once its final evaluation is
  // done and before it sends its totals (training/run_end.hpp); for elastic runs and asynchronous
  // strategies, whose end survives it.
  bool exits_while_ending() const noexcept { return active() && kind_ == Kind::exit_while_ending; }
  bool exits_while_ending(int rank) const;
  // exit-after-ending: the worker kills itself once the end's closing barrier is passed, before its
  // process writes its outputs (the summary's writer wrote the summary before that barrier); for
  // the same runs as exit-while-ending.
  bool exits_after_ending() const noexcept { return active() && kind_ == Kind::exit_after_ending; }
  bool exits_after_ending(int rank) const;
  // Either of the two: a kind that fires in the end of the run.
  bool exits_in_the_end() const noexcept { return exits_while_ending() || exits_after_ending(); }
  // Whether the kind fires in an admission only (exit-while-admitting, exit-while-agreeing), which
  // only an elastic run has; and the kind as the spec names it.
  bool needs_elastic() const noexcept { return exits_while_admitting() || exits_while_agreeing(); }
  // Whether the kind kills a worker's process (the exit-* kinds): only a runtime of processes
  // (zmq, mpi) loses that worker alone.
  bool kills_process() const noexcept {
    return exits_while_admitting() || exits_while_agreeing() || exits_while_checkpointing() || exits_in_the_end();
  }
  const std::string& kind_name() const noexcept { return kind_name_; }
  // Why this fault cannot run under `runtime` (its name; `multi_process`: whether its workers are
  // processes of their own, RuntimeBackend::multi_process): a kind that kills_process() where every
  // worker shares one process would end them all. "" when it can. The text starts with
  // "fault_inject '<spec>':" and ends with "expected a runtime of processes".
  std::string process_refusal(const std::string& spec, const std::string& runtime, bool multi_process) const;
  // Logs `what` as a warning ("fault_inject: ..."), flushes the process's output and kills the
  // process with SIGKILL, as a crash would.
  [[noreturn]] static void kill_process(const std::string& what);

 private:
  enum class Kind {
    nan,
    zeros,
    scale,
    exit_while_admitting,
    exit_while_agreeing,
    exit_while_checkpointing,
    exit_while_ending,
    exit_after_ending
  } kind_ = Kind::scale;
  bool kills(Kind kind, int rank) const;
  bool changes_gradients() const noexcept { return kind_ == Kind::nan || kind_ == Kind::zeros || kind_ == Kind::scale; }
  double factor_ = 1;
  std::string kind_name_;
  std::vector<int> ranks_;
};

}  // namespace fast::strategy
