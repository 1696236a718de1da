#pragma once
// The live progress display of `fast train` on stderr. On a terminal: one line rewritten in place
// ("step 120/937 (12%) | 2150 samples/s | loss 0.512 | ETA 38 s"). Elsewhere (logs, CI): a plain
// line about every 10% of the run. Evaluation results are printed on lines of their own.

#include "fast/training/train_options.hpp"

namespace fast::cli {

class ProgressDisplay {
 public:
  // mode: "auto" (terminal detection), "always" (in-place line), "never" (nothing but evaluations).
  explicit ProgressDisplay(bool terminal, bool quiet = false);
  void on_progress(const training::Progress& p);
  void on_epoch(const training::EpochReport& e);

 private:
  void clear_line();
  bool terminal_;
  bool quiet_;
  bool line_open_ = false;
  int last_decile_ = -1;
};

}  // namespace fast::cli
