#pragma once
// Stop requests: SIGINT and SIGTERM asking a training run to end cleanly (docs/faults.md,
// "Interrupting a run"). The handler only records the signal; training loops poll
// stop_requested() at points where every worker can agree to stop (fast train: lockstep
// strategies agree through a small all-reduce, asynchronous ones spend the shared budget), then
// write a checkpoint, the end record and a summary marked interrupted.
//
// A second SIGINT or SIGTERM while a stop is pending restores the default action and re-raises the
// signal: the process ends at once, as it would without handlers.
//
// Thread-safety: stop_requested() and request_stop() may be called from any thread; install and
// uninstall from one thread, not concurrently with each other.

namespace fast::core {

// Installs the handlers for SIGINT and SIGTERM (once per process; idempotent). Returns whether
// they are installed.
bool install_stop_handlers();
// Restores the dispositions found at install time and clears any pending request.
void uninstall_stop_handlers();
// Whether the handlers are installed (a loop that cannot be stopped cleanly need not poll).
bool stop_handlers_installed() noexcept;
// The signal of the pending stop request (SIGINT, SIGTERM), or 0 when none is pending.
int stop_requested() noexcept;
// Requests a stop as the signal `signal` would (tests, embedding programs). Async-signal-safe.
void request_stop(int signal) noexcept;
// Withdraws a pending request (one that request_stop made, once what it stopped has ended).
void clear_stop_request() noexcept;

}  // namespace fast::core
