#pragma once
// The worlds a Python process takes part in, as Python sees them.
//
// fast.init() joins the world this process was started into (fast launch: zmq; mpirun: mpi;
// otherwise a world of one worker) and keeps it until fast.shutdown() (or interpreter exit). The
// runtime's launch() runs its worker function on a thread of its own and returns only when the
// function does; ProcessWorld runs launch() on a background thread whose worker function hands its
// Context to Python and then waits for shutdown. Python's main thread is then that worker's main
// activity (the Context contract allows any activity of the worker).
//
// fast.run(fn, workers=N) runs fn(context) on N workers of one process (threads or sim): each
// worker's thread (a SimGrid actor under sim) takes the GIL to run Python and releases it whenever
// FAST waits, so the workers interleave.
//
// ContextHandle: what a Python Context object holds. Once its world ended (shutdown, or the end of
// fn under run()) every use of it, or of an object built on it, raises InvalidUsage instead of
// touching freed memory.

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <pybind11/pybind11.h>

#include "fast/runtime/context.hpp"
#include "fast/runtime/launcher.hpp"

namespace fast::python {

namespace py = pybind11;

class ContextHandle {
 public:
  explicit ContextHandle(runtime::Context* ctx) : ctx_(ctx), interrupts_at_start_(runtime::interrupts_so_far()) {}
  // The context; InvalidUsage when its world has ended.
  runtime::Context& get() const;
  // Ends the handle: runs the closers still registered (in registration order; one that throws is
  // logged and the others still run), then get() refuses. Called on the worker's thread while the
  // Context still exists. Idempotent.
  void close() noexcept;
  // False once the world ended: closed, or interrupted (Ctrl-C, runtime::interrupt_launches) since
  // the handle was made; get() still returns the context of an interrupted world until it closes.
  bool open() const noexcept;
  // `closer` ends an object that must not outlive the world (a Worker whose windows serve
  // requests on the Context) when the world ends before the object does — a worker function that
  // raised, whose traceback keeps its objects after fast.run returns. Returns an id for forget().
  // Runs at once when the handle is already closed (returns 0).
  std::uint64_t on_close(std::function<void()> closer);
  // The object ended first: its closer is dropped. Unknown ids are ignored.
  void forget(std::uint64_t id) noexcept;

 private:
  mutable std::mutex mutex_;
  runtime::Context* ctx_;
  std::uint64_t interrupts_at_start_;  // runtime::interrupts_so_far() when the world started
  std::vector<std::pair<std::uint64_t, std::function<void()>>> closers_;
  std::uint64_t next_id_ = 1;
};
using ContextRef = std::shared_ptr<ContextHandle>;

// Destroys what `owned` holds without holding the GIL where this thread holds it (destroying a
// Worker or a Window may wait for a transfer that another worker thread, running Python, completes).
template <class T>
void reset_without_gil(std::unique_ptr<T>& owned) {
  if (PyGILState_Check() == 1) {
    py::gil_scoped_release release;
    owned.reset();
  } else {
    owned.reset();
  }
}

// Registers init, shutdown, run, runtime_names and the Context and Work types.
void bind_process(py::module_& m);

}  // namespace fast::python
