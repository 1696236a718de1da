#include "window_names.hpp"

#include <map>
#include <mutex>
#include <utility>

#include "fast/core/error.hpp"

namespace fast::collective {

namespace {

// The open windows' names by worker (its Context) and tag id.
struct Table {
  std::mutex mutex;
  std::map<std::pair<const runtime::Context*, std::uint32_t>, std::string> open;
};

Table& table() {
  static Table t;
  return t;
}

}  // namespace

WindowName::WindowName(const runtime::Context& ctx, std::string name, std::uint32_t id) : ctx_(&ctx), id_(id) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  const auto [at, fresh] = t.open.try_emplace({ctx_, id_}, name);
  if (fresh) return;
  held_ = false;
  FAST_ENFORCE(at->second != name,
               "window '{}': this worker has a window of that name open already; expected a name unique among its "
               "open windows (close() the other first)",
               name);
  FAST_THROW(InvalidArgument,
             "window '{}': its name's tag hash equals that of the open window '{}' of this worker; expected names "
             "whose hashes differ: choose another name",
             name, at->second);
}

void WindowName::release() noexcept {
  if (!held_) return;
  held_ = false;
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.open.erase({ctx_, id_});
}

}  // namespace fast::collective
