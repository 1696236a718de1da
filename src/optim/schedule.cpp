#include "fast/optim/schedule.hpp"

#include <cmath>
#include <numbers>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "check.hpp"
#include "fast/core/error.hpp"
#include "fast/core/suggest.hpp"

namespace fast::optim {

namespace {
constexpr std::string_view kSchedule = "ScheduleOptions";
}  // namespace

std::vector<std::string> schedule_names() { return {"constant", "step", "cosine"}; }

bool schedule_reads(std::string_view schedule, std::string_view option) {
  // The fields each schedule's rule (lr() below) reads beside base_lr, total_steps and warmup_steps.
  if (schedule == "step") return option == "step_size" || option == "gamma";
  if (schedule == "cosine") return option == "min_lr_factor";
  return false;
}

LrSchedule::LrSchedule(double base_lr, const ScheduleOptions& options) : base_lr_(base_lr), options_(options) {
  if (options.name == "constant") {
    kind_ = Kind::constant;
  } else if (options.name == "step") {
    kind_ = Kind::step;
  } else if (options.name == "cosine") {
    kind_ = Kind::cosine;
  } else {
    FAST_THROW(InvalidArgument, "ScheduleOptions.name: unknown schedule '{}'{}, expected one of {}", options.name,
               core::did_you_mean(options.name, schedule_names()), fmt::join(schedule_names(), ", "));
  }
  const std::string rule = "schedule = " + options.name;  // the setting that chose it, as a config line
  using detail::check_option;
  check_option(std::isfinite(base_lr) && base_lr >= 0, "LrSchedule", "base_lr", rule, "a finite value >= 0", base_lr);
  check_option(options.warmup_steps >= 0, kSchedule, "warmup_steps", rule, "a value >= 0",
               static_cast<double>(options.warmup_steps));
  if (kind_ == Kind::step) {
    check_option(options.step_size > 0, kSchedule, "step_size", rule, "a value > 0",
                 static_cast<double>(options.step_size));
    check_option(std::isfinite(options.gamma) && options.gamma > 0, kSchedule, "gamma", rule, "a finite value > 0",
                 options.gamma);
  } else if (kind_ == Kind::cosine) {
    check_option(options.total_steps > 0, kSchedule, "total_steps", rule, "a value > 0 (required for cosine)",
                 static_cast<double>(options.total_steps));
    check_option(options.min_lr_factor >= 0 && options.min_lr_factor <= 1, kSchedule, "min_lr_factor", rule,
                 "a value in [0, 1]", options.min_lr_factor);
  }
}

double LrSchedule::lr_at(std::int64_t step) const {
  FAST_ENFORCE(step >= 0, "LrSchedule::lr_at: step: expected a value >= 0, got {}", step);
  double lr = base_lr_;
  switch (kind_) {
    case Kind::constant: break;
    case Kind::step: lr = base_lr_ * std::pow(options_.gamma, static_cast<double>(step / options_.step_size)); break;
    case Kind::cosine: {
      const double lo = base_lr_ * options_.min_lr_factor;
      if (step >= options_.total_steps) {
        lr = lo;
      } else {
        const double phase = std::numbers::pi * static_cast<double>(step) / static_cast<double>(options_.total_steps);
        lr = lo + (base_lr_ - lo) * (1 + std::cos(phase)) / 2;
      }
      break;
    }
  }
  if (step < options_.warmup_steps) lr *= static_cast<double>(step + 1) / static_cast<double>(options_.warmup_steps);
  return lr;
}

}  // namespace fast::optim
