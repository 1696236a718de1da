#pragma once
// Most checks of `fast train`'s settings that need neither libtorch nor data: each setting's range,
// the output files, the dataset spec, the optimizer's and the strategy's options for the world size
// where it is known, checkpoints and resume, elastic training, and the environment variables that
// train() reads. `fast` runs them before it starts the training helper, so that a mistake is
// refused in about a tenth of a second, before libtorch is loaded; the helper runs them again with
// the checks that need libtorch (the device, the model) and those of the torch adapter's own
// settings (final = best, buffers: fast::torch::validate_options). Torch-free.
//
// Thread-safety: a free function on its argument; check_writable's probe files have names of their
// own.

#include "fast/runtime/launcher.hpp"
#include "fast/training/train_options.hpp"

namespace fast::training {

// The runtime::LaunchOptions that train() launches its workers with (all but `placed`, which it
// adds): the runtime, workers, limits, cluster, process settings and collectives of `o`; lost
// workers tolerated by asynchronous strategies and elastic runs.
runtime::LaunchOptions launch_options(const TrainOptions& o);

// Throws core::InvalidArgument naming the setting (or environment variable), what it expects and
// what it got; reads no data, starts nothing, and leaves behind only the missing parents of the
// output paths (training::check_writable creates them, as the run would). With a runtime set, its
// own settings too (runtime::check_launch_options: a zmq run's rendezvous, keys, ports, ...).
void validate_settings(const TrainOptions& o);

}  // namespace fast::training
