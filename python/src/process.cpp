#include "process.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <pybind11/stl.h>

#include "fast/core/env.hpp"
#include "fast/core/error.hpp"
#include "fast/core/log.hpp"
#include "fast/core/malloc_tuning.hpp"
#include "fast/runtime/detect.hpp"
#include "fast/runtime/launcher.hpp"
#include "fast/runtime/registry.hpp"
#include "interrupt.hpp"

namespace fast::python {

runtime::Context& ContextHandle::get() const {
  std::lock_guard<std::mutex> lock(mutex_);
  FAST_ENFORCE_AS(core::InvalidUsage, ctx_ != nullptr,
                  "this fast.Context's world has ended (fast.shutdown() was called, or the function given to fast.run "
                  "returned); objects built on it can no longer be used");
  return *ctx_;
}

void ContextHandle::close() noexcept {
  std::vector<std::pair<std::uint64_t, std::function<void()>>> closers;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closers.swap(closers_);
  }
  for (auto& [id, closer] : closers) {
    try {
      closer();
    } catch (const std::exception& e) {
      core::log(core::LogLevel::debug, "fast: an object ended with its world raised: {}", e.what());
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  ctx_ = nullptr;
}

std::uint64_t ContextHandle::on_close(std::function<void()> closer) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (ctx_ != nullptr) {
      closers_.emplace_back(next_id_, std::move(closer));
      return next_id_++;
    }
  }
  closer();
  return 0;
}

void ContextHandle::forget(std::uint64_t id) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  std::erase_if(closers_, [id](const auto& entry) { return entry.first == id; });
}

bool ContextHandle::open() const noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  return ctx_ != nullptr && runtime::interrupts_so_far() == interrupts_at_start_;
}

namespace {

// The workers on this machine that the runtime of fast.init() counted when the processes met
// (LaunchOptions::placed: zmq, mpi); 0 when it counted none (threads, or no world yet).
std::atomic<int> g_workers_on_machine{0};

// The world of fast.init(): launch() on a background thread, its one local worker parked until
// shutdown. One per process.
class ProcessWorld {
 public:
  static ProcessWorld& instance() {
    static ProcessWorld* world = new ProcessWorld();  // never destroyed: shutdown() ends it
    return *world;
  }

  // Refuses (InvalidUsage) while this process is in a world: init() asks before it does anything.
  void expect_none() {
    std::lock_guard<std::mutex> lock(mutex_);
    refuse_a_second();
  }

  // Starts the world and waits until its worker's Context exists (or the launch failed: rethrown).
  ContextRef start(const runtime::LaunchOptions& options) {
    std::unique_lock<std::mutex> lock(mutex_);
    refuse_a_second();
    options_ = options;
    g_workers_on_machine = 0;  // this world's count, once its processes met (LaunchOptions::placed)
    handle_.reset();
    error_ = nullptr;
    release_ = false;
    failure_.clear();
    thread_ = std::thread([this] { run(); });
    cv_.wait(lock, [&] { return handle_ != nullptr || error_ != nullptr; });
    if (handle_ == nullptr) {
      lock.unlock();
      thread_.join();
      std::rethrow_exception(error_);
    }
    return handle_;
  }

  // Ends the world: the worker function returns (throws when `failure` is not empty, so the other
  // processes learn that this one failed), launch() ends. Rethrows launch()'s error, if any.
  void stop(const std::string& failure) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!thread_.joinable()) return;
      if (handle_) handle_->close();
      release_ = true;
      failure_ = failure;
    }
    cv_.notify_all();
    thread_.join();
    std::exception_ptr error;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      error = error_;
      error_ = nullptr;
      handle_.reset();
      g_workers_on_machine = 0;
    }
    if (error && failure.empty()) std::rethrow_exception(error);
  }

  ContextRef current() {
    std::lock_guard<std::mutex> lock(mutex_);
    return handle_;
  }

 private:
  // Called with mutex_ held.
  void refuse_a_second() const {
    FAST_ENFORCE_AS(core::InvalidUsage, !thread_.joinable(),
                    "fast.init: this process already joined a world (runtime '{}'); call fast.shutdown() first",
                    options_.runtime);
  }

  void run() {
    try {
      runtime::launch(options_, [this](runtime::Context& ctx) {
        std::unique_lock<std::mutex> lock(mutex_);
        handle_ = std::make_shared<ContextHandle>(&ctx);
        cv_.notify_all();
        cv_.wait(lock, [&] { return release_; });
        handle_->close();
        if (!failure_.empty()) throw core::Error(failure_);
      });
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = std::current_exception();
      if (handle_) handle_->close();
    }
    cv_.notify_all();
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::thread thread_;
  runtime::LaunchOptions options_;
  ContextRef handle_;
  std::exception_ptr error_;
  bool release_ = false;
  std::string failure_;
};

ContextRef init(std::optional<std::string> runtime, double op_timeout, const std::string& collectives,
                const std::string& windows) {
  // The world this process was started into (runtime/detect.hpp): `runtime` when given, else the
  // launcher's; a contradiction between the two is an InvalidArgument. A second init() is refused
  // first, so that nothing is logged for a world that does not start.
  ProcessWorld::instance().expect_none();
  const runtime::WorldChoice world =
      runtime::choose_world({.runtime = runtime.value_or("")}, runtime::process_environment());
  core::log(core::LogLevel::info, "fast.init: {}", world.describe());
  runtime::LaunchOptions options;
  options.runtime = world.runtime;
  options.process = world.process;
  FAST_ENFORCE(!runtime::find_runtime(options.runtime).simulated_clock,
               "fast.init: runtime '{}' simulates a whole world in one process; use fast.run(fn, workers=N, "
               "runtime='{}') instead",
               options.runtime, options.runtime);
  options.workers = 1;
  options.op_timeout_seconds = op_timeout;
  options.collectives = collectives;
  options.windows = windows;
  options.placed = [](int workers) { g_workers_on_machine = workers; };
  return interruptible([&] { return ProcessWorld::instance().start(options); });
}

// fast.workers_on_host(): the larger of the runtime's count and the launcher's processes on this
// host, at least 1.
int workers_on_host() {
  const std::optional<runtime::LauncherWorld> w = runtime::detect_launcher(runtime::process_environment());
  return std::max({1, g_workers_on_machine.load(), w ? w->local_world : 0});
}

// fast.run: fn(context) on every worker; returns the results in rank order. The first Python
// exception (in time) is re-raised as it was; the other workers were released from their waits.
py::list run(const py::function& fn, int workers, const std::string& runtime, const std::string& cluster,
             double op_timeout) {
  FAST_ENFORCE(!runtime::find_runtime(runtime).multi_process,
               "fast.run: runtime must be one whose world lives inside this process (threads, sim), got '{}'; for "
               "processes use fast launch or mpirun with fast.init()",
               runtime);
  FAST_ENFORCE(workers >= 1, "fast.run: workers must be >= 1, got {}", workers);
  std::vector<py::object> results(static_cast<std::size_t>(workers));
  std::mutex error_mutex;
  std::optional<py::error_already_set> first_error;
  // thread_per_worker: each worker holds Python frames across FAST's waits, and a Python thread
  // state belongs to one OS thread (sim's actors would otherwise share one).
  const runtime::LaunchOptions options{.runtime = runtime,
                                       .workers = workers,
                                       .op_timeout_seconds = op_timeout,
                                       .cluster = cluster,
                                       .thread_per_worker = true};
  auto worker = [&](runtime::Context& ctx) {
    auto handle = std::make_shared<ContextHandle>(&ctx);
    py::gil_scoped_acquire acquire;
    try {
      results[static_cast<std::size_t>(ctx.rank())] = fn(handle);
      handle->close();
    } catch (py::error_already_set& e) {
      handle->close();
      // "KeyboardInterrupt", "ValueError: bad value": the other workers' errors name it, without
      // pybind11's traceback text.
      const std::string text = py::str(e.value());
      const std::string what =
          py::str(e.type().attr("__name__")).cast<std::string>() + (text.empty() ? "" : ": " + text);
      {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!first_error) first_error = std::move(e);
      }
      throw core::Error(fmt::format("worker {} raised {}", ctx.rank(), what));
    } catch (...) {
      handle->close();
      throw;
    }
  };
  std::exception_ptr launch_error;
  try {
    interruptible([&] { runtime::launch(options, worker); });
  } catch (py::error_already_set& e) {
    if (e.matches(PyExc_KeyboardInterrupt)) throw;  // Ctrl-C ended the world: before the workers' errors
    launch_error = std::current_exception();
  } catch (...) {
    launch_error = std::current_exception();
  }
  if (first_error) throw std::move(*first_error);
  if (launch_error) std::rethrow_exception(launch_error);
  py::list out;
  for (py::object& r : results) out.append(r ? r : py::none());
  return out;
}

}  // namespace

namespace {

// fast.launcher(): what detect_launcher() finds in this process's environment, as a dict; None without one.
py::object launcher() {
  const std::optional<runtime::LauncherWorld> w = runtime::detect_launcher(runtime::process_environment());
  if (!w) return py::none();
  py::dict d;
  d["source"] = w->source;
  d["runtime"] = w->runtime;
  d["rank"] = w->rank;
  d["world"] = w->world;
  d["local_rank"] = w->local_rank;
  d["local_world"] = w->local_world;
  d["rendezvous"] = w->rendezvous;
  d["evidence"] = w->evidence;
  return d;
}

}  // namespace

void bind_process(py::module_& m) {
  m.def(
      "tune_malloc",
      [] {
        const core::MallocTuning t = core::tune_malloc();
        return py::make_tuple(t.applied, t.reason);
      },
      R"(Keeps glibc's malloc blocks of every size in the heap between training steps, as fast train does
(docs/benchmarks.md, "malloc thresholds"): a torch loop on the CPU that allocates the same large tensors
every step then stops paying a page fault per 4 KiB of them. Returns (applied, reason): nothing is changed
with FAST_MALLOC=system, where the user set glibc's malloc settings (GLIBC_TUNABLES, MALLOC_*_THRESHOLD_,
MALLOC_MMAP_MAX_, MALLOC_ARENA_MAX), or
where the allocator is not glibc's. Process-wide; call it once, before any tensor work (arenas that
threads made before the call stay in use, and their large blocks are still mapped). Once tuned, the heap
keeps its peak until fast.release_free_memory(). fast.InvalidArgument when FAST_MALLOC is neither 'tuned'
nor 'system'.)");
  m.def("release_free_memory", &core::release_free_memory,
        R"(Gives the whole free pages of this process's malloc heaps back to the kernel (glibc's malloc_trim(0);
nothing under another allocator): after training in a process tuned by fast.tune_malloc(), whose heap
otherwise keeps its peak. Costs a walk over the free blocks.)");
  m.def("launcher", &launcher,
        R"(The launcher that started this process, as fast.init() finds it (docs/launch.md): a dict with source
('fast launch', 'mpirun (OpenMPI)', 'torchrun', ...), runtime (the one it implies), rank, world (processes; 0:
known once the runtime starts), local_rank (-1: unknown), local_world (processes on this host; 0: unknown),
rendezvous (HOST:PORT or '') and evidence (the variables read); None for a single process. Raises
fast.InvalidArgument for a launcher's variable that is malformed.)");
  m.def("workers_on_host", &workers_on_host,
        R"(The workers that share this host's cores, to size torch's threads by (torch.set_num_threads(max(1,
os.cpu_count() // fast.workers_on_host()))): the larger of what the runtime counted at fast.init() (zmq: every
worker of the processes on this machine that met at the rendezvous, processes started by hand included; mpi:
the ranks that share this node's memory) and
the processes on this host that the launcher tells (fast launch, mpirun, srun, torchrun's LOCAL_WORLD_SIZE);
1 when neither says. docs/python.md.)");
  m.def("runtime_names", &runtime::runtime_names, "The runtimes of this build (fast.init's and fast.run's runtime).");
  m.def("init", &init, py::arg("runtime") = py::none(), py::arg("op_timeout") = -1.0, py::arg("collectives") = "",
        py::arg("windows") = "",
        R"(Joins the world this process was started into and returns this process's worker's Context.

runtime: None follows the launcher that started this process (docs/launch.md): 'zmq' under fast launch and
torchrun (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; keys from FAST_KEY_FILE, or FAST_INSECURE=1), 'mpi'
under mpirun and srun, else 'threads' (a world of one worker); the line logged says which. A runtime that
contradicts the launcher (threads under 4 processes) raises fast.InvalidArgument. op_timeout: seconds a blocking
operation may wait (> 0; -1: FAST_OP_TIMEOUT, else the default). collectives: 'fast', 'native' (mpi) or '' (the runtime's default).
windows: where Windows run, 'rma' (MPI RMA under mpi), 'service' or '' (FAST_WINDOWS, else the runtime's default).
The world lasts until fast.shutdown() or the interpreter's exit.)");
  m.def(
      "shutdown", [](const std::string& failure) { interruptible([&] { ProcessWorld::instance().stop(failure); }); },
      py::arg("failure") = "",
      R"(Leaves the world of fast.init() (collective under zmq and mpi: every process calls it). With a
failure message the other processes are told that this one failed. Does nothing without a world.)");
  m.def(
      "context", [] { return ProcessWorld::instance().current(); },
      "The Context of fast.init()'s world, or None before init() and after shutdown().");
  m.def("run", &run, py::arg("fn"), py::arg("workers"), py::arg("runtime") = "threads", py::arg("cluster") = "",
        py::arg("op_timeout") = -1.0,
        R"(Runs fn(context) on `workers` workers of this process and returns their results in rank order.

runtime: 'threads' (one thread per worker) or 'sim' (SimGrid actors on a simulated cluster: `cluster` file,
or one host per worker). op_timeout: seconds a blocking operation may wait (> 0; -1: FAST_OP_TIMEOUT, else the
default). If a worker raises, the others are released from their waits and its exception is re-raised here.)");
}

}  // namespace fast::python
