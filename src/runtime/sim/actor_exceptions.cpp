#include "actor_exceptions.hpp"

#include <cxxabi.h>

namespace fast::runtime::sim {

namespace {
// The top of this OS thread's stack of caught exceptions: the first member of the Itanium ABI's
// __cxa_eh_globals, which <cxxabi.h> declares without its members.
void*& caught_top() noexcept { return *reinterpret_cast<void**>(abi::__cxa_get_globals()); }
}  // namespace

KeepCaughtExceptions::KeepCaughtExceptions() noexcept : saved_(caught_top()) {}

KeepCaughtExceptions::~KeepCaughtExceptions() { caught_top() = saved_; }

void start_actor_exceptions() noexcept { caught_top() = nullptr; }

}  // namespace fast::runtime::sim
