#include "worker.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <span>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <pybind11/stl.h>

#include "checkpoint_store.hpp"
#include "config.hpp"
#include "fast/collective/communicator.hpp"
#include "fast/core/error.hpp"
#include "fast/core/hash.hpp"
#include "fast/core/log.hpp"
#include "fast/core/suggest.hpp"
#include "fast/optim/optimizer.hpp"
#include "fast/strategy/registry.hpp"
#include "fast/training/run_identity.hpp"
#include "interrupt.hpp"

namespace fast::python {

namespace {

// The general settings of `fast train` that configure a Worker; every strategy option too.
const std::vector<std::string>& general_worker_keys() {
  static const std::vector<std::string> keys{"strategy",
                                             "optimizer",
                                             "lr",
                                             "momentum",
                                             "weight_decay",
                                             "beta1",
                                             "beta2",
                                             "eps",
                                             "schedule",
                                             "warmup_steps",
                                             "step_size",
                                             "gamma",
                                             "min_lr_factor",
                                             "seed",
                                             "steps",
                                             "allreduce_algorithm",
                                             "network_latency",
                                             "network_bandwidth",
                                             "dgc_warmup_epochs"};
  return keys;
}

// A keyword argument's value as the text a `fast train` flag would give.
std::string setting_text(const std::string& key, const py::handle& value) {
  if (py::isinstance<py::bool_>(value)) return value.cast<bool>() ? "true" : "false";
  if (py::isinstance<py::int_>(value) || py::isinstance<py::float_>(value) || py::isinstance<py::str>(value))
    return py::str(value).cast<std::string>();
  FAST_THROW(InvalidArgument, "fast.Worker: setting '{}' expects a str, int, float or bool, got {}", key,
             py::str(py::type::handle_of(value).attr("__name__")).cast<std::string>());
}

training::TrainOptions apply_settings(const py::kwargs& settings) {
  training::TrainOptions o;
  const std::vector<std::string> allowed = worker_setting_names();
  std::vector<std::string> given;
  for (const auto& [k, v] : settings) {
    std::string key = py::str(k).cast<std::string>();
    std::replace(key.begin(), key.end(), '-', '_');
    FAST_ENFORCE(std::find(allowed.begin(), allowed.end(), key) != allowed.end(),
                 "fast.Worker: unknown setting '{}'{}; expected one of {} (docs/config.md)", key,
                 core::did_you_mean(key, allowed), fmt::join(allowed, ", "));
    try {
      settings::apply_setting(o, key, setting_text(key, v), key);
    } catch (const InvalidArgument& e) {  // a bool reads as "true" there: say what the caller passed
      if (!py::isinstance<py::bool_>(v)) FAST_THROW(InvalidArgument, "fast.Worker: {}", core::user_message(e));
      FAST_THROW(InvalidArgument, "fast.Worker: setting '{}' got {} (a bool): {}", key,
                 v.cast<bool>() ? "True" : "False", core::user_message(e));
    }
    given.push_back(key);
  }
  for (const std::string& warning : settings::unread_strategy_options(o.worker.strategy.name, given))
    core::log(core::LogLevel::warn, "fast.Worker: {}", warning);
  for (const std::string& warning : settings::inert_settings(o, given))
    core::log(core::LogLevel::warn, "fast.Worker: {}", warning);
  return o;
}

// (name, shape) pairs as blocks covering n elements.
core::Layout make_layout(const py::object& layout, std::size_t n) {
  if (layout.is_none()) return core::flat_layout(n);
  core::Layout blocks;
  std::size_t offset = 0;
  for (const py::handle item : layout) {
    const std::string text = py::repr(item).cast<std::string>();
    FAST_ENFORCE(py::isinstance<py::tuple>(item) || py::isinstance<py::list>(item),
                 "fast.Worker: layout: expected (name, shape) pairs, got {}", text);
    const auto pair = py::reinterpret_borrow<py::sequence>(item);
    FAST_ENFORCE(pair.size() == 2, "fast.Worker: layout: expected (name, shape) pairs, got {}", text);
    core::TensorBlock b;
    b.name = py::str(pair[0]).cast<std::string>();
    try {
      for (const py::handle d : pair[1]) {
        const long long extent = d.cast<long long>();
        FAST_ENFORCE(extent >= 0, "negative extent {}", extent);
        b.shape.push_back(static_cast<std::size_t>(extent));
      }
    } catch (const std::exception&) {  // not a sequence of integers (pybind11's cast_error, a negative one)
      FAST_THROW(InvalidArgument, "fast.Worker: layout: the shape of '{}' must be a sequence of integers >= 0, got {}",
                 b.name, py::repr(pair[1]).cast<std::string>());
    }
    b.numel = 1;
    for (std::size_t d : b.shape) b.numel *= d;
    b.rows = b.shape.empty() ? 1 : b.shape.front();
    b.offset = offset;
    offset += b.numel;
    blocks.push_back(std::move(b));
  }
  FAST_ENFORCE(offset == n, "fast.Worker: the layout covers {} elements, the parameters have {}", offset, n);
  return blocks;
}

// The checks `fast train` makes before starting (trainer.cpp validate), for the Worker's part.
strategy::WorkerOptions worker_options(const training::TrainOptions& o, int world, std::int64_t steps_per_epoch,
                                       bool external_optimizer) {
  strategy::WorkerOptions w = o.worker;
  w.strategy.seed = o.seed;
  w.external_optimizer = external_optimizer;
  if (w.schedule.total_steps == 0) w.schedule.total_steps = o.steps;
  FAST_ENFORCE(external_optimizer || w.schedule.name != "cosine" || w.schedule.total_steps > 0,
               "fast.Worker: schedule 'cosine' (the default, as in fast train) anneals the learning rate to 0 over "
               "the run: give steps=N (steps per worker), or choose schedule='constant'");
  strategy::StrategyOptions s = w.strategy;
  s.optimizer = w.optimizer;
  strategy::validate_dgc(s);
  if (external_optimizer)
    strategy::validate_external_optimizer(s);
  else
    (void)optim::make_optimizer(w.optimizer, 1);
  strategy::check_strategy_options(s, world);
  FAST_ENFORCE(o.dgc_warmup_epochs == 0 || w.strategy.dgc,
               "dgc_warmup_epochs: set to {} without dgc; the warm-up is part of DGC (dgc=True)", o.dgc_warmup_epochs);
  if (o.dgc_warmup_epochs > 0) {
    FAST_ENFORCE(steps_per_epoch > 0, "dgc_warmup_epochs: give steps_per_epoch=N to fast.Worker to count epochs");
    w.strategy.dgc_warmup_steps =
        std::max<std::int64_t>(1, std::llround(o.dgc_warmup_epochs * static_cast<double>(steps_per_epoch)));
  }
  return w;
}

// The field of a worker's compared text that carries its refusal of its own arguments, in place of
// its settings (no setting has this name).
constexpr std::string_view kRefused = "#refused";

// Collective: every worker's settings that a run shares (settings::shared_settings, as fast train's
// processes compare them) against worker 0's. A difference is InvalidArgument on every worker,
// naming the first worker that differs, the setting and both values: a worker given another lr,
// batch or strategy would otherwise train apart, or hang in a collective the others never call.
// A worker whose text is a refusal (kRefused) makes every worker raise InvalidArgument naming it
// and its error (every such worker, when several refused).
void check_same_settings(runtime::Context& ctx, const std::string& mine) {
  if (ctx.size() == 1) return;
  collective::Communicator comm(ctx);
  const auto n = static_cast<std::size_t>(ctx.size());
  const std::array<std::int64_t, 2> head{
      static_cast<std::int64_t>(core::xxh3_64(std::as_bytes(std::span(mine.data(), mine.size())))),
      static_cast<std::int64_t>(mine.size())};
  std::vector<std::int64_t> heads(2 * n);
  comm.allgather(core::ConstView(head.data(), head.size(), core::DType::i64), core::MutableView(heads));
  std::size_t longest = 0;
  bool same = true;
  for (std::size_t r = 0; r < n; ++r) {
    same = same && heads[2 * r] == heads[0] && heads[2 * r + 1] == heads[1];
    longest = std::max(longest, static_cast<std::size_t>(heads[2 * r + 1]));
  }
  if (same) return;
  std::vector<std::uint8_t> text(longest, 0), texts(longest * n);
  std::memcpy(text.data(), mine.data(), mine.size());
  comm.allgather(core::ConstView(text.data(), longest, core::DType::u8), core::MutableView(texts));
  auto text_of = [&](std::size_t r) {
    return std::string(reinterpret_cast<const char*>(texts.data() + r * longest),
                       static_cast<std::size_t>(heads[2 * r + 1]));
  };
  std::vector<std::size_t> refusing;  // every worker that refused its own arguments, each with its error
  std::vector<std::string> errors;
  for (std::size_t r = 0; r < n; ++r) {
    const nlohmann::json theirs = nlohmann::json::parse(text_of(r), nullptr, false);
    if (!theirs.is_object() || !theirs.contains(kRefused)) continue;
    refusing.push_back(r);
    errors.push_back(theirs[std::string(kRefused)].get<std::string>());
  }
  if (refusing.size() == 1)
    FAST_THROW(core::InvalidArgument,
               "fast.Worker: worker {} refused its own arguments, so no worker starts; its error: {}", refusing[0],
               errors[0]);
  if (!refusing.empty()) {
    std::vector<std::string> each;
    for (std::size_t i = 0; i < refusing.size(); ++i)
      each.push_back(fmt::format("worker {}'s error: {}", refusing[i], errors[i]));
    FAST_THROW(core::InvalidArgument, "fast.Worker: workers {} refused their own arguments, so no worker starts; {}",
               fmt::join(refusing, ", "), fmt::join(each, "; "));
  }
  for (std::size_t r = 1; r < n; ++r) {
    const nlohmann::json theirs = nlohmann::json::parse(text_of(r), nullptr, false),
                         zero = nlohmann::json::parse(text_of(0), nullptr, false);
    if (!theirs.is_object() || !zero.is_object() || theirs == zero) continue;
    std::vector<std::string> differences;  // every one, by name: one may follow from another (lr from optimizer)
    for (const auto& [key, value] : zero.items())
      if (!theirs.contains(key) || theirs[key] != value)
        differences.push_back(fmt::format("{} = {} in worker {}, {} in worker 0", key,
                                          theirs.contains(key) ? theirs[key].get<std::string>() : "(none)", r,
                                          value.get<std::string>()));
    FAST_THROW(core::InvalidArgument,
               "fast.Worker: the workers' settings differ: {}; every worker constructs its Worker with the same "
               "settings (but those docs/config.md lists as each process's own)",
               fmt::join(differences, "; "));
  }
}

// The settings the workers compare: the run's shared settings, but the step budget of an
// asynchronous strategy, where each worker takes the steps its own loop takes, and with whether the
// optimizer step is FAST's or the caller's (replicas of both would drift apart).
std::string compared_settings(const training::TrainOptions& options, bool external_optimizer) {
  nlohmann::json shared = nlohmann::json::parse(settings::shared_settings(options));
  if (strategy::find_registration(options.worker.strategy.name).asynchronous.holds(options.worker.strategy)) {
    shared.erase("steps");
    shared.erase("epochs");
  }
  shared["external_optimizer"] = external_optimizer ? "true" : "false";
  return shared.dump();
}

}  // namespace

std::vector<std::string> worker_setting_names() {
  std::vector<std::string> names = general_worker_keys();
  for (const settings::ConfigKey& k : settings::config_keys())
    if (k.strategy_option) names.push_back(k.name);
  return names;
}

strategy::WorkerOptions PyWorker::checked_arguments(const py::object& params, const py::object& grads,
                                                    const py::object& layout, bool external_optimizer,
                                                    const py::kwargs& settings) {
  params_ = as_float32(params, "fast.Worker: params", true);
  grads_ = as_float32(grads, "fast.Worker: grads", true);
  layout_ = make_layout(layout, params_.numel);
  options_ = apply_settings(settings);
  FAST_ENFORCE(params_.numel == grads_.numel, "fast.Worker: params has {} elements, grads has {}; expected the same",
               params_.numel, grads_.numel);
  FAST_ENFORCE(params_.numel > 0, "fast.Worker: params is empty");
  {  // step() writes params from grads: memory shared by the two would take the parameters as their gradient
    const auto* p = static_cast<const float*>(params_.data);
    const auto* g = static_cast<const float*>(grads_.data);
    FAST_ENFORCE(p + params_.numel <= g || g + grads_.numel <= p,
                 "fast.Worker: params and grads share memory; expected two separate arrays (the gradient buffer "
                 "the framework writes and the parameters FAST updates)");
  }
  FAST_ENFORCE(steps_per_epoch_ >= 0, "fast.Worker: steps_per_epoch must be >= 0, got {}", steps_per_epoch_);
  strategy::WorkerOptions w = worker_options(options_, ctx_->get().size(), steps_per_epoch_, external_optimizer);
  options_.worker.external_optimizer = external_optimizer;  // options(): fast.Metrics reads it
  return w;
}

PyWorker::PyWorker(ContextRef ctx, const py::object& params, const py::object& grads, const py::object& layout,
                   std::int64_t steps_per_epoch, bool external_optimizer, const py::kwargs& settings)
    : ctx_(std::move(ctx)), steps_per_epoch_(steps_per_epoch) {
  runtime::Context& c = ctx_->get();
  // A worker whose own arguments are refused still takes part in the comparison, with its refusal:
  // the others raise at once, naming it, instead of waiting for it until op_timeout.
  strategy::WorkerOptions w;
  std::string shared;
  std::exception_ptr refused;
  try {
    w = checked_arguments(params, grads, layout, external_optimizer, settings);
    shared = compared_settings(options_, external_optimizer);
  } catch (const std::exception& e) {  // FAST's errors and pybind11's (a setting of the wrong type)
    refused = std::current_exception();
    shared = nlohmann::json{{std::string(kRefused), e.what()}}.dump();
  }
  if (refused) {
    try {
      interruptible([&] { check_same_settings(c, shared); });
    } catch (const core::InvalidArgument&) {  // the refusal the others raise: this worker raises its own
    }
    std::rethrow_exception(refused);
  }
  const strategy::ModelState state{.params = {static_cast<float*>(params_.data), params_.numel},
                                   .grads = {static_cast<float*>(grads_.data), grads_.numel},
                                   .layout = layout_};
  interruptible([&] {
    check_same_settings(c, shared);
    worker_ = std::make_unique<strategy::Worker>(c, w, state);
  });
  // A Worker kept after its world ended (by the traceback of a worker function that raised) would
  // reach a Context that no longer exists: it ends with the world, before the Context does.
  closer_ = ctx_->on_close([this] { reset_without_gil(worker_); });
}

PyWorker::~PyWorker() {
  ctx_->forget(closer_);
  reset_without_gil(worker_);
}

strategy::Worker& PyWorker::get() const {
  (void)ctx_->get();
  return *worker_;
}

std::span<const float> PyWorker::params() const { return {static_cast<const float*>(params_.data), params_.numel}; }

strategy::StepReport PyWorker::step() {
  FAST_ENFORCE_AS(core::InvalidUsage, !finished_,
                  "fast.Worker.step: called after finish(); the run has ended (make a new Worker to train again)");
  strategy::Worker& w = get();
  return interruptible([&] { return w.step(); });
}

void PyWorker::finish() {
  strategy::Worker& w = get();
  interruptible([&] { w.finish(); });
  finished_ = true;
}

py::array PyWorker::representative(const py::object& out) {
  strategy::Worker& w = get();
  py::object target =
      out.is_none() ? py::object(new_array(core::DType::f32, {static_cast<py::ssize_t>(params_.numel)})) : out;
  Array a = as_float32(target, "Worker.representative: out", true);
  FAST_ENFORCE(a.numel == params_.numel, "Worker.representative: out has {} elements, the model {}", a.numel,
               params_.numel);
  interruptible([&] { w.representative({static_cast<float*>(a.data), a.numel}); });
  return py::reinterpret_borrow<py::array>(a.owner);
}

py::tuple PyWorker::snapshot(const py::object& out) {
  strategy::Worker& w = get();
  py::object target =
      out.is_none() ? py::object(new_array(core::DType::f32, {static_cast<py::ssize_t>(params_.numel)})) : out;
  Array a = as_float32(target, "Worker.snapshot: out", true);
  FAST_ENFORCE(a.numel == params_.numel, "Worker.snapshot: out has {} elements, the model {}", a.numel, params_.numel);
  strategy::SnapshotResult r;
  interruptible([&] { r = w.snapshot({static_cast<float*>(a.data), a.numel}); });
  return py::make_tuple(a.owner, r.consensus_distance);
}

py::dict PyWorker::settings() const {
  py::dict d;
  for (const std::string& name : worker_setting_names()) {
    const settings::ConfigKey* key = settings::find_config_key(name);
    if (key != nullptr) d[py::str(name)] = key->get(options_);
  }
  return d;
}

nlohmann::json PyWorker::identity(const py::dict& extra) const {
  nlohmann::json id = training::settings_identity(options_, ctx_->get().size());
  training::add_model_fields(id, params_.numel, layout_, 0);
  for (const auto& [key, value] : extra) id[py::str(key).cast<std::string>()] = py::str(value).cast<std::string>();
  return training::with_fingerprint(std::move(id));
}

namespace {

// A Python callable of a step folder's path returning "" or why it cannot (the caller's own files of
// a checkpoint, `doing` them), as CheckpointStore calls it: with the GIL, an exception turned into
// its message, never thrown through the collective.
std::function<std::string(const std::filesystem::path&)> folder_part(const py::object& f, const char* doing) {
  if (f.is_none()) return {};
  return [f, doing](const std::filesystem::path& step_folder) -> std::string {
    py::gil_scoped_acquire gil;
    try {
      return f(step_folder.string()).cast<std::string>();
    } catch (const std::exception& e) {
      return fmt::format("{} '{}' failed: {}", doing, step_folder.string(), e.what());
    }
  };
}

}  // namespace

std::string PyWorker::save_checkpoint(const std::string& folder, std::int64_t keep, const py::dict& extra,
                                      const py::object& write) {
  strategy::Worker& w = get();
  FAST_ENFORCE(!folder.empty(), "Worker.save_checkpoint: folder is empty; expected a folder path");
  FAST_ENFORCE(keep >= 1, "Worker.save_checkpoint: keep: expected the number of newest checkpoints kept, >= 1, got {}",
               keep);
  training::CheckpointStore store(folder, keep, identity(extra));
  const training::CheckpointStore::WriteOwnPart write_own_part = folder_part(write, "writing into");
  const std::filesystem::path key = std::filesystem::absolute(folder).lexically_normal();
  const bool first_into_folder = std::find(saved_into_.begin(), saved_into_.end(), key) == saved_into_.end();
  if (first_into_folder) saved_into_.push_back(key);
  return interruptible([&] {
    if (first_into_folder) store.discard_newer(w, resumed_from_.value_or(0));
    return store.write(w, w.steps(), write_own_part).string();
  });
}

std::int64_t PyWorker::restore_checkpoint(const std::string& folder, const py::dict& extra, const py::object& read) {
  strategy::Worker& w = get();
  const nlohmann::json id = identity(extra);
  FAST_ENFORCE_AS(core::InvalidUsage, w.steps() == 0,
                  "Worker.restore_checkpoint: before the first step (it restores the steps a run took), but this "
                  "worker took {} steps; restore into a new Worker",
                  w.steps());
  training::CheckpointStore::expect_checkpoints(folder);  // as fast train --resume, before the collective part
  const training::CheckpointStore::ReadOwnPart read_own_part = folder_part(read, "reading");
  const std::int64_t step = interruptible([&] {
    return training::CheckpointStore::restore_newest(folder, w, id, false, std::numeric_limits<std::int64_t>::max(),
                                                     read_own_part);
  });
  resumed_from_ = step;
  return step;
}

void bind_worker(py::module_& m) {
  py::class_<strategy::StepReport>(m, "StepReport", "What Worker.step() did.")
      .def_readonly("step", &strategy::StepReport::step, "Index of the step just taken (0-based).")
      .def_readwrite("lr", &strategy::StepReport::lr,
                     "Learning rate used (0 with external_optimizer: fast.torch writes the torch optimizer's).")
      .def_readonly("applied", &strategy::StepReport::applied, "False when the update was skipped (non-finite).")
      .def_readonly("comm_seconds", &strategy::StepReport::comm_seconds, "Communication and waiting time of the step.")
      .def("__repr__", [](const strategy::StepReport& r) {
        return fmt::format("StepReport(step={}, lr={}, applied={}, comm_seconds={})", r.step, r.lr,
                           r.applied ? "True" : "False", r.comm_seconds);
      });
  py::class_<PyWorker>(m, "Worker", R"(The coordination of one worker: after the framework wrote the gradient
into `grads`, step() exchanges, aggregates and updates `params` in place, per the strategy.

Worker(context, params, grads, layout=None, steps_per_epoch=0, **settings): params and grads are flat float32
arrays (numpy or CPU torch tensors) of the same length, shared without copies. settings are `fast train`'s, by
the same names and with the same defaults (docs/config.md): strategy, optimizer, lr, momentum, schedule, steps,
seed, topology, compress, mode, ... Collective: every worker constructs it with the same settings.
external_optimizer=True: the optimizer step is the caller's (a torch.optim optimizer): step() leaves the
aggregated gradient in `grads` and does not change `params`; strategies whose whole update is one optimizer
step on the aggregated gradient only (allreduce), without dgc.)")
      .def(py::init<ContextRef, const py::object&, const py::object&, const py::object&, std::int64_t, bool,
                    const py::kwargs&>(),
           py::arg("context"), py::arg("params"), py::arg("grads"), py::arg("layout") = py::none(),
           py::arg("steps_per_epoch") = 0, py::arg("external_optimizer") = false)
      .def("step", &PyWorker::step, "One step on the gradient in grads; returns a StepReport.")
      .def("finish", &PyWorker::finish, "Collective, after the last step: stops the strategy's activities. Idempotent.")
      .def("representative", &PyWorker::representative, py::arg("out") = py::none(),
           "Collective: the model to evaluate or save (per the strategy), into out or a new array. After finish() "
           "for asynchronous strategies.")
      .def("snapshot", &PyWorker::snapshot, py::arg("out") = py::none(),
           "Asynchronous strategies, not collective: (current consensus model, consensus distance).")
      .def_property_readonly("steps", [](const PyWorker& w) { return w.get().steps(); })
      .def_property_readonly("skipped_steps", [](const PyWorker& w) { return w.get().skipped_steps(); })
      .def_property_readonly("comm_seconds", [](const PyWorker& w) { return w.get().comm_seconds(); })
      .def_property_readonly("asynchronous", [](const PyWorker& w) { return w.get().strategy().asynchronous(); })
      .def_property_readonly("finished", &PyWorker::finished)
      .def_property_readonly("settings", &PyWorker::settings, "The settings as applied (fast train's names).")
      .def("save_checkpoint", &PyWorker::save_checkpoint, py::arg("folder"), py::arg("keep") = 2,
           py::arg("extra") = py::dict(), py::arg("write") = py::none(),
           "Collective: fast train's checkpoint of this worker after its steps so far into folder (the keep newest "
           "kept); returns the step folder. The first save into a folder removes its step folders newer than this "
           "run's start (0, or the step restore_checkpoint restored), as fast train does. extra: more identity "
           "fields (str). write: None, or a callable of the step folder's path that writes this worker's own "
           "further files there before FAST's, returning '' or why it cannot (a failure fails the checkpoint on "
           "every worker, fast.IoError).")
      .def("restore_checkpoint", &PyWorker::restore_checkpoint, py::arg("folder"), py::arg("extra") = py::dict(),
           py::arg("read") = py::none(),
           "Collective: restores the newest complete checkpoint of folder that every worker can read; returns its "
           "step. A checkpoint of another run (other settings, layout or extra) is refused naming the file and the "
           "field. read: None, or a callable of a step folder's path that reads this worker's own further files "
           "there and returns '' or why it cannot (that checkpoint is then skipped for the next older one).");
  m.def("worker_settings", &worker_setting_names, "The names of the settings fast.Worker takes.");
}

}  // namespace fast::python
