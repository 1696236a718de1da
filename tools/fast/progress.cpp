#include "progress.hpp"

#include <cmath>
#include <cstdio>
#include <string>

#include <fmt/format.h>

namespace fast::cli {

namespace {
std::string duration(double seconds) {
  const auto s = static_cast<long long>(seconds + 0.5);
  if (s < 60) return fmt::format("{} s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

// A loss or accuracy with 4 decimals; "nan" whatever the NaN's sign bit (printf wrote "-nan").
std::string number(double x) { return std::isnan(x) ? std::string("nan") : fmt::format("{:.4f}", x); }
}  // namespace

ProgressDisplay::ProgressDisplay(bool terminal, bool quiet) : terminal_(terminal), quiet_(quiet) {}

void ProgressDisplay::clear_line() {
  if (line_open_) std::fputs("\r\033[K", stderr);
  line_open_ = false;
}

void ProgressDisplay::on_progress(const training::Progress& p) {
  if (quiet_) return;
  const double pct =
      100.0 * static_cast<double>(p.step) / static_cast<double>(std::max<std::int64_t>(p.total_steps, 1));
  const std::string line = fmt::format("epoch {} | step {}/{} ({:.0f}%) | {:.0f} samples/s | loss {} | {} {}",
                                       p.epoch + 1, p.step, p.total_steps, pct, p.samples_per_second, number(p.loss),
                                       p.done ? "took" : "ETA", duration(p.done ? p.elapsed_seconds : p.eta_seconds));
  if (terminal_) {
    clear_line();
    std::fputs(line.c_str(), stderr);
    line_open_ = true;
    if (p.done) {
      std::fputc('\n', stderr);
      line_open_ = false;
    }
  } else {
    const int decile = static_cast<int>(pct / 10.0);
    if (decile != last_decile_ || p.done) {
      std::fprintf(stderr, "%s\n", line.c_str());
      last_decile_ = decile;
    }
  }
  std::fflush(stderr);
}

void ProgressDisplay::on_epoch(const training::EpochReport& e) {
  clear_line();
  // Epochs done as the eval record counts them (docs/metrics.md), not an epoch's number.
  std::fprintf(stderr, "%s\n",
               fmt::format("eval after step {} ({:.2f} epochs): test accuracy {}, loss {}", e.step, e.epochs_done,
                           number(e.accuracy), number(e.loss))
                   .c_str());
  std::fflush(stderr);
}

}  // namespace fast::cli
