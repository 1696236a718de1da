#pragma once
// The checks of `fast train`'s settings that need no model and no data: the checkpoints, elastic
// training and the fault injections that go with them. Each throws InvalidArgument naming the
// setting, what it expects and what it got, before any data is read (the trainer calls them from
// its validation; docs/errors.md). Torch-free.

#include "fast/strategy/strategy.hpp"
#include "fast/training/train_options.hpp"

namespace fast::training {

// checkpoint_dir, checkpoint_every, checkpoint_keep, resume and resume_if_present (docs/faults.md):
// an asynchronous strategy that cannot save a worker alone during the run (a codec, dgc, or no
// save_during_run declared) checkpoints at the end only, the folders must be folders, a folder to
// resume from must hold a complete checkpoint, and resume_if_present needs checkpoint_dir and
// excludes resume.
void validate_checkpoints(const TrainOptions& o, const strategy::StrategyOptions& s);

// elastic_lr and min_workers: only with elastic; min_workers at most the run's workers (`world`,
// where known: 0 otherwise, and the trainer checks it again once the workers met).
void validate_elastic_bounds(const TrainOptions& o, int world);

// elastic: a synchronous strategy that declares it, on a runtime that can lose a worker; the fault
// injections that fire only in an elastic run, at its end, or in a checkpoint write; max_workers
// (a run that may grow): an elastic synchronous run, on a runtime that takes new processes, that
// resumes nothing.
void validate_elastic(const TrainOptions& o, const strategy::StrategyOptions& s);

}  // namespace fast::training
