#include "fast/core/stop_request.hpp"

#include <atomic>
#include <csignal>

namespace fast::core {

namespace {

std::atomic<int> pending{0};
std::atomic<bool> installed{false};
struct sigaction previous_int {};
struct sigaction previous_term {};

static_assert(std::atomic<int>::is_always_lock_free, "the handler stores to an atomic int");

extern "C" void on_stop_signal(int signal) {
  int none = 0;
  if (pending.compare_exchange_strong(none, signal)) return;
  // A second request: end at once, with the default action of this signal.
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  ::sigaction(signal, &fallback, nullptr);
  ::raise(signal);
}

}  // namespace

bool install_stop_handlers() {
  if (installed.load()) return true;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  if (::sigaction(SIGINT, &action, &previous_int) != 0) return false;
  if (::sigaction(SIGTERM, &action, &previous_term) != 0) {
    ::sigaction(SIGINT, &previous_int, nullptr);
    return false;
  }
  installed.store(true);
  return true;
}

void uninstall_stop_handlers() {
  if (!installed.exchange(false)) return;
  ::sigaction(SIGINT, &previous_int, nullptr);
  ::sigaction(SIGTERM, &previous_term, nullptr);
  pending.store(0);
}

bool stop_handlers_installed() noexcept { return installed.load(); }

int stop_requested() noexcept { return pending.load(std::memory_order_relaxed); }

void request_stop(int signal) noexcept {
  int none = 0;
  pending.compare_exchange_strong(none, signal);
}

void clear_stop_request() noexcept { pending.store(0); }

}  // namespace fast::core
