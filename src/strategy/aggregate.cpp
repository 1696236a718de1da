#include "fast/strategy/aggregate.hpp"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <limits>
#include <vector>

#include "fast/core/error.hpp"
#include "fast/core/log.hpp"
#include "fast/core/parse.hpp"
#include "fast/core/spec.hpp"

namespace fast::strategy {

namespace {

// A non-negative integer of `spec` (an option's value), through core::parse_int; `what` says which
// one for the error.
int parse_count(const std::string& text, const std::string& spec, const char* what) {
  return core::parse_int<int>(text, fmt::format("'{}': {}", spec, what), 0);
}

// NaN after every number, so that sorting puts it where trimming removes it first.
bool less_nan_last(float a, float b) { return std::isnan(b) ? !std::isnan(a) : a < b; }

// The median is the trimmed mean with F = (W - 1) / 2: the middle value for odd W, the mean of the
// two middle ones for even W.
void trimmed_mean(std::span<const float> g, int w, int f, std::size_t n, std::span<float> out) {
  std::vector<float> column(static_cast<std::size_t>(w));
  const auto lo = static_cast<std::size_t>(f), hi = static_cast<std::size_t>(w - f);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t k = 0; k < column.size(); ++k) column[k] = g[k * n + i];
    std::sort(column.begin(), column.end(), less_nan_last);
    double sum = 0;
    for (std::size_t k = lo; k < hi; ++k) sum += column[k];
    out[i] = static_cast<float>(sum / static_cast<double>(hi - lo));
  }
}

}  // namespace

void krum_distances(std::span<const float> g, int w, std::span<double> d) {
  const auto W = static_cast<std::size_t>(w);
  const std::size_t n = g.size() / W;
  FAST_ENFORCE_EQ(d.size(), W * W, "krum_distances: expected a W x W output");
  std::fill(d.begin(), d.end(), 0.0);
  for (std::size_t a = 0; a < W; ++a)
    for (std::size_t b = a + 1; b < W; ++b) {
      double s = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const double x = double{g[a * n + i]} - g[b * n + i];
        s += x * x;
      }
      d[a * W + b] = d[b * W + a] = s;
    }
}

namespace {
// Each worker's Krum score: the sum of its W - F - 2 smallest distances to the others (a
// non-finite distance, NaN or infinity, counts as infinite).
std::vector<double> krum_scores(std::span<const double> d, int w, int f) {
  const auto W = static_cast<std::size_t>(w);
  const auto nearest = static_cast<std::size_t>(w - f - 2);
  std::vector<double> scores(W), others;
  for (std::size_t a = 0; a < W; ++a) {
    others.clear();
    for (std::size_t b = 0; b < W; ++b)
      if (b != a)
        others.push_back(std::isfinite(d[a * W + b]) ? d[a * W + b] : std::numeric_limits<double>::infinity());
    std::partial_sort(others.begin(), others.begin() + static_cast<std::ptrdiff_t>(nearest), others.end());
    double score = 0;
    for (std::size_t k = 0; k < nearest; ++k) score += others[k];
    scores[a] = score;
  }
  return scores;
}
}  // namespace

std::vector<int> krum_selection(std::span<const double> d, int w, int f, int count) {
  FAST_ENFORCE(count >= 1 && count <= w, "krum_selection: count {} outside [1, {}]", count, w);
  const std::vector<double> scores = krum_scores(d, w, f);
  std::vector<int> order(static_cast<std::size_t>(w));
  for (int a = 0; a < w; ++a) order[static_cast<std::size_t>(a)] = a;
  // Least score first; ties (and infinite scores, which are all equal): the lowest rank first.
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return scores[static_cast<std::size_t>(a)] < scores[static_cast<std::size_t>(b)];
  });
  order.resize(static_cast<std::size_t>(count));
  std::sort(order.begin(), order.end());
  return order;
}

int krum_choice(std::span<const double> d, int w, int f) { return krum_selection(d, w, f, 1).front(); }

void average_rows(std::span<const float> rows, std::span<const int> selected, std::span<float> out) {
  const std::size_t n = out.size();
  FAST_ENFORCE(!selected.empty(), "average_rows: no row selected");
  for (std::size_t i = 0; i < n; ++i) {
    double sum = 0;
    for (const int r : selected) sum += rows[static_cast<std::size_t>(r) * n + i];
    out[i] = static_cast<float>(sum / static_cast<double>(selected.size()));
  }
}

namespace {

// krum (m = 1: the chosen gradient itself) and multi-krum (the mean of the m chosen).
int krum(std::span<const float> g, int w, int f, int m, std::span<float> out) {
  std::vector<double> d(static_cast<std::size_t>(w) * static_cast<std::size_t>(w));
  krum_distances(g, w, d);
  average_rows(g, krum_selection(d, w, f, m), out);
  return krum_choice(d, w, f);
}

}  // namespace

const core::SpecFamily& aggregate_family() {
  using core::Setting;
  const auto f = [] {
    return Setting::integer("f", 0, "faulty workers to tolerate.").at_least(0).at_most(2147483647.0);
  };
  static const core::SpecFamily family(
      "aggregate", core::SpecSyntax::positional,
      {{"mean", "the average"},
       {"median", "per coordinate, the median of the W values"},
       {"trimmed-mean", "per coordinate, the mean after dropping the F lowest and F highest; W > 2F", {f()}, 1},
       {"krum", "the gradient with the least Krum score; W > 2F + 2", {f()}, 1},
       {"multi-krum",
        "the mean of the M gradients with the least Krum scores; W > 2F + 2",
        {f(), Setting::integer("m", 1, "gradients averaged, <= W - F.")
                  .at_least(1)
                  .at_most(2147483647.0)
                  .default_shown("W - F")},
        1}});
  return family;
}

Aggregate Aggregate::parse(const std::string& spec, int workers) {
  const core::ParsedSpec p = aggregate_family().parse(spec);
  const std::string& name = p.name();
  Aggregate a;
  if (name == "mean" || name == "median") {
    a.rule_ = name == "mean" ? AggregateRule::mean : AggregateRule::median;
    return a;
  }
  a.f_ = static_cast<int>(p.integer("f"));
  if (name == "trimmed-mean") {
    a.rule_ = AggregateRule::trimmed_mean;
    FAST_ENFORCE(workers > 2 * std::int64_t{a.f_},
                 "aggregate '{}': trimmed-mean:F needs more than 2F workers, got {} for F = {}", spec, workers, a.f_);
    return a;
  }
  a.rule_ = name == "krum" ? AggregateRule::krum : AggregateRule::multi_krum;
  FAST_ENFORCE(workers > 2 * std::int64_t{a.f_} + 2,
               "aggregate '{}': {}:F needs more than 2F + 2 workers, got {} for F = {}", spec, name, workers, a.f_);
  if (a.rule_ == AggregateRule::multi_krum) {
    a.m_ = p.has("m") ? static_cast<int>(p.integer("m")) : workers - a.f_;
    FAST_ENFORCE(a.m_ >= 1 && a.m_ <= workers - a.f_,
                 "aggregate '{}': multi-krum's M must be in [1, W - F] = [1, {}], got {}", spec, workers - a.f_, a.m_);
  }
  return a;
}

int Aggregate::apply(std::span<const float> gradients, int workers, std::span<float> out) const {
  const std::size_t n = out.size();
  FAST_ENFORCE_EQ(gradients.size(), static_cast<std::size_t>(workers) * n,
                  "Aggregate::apply: expected workers x n gradient values");
  switch (rule_) {
    case AggregateRule::mean: {
      for (std::size_t i = 0; i < n; ++i) {
        double sum = 0;
        for (int k = 0; k < workers; ++k) sum += gradients[static_cast<std::size_t>(k) * n + i];
        out[i] = static_cast<float>(sum / workers);
      }
      return -1;
    }
    case AggregateRule::median: trimmed_mean(gradients, workers, (workers - 1) / 2, n, out); return -1;
    case AggregateRule::trimmed_mean: trimmed_mean(gradients, workers, f_, n, out); return -1;
    case AggregateRule::krum:
    case AggregateRule::multi_krum: return krum(gradients, workers, f_, m_, out);
  }
  return -1;
}

FaultInjection FaultInjection::parse(const std::string& spec, int workers) {
  FaultInjection fault;
  if (spec.empty()) return fault;
  const std::size_t at = spec.find('@');
  FAST_ENFORCE(at != std::string::npos && at + 1 < spec.size(),
               "fault_inject '{}': expected KIND@W1,W2,... (KIND nan, zeros, scale:FACTOR, exit-while-admitting, "
               "exit-while-agreeing, exit-while-checkpointing, exit-while-ending or exit-after-ending)",
               spec);
  const std::string kind = spec.substr(0, at);
  fault.kind_name_ = kind;
  if (kind == "nan") {
    fault.kind_ = Kind::nan;
  } else if (kind == "zeros") {
    fault.kind_ = Kind::zeros;
  } else if (kind == "exit-while-admitting") {
    fault.kind_ = Kind::exit_while_admitting;
  } else if (kind == "exit-while-agreeing") {
    fault.kind_ = Kind::exit_while_agreeing;
  } else if (kind == "exit-while-checkpointing") {
    fault.kind_ = Kind::exit_while_checkpointing;
  } else if (kind == "exit-while-ending") {
    fault.kind_ = Kind::exit_while_ending;
  } else if (kind == "exit-after-ending") {
    fault.kind_ = Kind::exit_after_ending;
  } else {
    FAST_ENFORCE(kind.rfind("scale:", 0) == 0,
                 "fault_inject '{}': unknown kind '{}'; expected nan, zeros, scale:FACTOR, exit-while-admitting, "
                 "exit-while-agreeing, exit-while-checkpointing, exit-while-ending or exit-after-ending",
                 spec, kind);
    const std::string factor = kind.substr(6);
    char* end = nullptr;
    fault.factor_ = std::strtod(factor.c_str(), &end);
    FAST_ENFORCE(!factor.empty() && end == factor.c_str() + factor.size() && std::isfinite(fault.factor_),
                 "fault_inject '{}': expected a finite FACTOR after scale:, got '{}'", spec, factor);
  }
  std::string rest = spec.substr(at + 1);
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const int rank = parse_count(rest.substr(0, comma), spec, "fault_inject's worker ranks");
    FAST_ENFORCE(rank < workers, "fault_inject '{}': worker {} is not in [0, {})", spec, rank, workers);
    FAST_ENFORCE(std::find(fault.ranks_.begin(), fault.ranks_.end(), rank) == fault.ranks_.end(),
                 "fault_inject '{}': worker {} is named twice", spec, rank);
    fault.ranks_.push_back(rank);
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
  }
  return fault;
}

bool FaultInjection::kills(Kind kind, int rank) const {
  return active() && kind_ == kind && std::find(ranks_.begin(), ranks_.end(), rank) != ranks_.end();
}

bool FaultInjection::exits_while_admitting(int rank) const { return kills(Kind::exit_while_admitting, rank); }

bool FaultInjection::exits_while_agreeing(int rank) const { return kills(Kind::exit_while_agreeing, rank); }

bool FaultInjection::exits_while_checkpointing(int rank) const { return kills(Kind::exit_while_checkpointing, rank); }

bool FaultInjection::exits_while_ending(int rank) const { return kills(Kind::exit_while_ending, rank); }

bool FaultInjection::exits_after_ending(int rank) const { return kills(Kind::exit_after_ending, rank); }

std::string FaultInjection::process_refusal(const std::string& spec, const std::string& runtime,
                                            bool multi_process) const {
  if (!kills_process() || multi_process) return {};
  return fmt::format(
      "fault_inject '{}': {} kills the worker's process, and under runtime '{}' every worker runs in this one "
      "process (all would end); expected a runtime of processes",
      spec, kind_name_, runtime);
}

void FaultInjection::kill_process(const std::string& what) {
  core::log(core::LogLevel::warn, "fault_inject: {}", what);
  std::fflush(nullptr);
  std::raise(SIGKILL);
  std::_Exit(137);  // SIGKILL cannot be caught; should raise return, end the same way
}

void FaultInjection::apply(int rank, std::span<float> gradient) const {
  if (!changes_gradients() || std::find(ranks_.begin(), ranks_.end(), rank) == ranks_.end()) return;
  for (float& v : gradient) {
    if (kind_ == Kind::nan)
      v = std::numeric_limits<float>::quiet_NaN();
    else if (kind_ == Kind::zeros)
      v = 0;
    else
      v = static_cast<float>(factor_ * v);
  }
}

}  // namespace fast::strategy
