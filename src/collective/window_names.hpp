#pragma once
// WindowName: a worker's claim on the name of one of its open windows (window.hpp). Two open
// windows of one worker under one name would share their messages' tags and wait on each other for
// ever; two names whose tags' hash (FNV-1a, 32 bits) is the same would too. The second is refused
// with InvalidArgument naming both, before the window exchanges anything.
// Thread-safety: claims of any workers, from any threads (one process-wide table under a mutex).

#include <cstdint>
#include <string>

namespace fast::runtime {
class Context;
}  // namespace fast::runtime

namespace fast::collective {

class WindowName {
 public:
  // Claims `name` (tag id `id`) for the worker of `ctx` until destruction or release().
  WindowName(const runtime::Context& ctx, std::string name, std::uint32_t id);
  ~WindowName() { release(); }
  WindowName(const WindowName&) = delete;
  WindowName& operator=(const WindowName&) = delete;

  // Gives the name back (a window of it may be opened again); idempotent.
  void release() noexcept;

 private:
  const runtime::Context* ctx_;
  std::uint32_t id_;
  bool held_ = true;
};

}  // namespace fast::collective
