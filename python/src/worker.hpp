#pragma once
// fast.Worker: a strategy::Worker on flat float32 buffers that Python owns (numpy arrays or CPU
// torch tensors, shared without copies), configured by the settings of `fast train` passed as
// keyword arguments: the same names, values, checks and defaults (docs/config.md).
//
// One per worker, used from its worker's thread only (as strategy::Worker).

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>

#include <nlohmann/json.hpp>
#include "arrays.hpp"

#include "fast/core/layout.hpp"
#include "fast/strategy/worker.hpp"
#include "fast/training/train_options.hpp"
#include "process.hpp"

namespace fast::python {

class PyWorker {
 public:
  // Collective (every worker constructs its Worker with the same settings). layout: a list of
  // (name, shape) pairs covering params in order, or None (one flat block). steps_per_epoch: used
  // by dgc_warmup_epochs and by fast.Metrics (0: unknown).
  PyWorker(ContextRef ctx, const py::object& params, const py::object& grads, const py::object& layout,
           std::int64_t steps_per_epoch, bool external_optimizer, const py::kwargs& settings);
  ~PyWorker();

  strategy::StepReport step();
  void finish();
  py::array representative(const py::object& out);
  py::tuple snapshot(const py::object& out);

  strategy::Worker& get() const;
  runtime::Context& context() const { return ctx_->get(); }
  const training::TrainOptions& options() const noexcept { return options_; }
  std::int64_t steps_per_epoch() const noexcept { return steps_per_epoch_; }
  std::span<const float> params() const;
  bool finished() const noexcept { return finished_; }
  void mark_finished() noexcept { finished_ = true; }  // Metrics.finish() called Worker::finish()
  // The settings as applied, `fast train`'s names and text values.
  py::dict settings() const;
  // Checkpoints in `fast train`'s files (src/training/checkpoint_store.hpp, docs/faults.md):
  // collective. save_checkpoint writes this worker's state after steps() steps into `folder`
  // (keeping the `keep` newest checkpoints) and returns the step folder; the first one into a
  // folder first removes its step folders newer than this run's start (0, or the step restored), as
  // fast train does before its first step (CheckpointStore::discard_newer). `write` (None, or a
  // callable of the step folder's path returning "" or why it cannot): writes the caller's own files
  // (fast.torch's torch-<rank>.pt) before FAST's; a failure fails the checkpoint on every worker
  // (IoError) as FAST's own files do. restore_checkpoint loads
  // the newest complete checkpoint every worker can read and returns its step. Both carry the run
  // identity of these settings, the parameters' count and layout and `extra` (str values: the
  // caller's own fields, e.g. the model's class), and a restore of another run's files is refused
  // (InvalidArgument naming the file and the field) before anything is restored. `read` (None, or
  // a callable of a step folder's path returning "" or why it cannot): reads the caller's own files
  // of a checkpoint (fast.torch's torch-<rank>.pt); a checkpoint it cannot read is skipped for the
  // next older one on every worker, as a damaged FAST file is.
  std::string save_checkpoint(const std::string& folder, std::int64_t keep, const py::dict& extra,
                              const py::object& write);
  std::int64_t restore_checkpoint(const std::string& folder, const py::dict& extra, const py::object& read);
  // The step restore_checkpoint() restored (the steps an earlier run took), once it did.
  std::optional<std::int64_t> resumed_from() const noexcept { return resumed_from_; }

 private:
  // Reads and checks this worker's own arguments into params_, grads_, layout_ and options_, as
  // fast train checks its settings before starting; returns the strategy's options. Throws
  // InvalidArgument (or pybind11's cast errors) naming the argument.
  strategy::WorkerOptions checked_arguments(const py::object& params, const py::object& grads, const py::object& layout,
                                            bool external_optimizer, const py::kwargs& settings);

  ContextRef ctx_;
  Array params_;
  Array grads_;
  core::Layout layout_;
  training::TrainOptions options_;
  std::int64_t steps_per_epoch_ = 0;
  std::unique_ptr<strategy::Worker> worker_;
  nlohmann::json identity(const py::dict& extra) const;

  std::uint64_t closer_ = 0;  // ContextHandle::on_close: the Worker ends with its world
  bool finished_ = false;
  std::optional<std::int64_t> resumed_from_;
  std::vector<std::filesystem::path> saved_into_;  // the folders save_checkpoint prepared (absolute)
};

// The names of the `fast train` settings a Worker takes.
std::vector<std::string> worker_setting_names();

void bind_worker(py::module_& m);

}  // namespace fast::python
