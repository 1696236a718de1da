#pragma once
// What a thread that polls for something does between two looks (WorldState's waiters, the zmq
// transport's polling waits): a CPU pause where every thread that may want a core has one (`spin`),
// else gives its core away (sched_yield), so that the thread or process it waits for runs sooner.
// Thread-safety: none needed.

#include <thread>

namespace fast::runtime::engine {

inline void pause_between_looks(bool spin) {
  if (!spin) {
    std::this_thread::yield();
    return;
  }
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace fast::runtime::engine
