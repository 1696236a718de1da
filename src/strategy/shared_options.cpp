// The declarations of the options every strategy takes and of those several strategies share
// (builtin.hpp). Each strategy's own options are declared in its file's registration function.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <limits>
#include <optional>

#include "builtin.hpp"
#include "fast/collective/codec_allreduce.hpp"
#include "fast/compress/codec.hpp"
#include "fast/core/error.hpp"
#include "fast/core/spec.hpp"
#include "fast/core/suggest.hpp"
#include "fast/strategy/aggregate.hpp"
#include "fast/topology/builders.hpp"
#include "fast/topology/schedule.hpp"

namespace fast::strategy::builtin {

namespace {

// A choice between two values stored as a bool field: `on` is true, `off` false.
StrategyOption on_off(std::string name, bool StrategyOptions::*field, std::string on, std::string off,
                      std::string help) {
  return StrategyOption::bound(
             std::move(name), OptionType::choice, std::move(help),
             [field, on](StrategyOptions& o, const OptionValue& v) { o.*field = std::get<std::string>(v) == on; },
             [field, on, off](const StrategyOptions& o) { return OptionValue(o.*field ? on : off); })
      .one_of({on, off});
}

// applies_when() of the dgc_* options: dgc turns them on.
std::optional<std::string> without_dgc(const StrategyOptions& o) {
  return o.dgc ? std::nullopt : std::optional<std::string>("dgc = false");
}

// applies_when() of dgc_warmup_ratio: dgc with a sparsity warm-up.
std::optional<std::string> without_dgc_warmup(const StrategyOptions& o) {
  if (!o.dgc) return without_dgc(o);
  if (o.dgc_warmup_steps > 0) return std::nullopt;
  return std::optional<std::string>("dgc_warmup_steps = 0 (fast train: dgc_warmup_epochs = 0), no sparsity warm-up");
}

}  // namespace

std::vector<StrategyOption> common_options() {
  const auto codec_check = [](const OptionValue& v) {
    (void)compress::make_codec(std::get<std::string>(v));  // rejects unknown names and options, naming them
  };
  return {
      StrategyOption::field("chunk_bytes", &StrategyOptions::chunk_bytes,
                            "Pipeline piece size of the ring all-reduce, bytes.")
          .at_least(64),
      StrategyOption::bound(
          "non_finite", OptionType::choice, "Reaction to a NaN/inf aggregated gradient: skip the step, or error.",
          [](StrategyOptions& o, const OptionValue& v) {
            o.non_finite = std::get<std::string>(v) == "skip" ? NonFinitePolicy::skip : NonFinitePolicy::error;
          },
          [](const StrategyOptions& o) {
            return OptionValue(std::string(o.non_finite == NonFinitePolicy::skip ? "skip" : "error"));
          })
          .one_of({"skip", "error"}),
      StrategyOption::field("compress", &StrategyOptions::compress,
                            fmt::format("Codec of every tensor a strategy sends, NAME[:key=value,...]: {} "
                                        "(docs/compression.md).",
                                        compress::codec_family().usages()))
          .check(codec_check)
          .accepts("a codec spec (Spec strings: codec)"),
      StrategyOption::field(
          "aggregate", &StrategyOptions::aggregate,
          "How the workers' gradients are combined: mean, or (allreduce, and ps with mode sync) "
          "median, trimmed-mean:F, krum:F or multi-krum:F[:M] (robust to F faulty workers; under allreduce "
          "computed by slices, at the ring's bytes; docs/faults.md).")
          .check([](const OptionValue& v) { (void)aggregate_family().parse(std::get<std::string>(v)); })
          .accepts("an aggregate spec (Spec strings: aggregate)"),
      StrategyOption::field(
          "fault_inject", &StrategyOptions::fault_inject,
          "Make workers faulty, for tests and demonstrations: KIND@W1,W2 with KIND nan, zeros or "
          "scale:FACTOR (e.g. scale:-100@4: worker 4 sends -100 x its gradient), or "
          "exit-while-admitting (elastic runs: the worker kills itself while the members admit a "
          "worker taken back), exit-while-agreeing (elastic runs: the worker kills itself inside "
          "the members' agreement to admit one, after its first message of it) or "
          "exit-while-checkpointing (with checkpoint_dir: "
          "the worker kills itself once its file of the first checkpoint is written, before the "
          "manifest), exit-while-ending (elastic runs and asynchronous strategies: the worker kills "
          "itself after the final evaluation, before it sends its totals) or exit-after-ending (the same "
          "runs: the worker kills itself once the end's closing barrier is passed, before its process "
          "writes its outputs); empty: none "
          "(docs/faults.md).")
          .check([](const OptionValue& v) {
            // Its form here; the ranks against the world's size once it is known (make_strategy).
            (void)FaultInjection::parse(std::get<std::string>(v), std::numeric_limits<int>::max());
          })
          .accepts("KIND@W1,W2,...; or empty"),
  };
}

StrategyOption topology_option() {
  // The spec's syntax, checked where it is set, so that its error names the file, line and key;
  // whether it fits the strategy and the worker count is checked with them.
  // A name of neither kind: both lists offered, since gosgd takes either.
  const auto syntax = [](const OptionValue& v) {
    const std::string& spec = std::get<std::string>(v);
    const std::string name(core::spec_name(spec));
    const bool schedule = topology::schedule_family().find(name) != nullptr;
    if (!schedule && topology::topology_family().find(name) == nullptr) {
      std::vector<std::string> every = topology::topology_family().names();
      for (const std::string& s : topology::schedule_family().names()) every.push_back(s);
      FAST_THROW(core::InvalidArgument,
                 "topology spec '{}': unknown name '{}'{}; expected a graph, one of: {}; or, for gosgd, a "
                 "time-varying schedule, one of: {}",
                 spec, name, core::did_you_mean(name, every), fmt::join(topology::topology_family().names(), ", "),
                 fmt::join(topology::schedule_family().names(), ", "));
    }
    (void)(schedule ? topology::schedule_family() : topology::topology_family()).parse(spec);
  };
  return StrategyOption::field("topology", &StrategyOptions::topology,
                               fmt::format("the graph, NAME[:params]: {}; gosgd also takes time-varying "
                                           "schedules: {} (docs/topology.md).",
                                           topology::topology_family().usages(), topology::schedule_family().usages()))
      .check(syntax)
      .accepts("a topology or schedule spec (Spec strings: topology, schedule)");
}

StrategyOption consensus_step_option() {
  return StrategyOption::field("consensus_step", &StrategyOptions::consensus_step,
                               "with a codec: CHOCO-gossip's consensus step gamma (acid: the fraction of the "
                               "paper's update a communication applies); 0: the codec's default (1 for fp16/bf16, "
                               "0.8 int8, 0.4 sign, 0.05 sparse and powersgd).")
      .greater_than(0)
      .at_most(1)
      .or_exactly(0)
      .applies_when([](const StrategyOptions& o) -> std::optional<std::string> {
        if (Strategy::compresses(o)) return std::nullopt;
        return fmt::format("compress = '{}'", o.compress);
      });
}

StrategyOption sparse_allreduce_option() {
  return StrategyOption::field(
             "sparse_allreduce", &StrategyOptions::sparse_allreduce,
             "with a codec whose messages are gathered (neither element-wise nor low-rank: int8, sign, "
             "topk, randk, threshold): how they are averaged: gather (all-gather "
             "of the encoded messages), dense (ring all-reduce of the decoded ones) or auto (by "
             "the payload bound against the dense ring's bytes; docs/compression.md).")
      .one_of({"auto", "gather", "dense"})
      .applies_when([](const StrategyOptions& o) -> std::optional<std::string> {
        using Path = collective::CodecAllreduce::Path;
        if (collective::CodecAllreduce::path_of(*compress::make_codec(o.compress)) == Path::gather) return std::nullopt;
        return fmt::format("compress = '{}'", o.compress);
      });
}

std::vector<StrategyOption> dgc_options() {
  return {
      StrategyOption::field("dgc", &StrategyOptions::dgc,
                            "Deep Gradient Compression (with compress = topk:ratio=R or randk:ratio=R, optimizer "
                            "sgd, momentum or nesterov): momentum correction on each worker, the local view, "
                            "and optionally momentum factor masking, local clipping, sparsity warm-up "
                            "(docs/compression.md). A flag: --dgc."),
      StrategyOption::field("dgc_clip", &StrategyOptions::dgc_clip,
                            "dgc: local gradient clipping, the global L2 bound C (each worker clips its gradient to "
                            "C / sqrt(workers)); 0: off.")
          .at_least(0)
          .applies_when(without_dgc),
      on_off("dgc_masking", &StrategyOptions::dgc_masking, "on", "off",
             "dgc: momentum factor masking (reset the velocity of the coordinates sent): on or off.")
          .applies_when(without_dgc),
      on_off("dgc_local_view", &StrategyOptions::dgc_local_view, "on", "off",
             "dgc: each worker takes its gradient at the shared parameters minus its own residual (its "
             "updates not sent yet): on or off (off with dgc_masking = on: the paper's DGC).")
          .applies_when(without_dgc),
      StrategyOption::field("dgc_warmup_ratio", &StrategyOptions::dgc_warmup_ratio,
                            "dgc: density at the start of the sparsity warm-up.")
          .greater_than(0)
          .at_most(1)
          .applies_when(without_dgc_warmup),
  };
}

}  // namespace fast::strategy::builtin
