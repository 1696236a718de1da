#pragma once
// fast.Metrics (metrics.cpp): fast train's metrics records and summary for a Python loop.

#include <cstdint>
#include <memory>
#include <string>

#include <pybind11/pybind11.h>

#include "worker.hpp"

namespace fast::python {

struct MetricsOptions {
  std::string metrics;  // JSONL file; empty: none
  std::string summary;  // JSON summary file; empty: none
  std::string model = "python";
  std::string dataset;
  std::int64_t batch = 64;  // mini-batch per worker
  std::int64_t epochs = 0;  // the run's length when the Worker has no steps setting
  std::int64_t log_every = 50;
  double target_accuracy = 0.85;
  int classes = 10;     // chance accuracy 1 / classes (the divergence check)
  py::object progress;  // callable(dict) or None
  // The optimizer the records name, and its learning rate, where the Worker's optimizer step is
  // the caller's (external_optimizer: a framework's optimizer, fast.torch); empty / < 0: the
  // Worker's settings. Given to a Worker that steps FAST's own optimizer: InvalidArgument.
  std::string optimizer;
  double lr = -1;
};

class PyMetrics {
 public:
  // Collective under zmq and mpi (the workers learn which share a process). The Worker must outlive it.
  PyMetrics(PyWorker& worker, const MetricsOptions& options);
  ~PyMetrics();
  void step(double loss, const strategy::StepReport& report);
  py::object evaluate(const py::function& score);
  py::object finish(const py::function& score);

 private:
  void note_resume();
  struct State;
  std::unique_ptr<State> state_;
};

void bind_metrics(py::module_& m);

}  // namespace fast::python
