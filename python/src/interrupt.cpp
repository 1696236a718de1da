#include "interrupt.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <mutex>
#include <system_error>
#include <thread>

#include "fast/core/stop_request.hpp"
#include "fast/runtime/launcher.hpp"

namespace fast::python::detail {

namespace py = pybind11;

namespace {

constexpr const char* kInterrupted = "interrupted by SIGINT (Ctrl-C)";

// Between the main thread's scopes and the watcher: whether a scope is armed, the signals counted
// when it was, and whether the watcher ended the worlds for a signal counted since (sticky until
// the scope ends).
std::mutex g_mutex;
bool g_armed = false;
bool g_acted = false;
std::uint64_t g_signals_at_arm = 0;

// Set before the handler is installed, read by it: the handler it wraps (Python's), the process
// that installed it (a child forked by the program inherits it, and must not wake this process's
// watcher), the watcher's wake-up and the signals counted.
struct sigaction g_previous {};
std::atomic<pid_t> g_owner{0};
int g_event_fd = -1;
std::atomic<std::uint64_t> g_signals{0};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "the handler adds to an atomic u64");

// Main thread only: armed scopes (the outermost one holds the arming).
int g_depth = 0;

extern "C" void on_sigint(int signal, siginfo_t* info, void* context) {
  const int saved = errno;
  if (::getpid() == g_owner.load()) {
    g_signals.fetch_add(1);
    const std::uint64_t one = 1;
    (void)!::write(g_event_fd, &one, sizeof(one));
  }
  // Python's own handler records the signal for the interpreter, as it would without FAST.
  if ((g_previous.sa_flags & SA_SIGINFO) != 0 && g_previous.sa_sigaction != nullptr)
    g_previous.sa_sigaction(signal, info, context);
  else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN && g_previous.sa_handler != nullptr)
    g_previous.sa_handler(signal);
  errno = saved;
}

// The watcher: ends the worlds once per armed wait that a SIGINT reached.
void watch() {
  for (;;) {
    std::uint64_t count = 0;
    if (::read(g_event_fd, &count, sizeof(count)) != sizeof(count)) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return;
    }
    std::lock_guard<std::mutex> lock(g_mutex);
    // Not armed, or a signal from before the wait: Python raises KeyboardInterrupt as usual.
    if (!g_armed || g_acted || g_signals.load() == g_signals_at_arm) continue;
    g_acted = true;
    core::request_stop(SIGINT);  // a rendezvous in progress stops too
    runtime::interrupt_launches(kInterrupted);
  }
}

// Starts the watcher once per process (on the main thread, GIL held): again in a child forked
// from a process that had one (threads do not survive fork). False where it cannot have one.
bool watcher_running() {
  static pid_t watched = 0;  // the process whose watcher runs
  const pid_t self = ::getpid();
  if (watched == self) return true;
  const int fd = ::eventfd(0, EFD_CLOEXEC);
  if (fd < 0) return false;
  const int before = g_event_fd;
  g_event_fd = fd;
  try {
    std::thread(watch).detach();  // blocked in read() to the process's end
  } catch (const std::system_error&) {
    g_event_fd = before;
    ::close(fd);
    return false;
  }
  if (before >= 0) ::close(before);  // a forked parent's, which this process's watcher does not read
  watched = self;
  return true;
}

bool on_main_thread() {
  static const unsigned long main_ident =
      py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
  return PyThread_get_thread_ident() == main_ident;
}

// Whether Python's SIGINT handler is its default, the one that raises KeyboardInterrupt.
bool python_handler_is_default() {
  // Kept for the process's life (never released: no Python call at static destruction). The C
  // module's getsignal: signal.getsignal's conversion to an enum raises and catches an exception
  // for a function handler, 2 us a call.
  static py::object* getsignal = new py::object(py::module_::import("_signal").attr("getsignal"));
  static py::object* default_handler = new py::object(py::module_::import("_signal").attr("default_int_handler"));
  return (*getsignal)(SIGINT).is(*default_handler);
}

// Main thread, Python's default handler set: makes sure on_sigint wraps Python's C handler. It
// stays installed between waits, forwarding every SIGINT to Python's handler; each wait looks
// (one system call) whether signal.signal() or asyncio put Python's back since.
bool handler_in_place() {
  g_owner.store(::getpid());  // a forked child's own process, from here on
  struct sigaction current {};
  if (::sigaction(SIGINT, nullptr, &current) != 0) return false;
  if ((current.sa_flags & SA_SIGINFO) != 0 && current.sa_sigaction == on_sigint) return true;
  g_previous = current;  // Python's
  struct sigaction ours {};
  ours.sa_sigaction = on_sigint;
  sigemptyset(&ours.sa_mask);
  ours.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  return ::sigaction(SIGINT, &ours, nullptr) == 0;
}

bool acted() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_acted;
}

}  // namespace

InterruptScope::InterruptScope() {
  if (!on_main_thread()) return;
  if (g_depth > 0) {
    nested_ = true;
    ++g_depth;
    return;
  }
  if (!python_handler_is_default() || !watcher_running() || !handler_in_place()) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  g_armed = true;
  g_acted = false;
  g_signals_at_arm = g_signals.load();
  armed_ = true;
  g_depth = 1;
}

InterruptScope::~InterruptScope() {
  if (nested_) {
    --g_depth;
    return;
  }
  if (!armed_) return;
  g_depth = 0;
  std::lock_guard<std::mutex> lock(g_mutex);
  g_armed = false;
  if (g_acted) core::clear_stop_request();
  g_acted = false;
}

void InterruptScope::end(std::exception_ptr error) {
  bool interrupted = false;
  const bool outermost = armed_;
  if (nested_) {
    nested_ = false;
    --g_depth;
    interrupted = acted();
  } else if (armed_) {
    armed_ = false;
    g_depth = 0;
    std::lock_guard<std::mutex> lock(g_mutex);
    g_armed = false;
    interrupted = g_acted;
    if (g_acted) core::clear_stop_request();
    g_acted = false;
  }
  if (interrupted) {
    // Python's handler raises KeyboardInterrupt, once: a nested scope that finds the signal taken
    // rethrows its own error (the RemoteError of the world it ended); the outermost raises
    // KeyboardInterrupt whatever its wait ended with.
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    if (outermost) {
      PyErr_SetNone(PyExc_KeyboardInterrupt);
      throw py::error_already_set();
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace fast::python::detail
