#include "interrupt_slot.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "fast/runtime/launcher.hpp"

namespace fast::runtime {

namespace {

// The slots alive in this process. Never destroyed: a world may end after static destructors
// began (a thread left running at exit).
struct LiveSlots {
  std::mutex mutex;
  std::vector<InterruptSlot*> slots;
};

std::atomic<std::uint64_t> g_interrupts{0};

LiveSlots& live_slots() {
  static auto* live = new LiveSlots();
  return *live;
}

}  // namespace

InterruptSlot::InterruptSlot(Interrupt interrupt) : interrupt_(std::move(interrupt)) {
  LiveSlots& live = live_slots();
  std::lock_guard<std::mutex> lock(live.mutex);
  live.slots.push_back(this);
}

InterruptSlot::~InterruptSlot() {
  LiveSlots& live = live_slots();
  std::lock_guard<std::mutex> lock(live.mutex);
  std::erase(live.slots, this);
}

void interrupt_launches(const std::string& message) {
  g_interrupts.fetch_add(1);
  LiveSlots& live = live_slots();
  std::lock_guard<std::mutex> lock(live.mutex);
  for (InterruptSlot* slot : live.slots) slot->interrupt_(message);
}

std::uint64_t interrupts_so_far() noexcept { return g_interrupts.load(); }

}  // namespace fast::runtime
