#pragma once
// Ctrl-C while FAST waits (docs/python.md, "Interrupting a run"). Python runs a SIGINT handler only
// when its main thread returns to the interpreter, which a thread blocked in a FAST wait (a
// collective, Work.wait, fast.run, the fast.init rendezvous) does not do until the wait ends: up
// to op_timeout. `interruptible(fn)` runs such a wait without the GIL and, while it runs, lets a
// SIGINT end it:
//
//  - On Python's main thread, while Python's SIGINT handler is its default (the one that raises
//    KeyboardInterrupt), the wait is armed. A C handler wraps Python's (installed at the first
//    armed wait and kept, installed again where signal.signal() or asyncio replaced it; a forked
//    child gets a watcher of its own): it counts the
//    signal, wakes a watcher thread and calls Python's own C handler, so Python sees every SIGINT
//    as before. For a signal during an armed wait, the watcher ends this process's worlds
//    (runtime::interrupt_launches: their waits throw RemoteError) and stops a rendezvous in
//    progress (core::request_stop). When the wait returns or throws, the signal is raised as
//    Python's KeyboardInterrupt in place of its result or error. The world is then over: its later
//    operations raise RemoteError; the process's shutdown tells the others it failed with
//    KeyboardInterrupt.
//  - Elsewhere (another thread, a SIGINT handler of the program's own, SIGINT ignored) it only
//    releases the GIL: the signal is the program's to handle once the wait ends.
//
// Nesting: fast.run's first worker runs on the calling thread inside fast.run's own wait; its
// waits raise KeyboardInterrupt too (the signal is raised once, by the innermost wait that sees
// it), and fast.run's wait ends with the workers' errors.
// Limits: a native MPI collective runs to its end; a sim world ends at its workers' next runtime call.
// Thread-safety: call with the GIL held, from any thread.

#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

#include <pybind11/pybind11.h>

namespace fast::python {

namespace detail {

// Arms the handler where the rules above allow it (GIL held); `end` disarms it and, where the
// signal ended the wait, raises KeyboardInterrupt (py::error_already_set), else rethrows `error`.
class InterruptScope {
 public:
  InterruptScope();
  ~InterruptScope();  // disarms if end() was not reached (an exception of the scope's own)
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;
  void end(std::exception_ptr error);

 private:
  bool armed_ = false;   // this scope holds the handler (the outermost one on the main thread)
  bool nested_ = false;  // inside an armed scope of the main thread
};

}  // namespace detail

// Runs fn() without the GIL as described above; returns its result.
template <class Fn>
auto interruptible(Fn&& fn) -> decltype(fn()) {
  using Result = decltype(fn());
  detail::InterruptScope scope;
  std::exception_ptr error;
  if constexpr (std::is_void_v<Result>) {
    {
      pybind11::gil_scoped_release release;
      try {
        std::forward<Fn>(fn)();
      } catch (...) {
        error = std::current_exception();
      }
    }
    scope.end(error);
  } else {
    std::optional<Result> result;
    {
      pybind11::gil_scoped_release release;
      try {
        result.emplace(std::forward<Fn>(fn)());
      } catch (...) {
        error = std::current_exception();
      }
    }
    scope.end(error);
    return std::move(*result);
  }
}

}  // namespace fast::python
