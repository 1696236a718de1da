#pragma once
// Learning-rate schedules: the rate of each step as a closed-form function of the step index.
//
//   constant: base
//   step:     base * gamma^floor(s / step_size)                       (torch StepLR)
//   cosine:   lo + (base - lo) * (1 + cos(pi * s / T)) / 2 for s < T, lo from T on,
//             with T = total_steps, lo = base * min_lr_factor          (torch CosineAnnealingLR)
// A linear warm-up multiplies any of them: factor (s + 1) / warmup_steps for s < warmup_steps, 1
// after, so the rate climbs from schedule(0) / warmup_steps to the schedule's own value; the
// schedule's clock is not shifted by the warm-up (cosine still ends at total_steps).
// LrSchedule is immutable and thread-safe.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fast::optim {

struct ScheduleOptions {
  std::string name = "constant";  // one of schedule_names(): "constant", "step", "cosine"
  std::int64_t total_steps = 0;   // cosine: steps to anneal over, > 0 (required for cosine)
  std::int64_t step_size = 1000;  // step: decay every step_size steps, > 0
  double gamma = 0.1;             // step: factor per decay, > 0
  double min_lr_factor = 0.0;     // cosine: final rate = base * min_lr_factor, in [0, 1]
  std::int64_t warmup_steps = 0;  // >= 0; linear warm-up over the first warmup_steps, any schedule
};

class LrSchedule {
 public:
  // base_lr must be finite and >= 0; options are validated. InvalidArgument naming the option,
  // expected versus got, or an unknown name (the message lists the allowed names).
  LrSchedule(double base_lr, const ScheduleOptions& options);

  // The learning rate of step (counted from 0, >= 0; InvalidArgument otherwise).
  double lr_at(std::int64_t step) const;

  double base_lr() const noexcept { return base_lr_; }
  const ScheduleOptions& options() const noexcept { return options_; }

 private:
  enum class Kind { constant, step, cosine };
  double base_lr_;
  ScheduleOptions options_;
  Kind kind_;
};

// The names LrSchedule accepts.
std::vector<std::string> schedule_names();
// Whether the schedule named `schedule` reads the ScheduleOptions field named `option` ("step_size",
// "gamma", "min_lr_factor"; false for an unknown schedule or field): a setting it does not read
// changes nothing (the settings name it in a warning).
bool schedule_reads(std::string_view schedule, std::string_view option);

}  // namespace fast::optim
