// fast.Metrics: the metrics file and the summary of `fast train` (docs/metrics.md) for a training
// loop written in Python. The records and the summary are made by the same code as fast train's
// (WorkerLoop, gather_totals, build_summary, ProcessOutputs); only the model side differs: the
// loop computes the gradient itself, and evaluations call back a Python function that scores a
// model on this worker's slice of the test set.
#include "metrics.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <random>

#include <pybind11/stl.h>

#include "config.hpp"
#include "fast/core/error.hpp"
#include "fast/core/memory_usage.hpp"
#include "fast/core/sum_of_squares.hpp"
#include "fast/metrics/jsonl_writer.hpp"
#include "fast/training/run_identity.hpp"
#include "interrupt.hpp"
#include "process_outputs.hpp"
#include "run_totals.hpp"
#include "summary.hpp"
#include "worker_loop.hpp"

namespace fast::python {

namespace {

using core::l2_norm;  // as fast train's: the same value for the same parameters

py::object to_python(const nlohmann::json& value) { return py::module_::import("json").attr("loads")(value.dump()); }

// One ProcessOutputs per metrics file in this process: the workers of fast.run share it, as the
// workers of a `fast train` process do.
std::shared_ptr<training::ProcessOutputs> process_outputs(const std::string& metrics, training::ProgressFn progress) {
  static std::mutex mutex;
  static std::map<std::string, std::weak_ptr<training::ProcessOutputs>> open;
  std::lock_guard<std::mutex> lock(mutex);
  if (!metrics.empty()) {
    if (auto existing = open[metrics].lock()) return existing;
  }
  auto outputs = std::make_shared<training::ProcessOutputs>(std::move(progress), nullptr);
  if (!metrics.empty()) open[metrics] = outputs;
  return outputs;
}

// A token shared by every worker of this process (ProcessPlace).
std::uint64_t process_token() {
  static const std::uint64_t token = std::random_device{}() * 0x100000000ULL + std::random_device{}();
  return token;
}

// The model side of the loop: evaluations call `score(parameters) -> (correct, loss_sum, count)`.
class PyModelSide : public training::ModelSide {
 public:
  explicit PyModelSide(PyWorker& worker) : worker_(worker), rep_(worker.params().size()) {}
  void set_score(py::object score) { score_ = std::move(score); }

  double gradient(std::int64_t, std::int64_t) override {
    FAST_THROW(InvalidUsage, "fast.Metrics: the Python loop computes the gradient itself");
  }
  bool gradient_is_private() const override { return false; }  // gradient() is never called
  // fast.torch.Worker keeps the module's buffers itself (fast.torch.FlatBuffers).
  void sync_buffers(collective::Communicator&) override {}

  // Collective: the representative model, the consensus distance, the sums of every worker's score.
  metrics::EvalRecord evaluate(bool) override {
    strategy::Worker& w = worker_.get();
    w.representative(rep_);
    const std::span<const float> x = worker_.params();
    std::vector<double> sums(4, 0.0);
    for (std::size_t i = 0; i < x.size(); ++i) sums[3] += std::pow(static_cast<double>(x[i]) - rep_[i], 2);
    const auto [correct, loss_sum, count] = score();
    sums[0] = correct;
    sums[1] = loss_sum;
    sums[2] = count;
    w.communicator().allreduce(core::MutableView(std::span<double>(sums)));
    metrics::EvalRecord r = record(sums[0], sums[1], sums[2], sums[3] / w.context().size());
    // Identical replicas all score what the representative scores (as fast train reports them);
    // otherwise each worker holds only its slice of the test set: not measured (-1).
    if (w.strategy().replicas_identical()) r.replica_accuracy_min = r.replica_accuracy_max = r.accuracy;
    return r;
  }

  // Asynchronous, this worker alone: the current consensus model scored on this worker's slice.
  metrics::EvalRecord snapshot() override {
    const strategy::SnapshotResult r = worker_.get().snapshot(rep_);
    const auto [correct, loss_sum, count] = score();
    return record(correct, loss_sum, count, r.consensus_distance);
  }

  std::span<const float> representative() const override { return rep_; }

 private:
  std::tuple<double, double, double> score() {
    py::gil_scoped_acquire acquire;
    FAST_ENFORCE_AS(core::InvalidUsage, score_, "fast.Metrics: evaluate() needs a score function");
    py::array_t<float> view({static_cast<py::ssize_t>(rep_.size())}, {sizeof(float)}, rep_.data(), py::none());
    const py::tuple t = score_(view).cast<py::tuple>();
    FAST_ENFORCE(t.size() == 3,
                 "fast.Metrics: the score function must return (correct, loss_sum, count), got {} values", t.size());
    return {t[0].cast<double>(), t[1].cast<double>(), t[2].cast<double>()};
  }

  metrics::EvalRecord record(double correct, double loss_sum, double count, double consensus) const {
    FAST_ENFORCE(count > 0, "fast.Metrics: the score function scored no samples (count 0 on every worker)");
    metrics::EvalRecord r;
    r.accuracy = correct / count;
    r.loss = loss_sum / count;
    r.samples = static_cast<std::int64_t>(count);
    r.consensus_distance = consensus;
    r.param_norm = l2_norm(rep_);
    return r;
  }

  PyWorker& worker_;
  std::vector<float> rep_;
  py::object score_;
};

}  // namespace

struct PyMetrics::State {
  State(PyWorker& w, training::TrainOptions o, const training::LoopPlan& p,
        std::shared_ptr<training::ProcessOutputs> out, training::ProcessPlace pl)
      : worker(w),
        options(std::move(o)),
        plan(p),
        outputs(std::move(out)),
        place(std::move(pl)),
        model(w),
        slowdown({}, w.context().rank(), w.context().size()),
        loop(w.context(), w.get(), slowdown, model, *outputs, plan) {}

  PyWorker& worker;
  training::TrainOptions options;  // as fast train's, for the start record and the summary
  training::LoopPlan plan;
  std::shared_ptr<training::ProcessOutputs> outputs;
  training::ProcessPlace place;
  PyModelSide model;
  runtime::Slowdown slowdown;  // none: a Python loop emulates no slowness
  training::WorkerLoop loop;
  bool finished = false;
};

namespace {

training::TrainOptions run_options(const PyWorker& worker, const MetricsOptions& m) {
  FAST_ENFORCE(m.batch >= 1, "fast.Metrics: batch must be >= 1, got {}", m.batch);
  FAST_ENFORCE(m.log_every >= 1, "fast.Metrics: log_every must be >= 1, got {}", m.log_every);
  FAST_ENFORCE(m.target_accuracy >= 0 && m.target_accuracy <= 1,
               "fast.Metrics: target_accuracy must be in [0, 1], got {}", m.target_accuracy);
  FAST_ENFORCE(m.classes >= 2, "fast.Metrics: classes must be >= 2, got {}", m.classes);
  training::TrainOptions o = worker.options();
  FAST_ENFORCE((m.optimizer.empty() && m.lr < 0) || o.worker.external_optimizer,
               "fast.Metrics: optimizer/lr given, but the Worker steps FAST's own optimizer ('{}', lr {}), which the "
               "records name; they are for a Worker whose step is the caller's (external_optimizer=True)",
               o.worker.optimizer.name, o.worker.optimizer.lr);
  if (!m.optimizer.empty()) o.worker.optimizer.name = m.optimizer;
  if (m.lr >= 0) o.worker.optimizer.lr = m.lr;
  o.runtime = worker.context().runtime_name();
  o.model = m.model;
  o.dataset = m.dataset;
  o.batch = m.batch;
  o.metrics = m.metrics;
  o.summary = m.summary;
  o.log_every = m.log_every;
  o.target_accuracy = m.target_accuracy;
  if (o.steps == 0) {
    FAST_ENFORCE(worker.steps_per_epoch() > 0 && m.epochs > 0,
                 "fast.Metrics: the length of the run is unknown: give the Worker steps=N, or steps_per_epoch=N "
                 "(steps of each worker per pass over the data) and epochs=N here");
    o.steps = m.epochs * worker.steps_per_epoch();
  }
  return o;
}

// Steps per epoch of the records: the Worker's steps_per_epoch, else the whole run is one epoch.
std::int64_t epoch_steps(const PyWorker& worker, const training::TrainOptions& o) {
  return worker.steps_per_epoch() > 0 ? worker.steps_per_epoch() : o.steps;
}

training::ProgressFn progress_callback(const py::object& progress) {
  if (progress.is_none()) return nullptr;
  auto fn = std::make_shared<py::object>(progress);
  return [fn](const training::Progress& p) {
    py::gil_scoped_acquire acquire;
    (*fn)(py::dict(py::arg("step") = p.step, py::arg("total_steps") = p.total_steps, py::arg("epoch") = p.epoch,
                   py::arg("elapsed_seconds") = p.elapsed_seconds, py::arg("samples_per_second") = p.samples_per_second,
                   py::arg("loss") = p.loss, py::arg("eta_seconds") = p.eta_seconds, py::arg("done") = p.done));
  };
}

}  // namespace

PyMetrics::PyMetrics(PyWorker& worker, const MetricsOptions& m) {
  runtime::Context& ctx = worker.context();
  training::TrainOptions o = run_options(worker, m);
  o.process.shared_settings = settings::shared_settings(o);  // the summary's `settings`, as fast train's
  const std::int64_t per_epoch = epoch_steps(worker, o);
  const training::LoopPlan plan{.steps_per_epoch = per_epoch,
                                .total_steps = o.steps,
                                .eval_interval_steps = per_epoch,
                                .batch = m.batch,
                                .log_every = m.log_every,
                                .flops_per_step = 0,
                                .initial_norm = l2_norm(worker.params()),
                                .classes = m.classes};
  auto outputs = process_outputs(o.metrics.string(), progress_callback(m.progress));
  training::ProcessPlace place;
  interruptible([&] { place = training::place_process(ctx, worker.get().communicator(), process_token()); });
  outputs->open(o.metrics, place.first_rank, place.whole_world, place.hosts_rank0,
                training::start_record(o, plan, ctx.size(), worker.params().size()));
  state_ = std::make_unique<State>(worker, std::move(o), plan, std::move(outputs), std::move(place));
  note_resume();
}

PyMetrics::~PyMetrics() = default;

// A checkpoint the Worker restored (fast.torch.Worker.resume, before or after track()): the summary's
// resumed_from_step, and rates that count the steps this run took (as fast train's).
void PyMetrics::note_resume() {
  State& s = *state_;
  const std::optional<std::int64_t> from = s.worker.resumed_from();
  if (!from || (s.plan.resumed && s.plan.first_step == *from)) return;
  s.plan.first_step = *from;
  s.plan.resumed = true;
  s.loop.set_resumed(*from);
}

void PyMetrics::step(double loss, const strategy::StepReport& report) {
  State& s = *state_;
  FAST_ENFORCE_AS(core::InvalidUsage, !s.finished, "fast.Metrics.step: called after finish()");
  note_resume();
  const std::int64_t epoch = report.step / s.plan.steps_per_epoch;
  s.loop.record_step(loss, report, epoch);
  s.loop.report_progress(report.step + 1, epoch);
}

py::object PyMetrics::evaluate(const py::function& score) {
  State& s = *state_;
  FAST_ENFORCE_AS(core::InvalidUsage, !s.finished, "fast.Metrics.evaluate: called after finish()");
  s.model.set_score(score);
  const bool asynchronous = s.worker.get().strategy().asynchronous();
  const std::int64_t steps = s.worker.get().steps();
  const std::optional<metrics::EvalRecord> r = interruptible([&]() -> std::optional<metrics::EvalRecord> {
    if (!asynchronous) return s.loop.evaluate_collective(steps, false);
    s.loop.evaluate_snapshot(static_cast<double>(steps));
    return std::nullopt;  // written by this worker; the value is its own estimate
  });
  if (!r) return py::none();
  return to_python(metrics::to_json(*r));
}

py::object PyMetrics::finish(const py::function& score) {
  State& s = *state_;
  FAST_ENFORCE_AS(core::InvalidUsage, !s.finished, "fast.Metrics.finish: called twice");
  note_resume();
  s.model.set_score(score);
  strategy::Worker& w = s.worker.get();
  nlohmann::json summary;
  interruptible([&] {
    const double train_end = s.loop.elapsed();
    s.loop.flush_train_record();
    w.finish();
    const metrics::EvalRecord final_eval = s.loop.evaluate_collective(w.steps(), true);
    training::WorkerTotals mine = s.loop.totals();
    mine.wall_seconds = train_end;
    mine.param_norm = l2_norm(s.model.representative());
    mine.param_hash = metrics::parameter_hash64(s.model.representative());
    mine.replica_hash = metrics::parameter_hash64(s.worker.params());  // this worker's own, as fast train's
    // Every worker returns the summary, so every member reads the totals (Python's worlds are small).
    const std::optional<training::RunTotals> totals =
        training::gather_totals(w.communicator(), mine, s.loop.evaluations(), w.communicator().members());
    summary = training::build_summary({.options = s.options,
                                       .plan = s.plan,
                                       .parameters = s.worker.params().size(),
                                       .final_eval = final_eval,
                                       .totals = *totals,
                                       .communicator = w.communicator(),
                                       // The training data is the caller's, not FAST's: the floor
                                       // of a one-process world is the workers' state alone.
                                       .dataset_bytes = s.place.whole_world ? std::optional<std::uint64_t>(0)
                                                                            : std::nullopt});
    if (s.place.whole_world) summary["peak_rss_bytes"] = core::peak_rss_bytes();
    const std::vector<int> builders = training::summary_builders(w.communicator(), s.place);
    if (std::find(builders.begin(), builders.end(), w.context().rank()) != builders.end()) {
      s.outputs->write_end(summary["wall_seconds"].get<double>(), summary);
      if (!s.options.summary.empty() && s.place.hosts_rank0)
        metrics::write_json_file(s.options.summary, training::with_fingerprint(summary));
    }
  });
  s.worker.mark_finished();
  s.finished = true;
  return to_python(summary);
}

void bind_metrics(py::module_& m) {
  py::class_<PyMetrics>(m, "Metrics", R"(The metrics file and the summary of `fast train` (docs/metrics.md) for a
loop written in Python. Collective to create: every worker makes one for its Worker, after the Worker.

Metrics(worker, metrics='', summary='', model='python', dataset='', batch=64, epochs=0, log_every=50,
target_accuracy=0.85, classes=10, progress=None, optimizer='', lr=-1): metrics and summary are file paths (empty: none; under
zmq and mpi each process writes <stem>.rank<R><ext>, and the process of worker 0 the summary). The length of
the run is the Worker's steps setting, else epochs x its steps_per_epoch; without steps_per_epoch the
run is one epoch (evaluated at its end). progress: a function called with a
dict (step, total_steps, epoch, elapsed_seconds, samples_per_second, loss, eta_seconds, done) about every
0.25 s on worker 0. optimizer and lr: the name and learning rate the start record and the summary give,
for a Worker made with external_optimizer=True, whose optimizer is the caller's (fast.torch passes the
torch.optim class name and its first parameter group's lr); empty and -1: the Worker's settings.

score functions: score(parameters) -> (correct, loss_sum, count), the model given by the flat float32
parameters scored on this worker's slice of the test set; FAST sums them over the workers.)")
      .def(py::init([](PyWorker& worker, const std::string& metrics, const std::string& summary,
                       const std::string& model, const std::string& dataset, std::int64_t batch, std::int64_t epochs,
                       std::int64_t log_every, double target_accuracy, int classes, const py::object& progress,
                       const std::string& optimizer, double lr) {
             return std::make_unique<PyMetrics>(worker, MetricsOptions{.metrics = metrics,
                                                                       .summary = summary,
                                                                       .model = model,
                                                                       .dataset = dataset,
                                                                       .batch = batch,
                                                                       .epochs = epochs,
                                                                       .log_every = log_every,
                                                                       .target_accuracy = target_accuracy,
                                                                       .classes = classes,
                                                                       .progress = progress,
                                                                       .optimizer = optimizer,
                                                                       .lr = lr});
           }),
           py::arg("worker"), py::arg("metrics") = "", py::arg("summary") = "", py::arg("model") = "python",
           py::arg("dataset") = "", py::arg("batch") = 64, py::arg("epochs") = 0, py::arg("log_every") = 50,
           py::arg("target_accuracy") = 0.85, py::arg("classes") = 10, py::arg("progress") = py::none(),
           py::arg("optimizer") = "", py::arg("lr") = -1.0, py::keep_alive<1, 2>())
      .def("step", &PyMetrics::step, py::arg("loss"), py::arg("report"),
           "After Worker.step(): the mini-batch loss and the step's report (a train record every log_every steps).")
      .def("evaluate", &PyMetrics::evaluate, py::arg("score"),
           "Synchronous strategies, collective: scores the representative model, writes an eval record and "
           "returns it as a dict. Asynchronous: scores this worker's snapshot alone (returns None).")
      .def("finish", &PyMetrics::finish, py::arg("score"),
           "Collective, after the last step: Worker.finish(), the final evaluation, the totals of every worker; "
           "writes the end record and the summary file; returns the summary (a dict, fast train's schema).");
}

}  // namespace fast::python
