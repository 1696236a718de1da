#pragma once
// InterruptSlot: how runtime::interrupt_launches (runtime/launcher.hpp) reaches the worlds of this
// process that are under way. A world holds a slot for its life; the slot's function ends the
// world's waits with the message it is given.
//
// Thread-safety: slots are made and destroyed on any thread; interrupt_launches calls each live
// slot's function under the registry's lock, so a slot's destructor waits for a call in progress
// and the function never runs after it. The function must not make or destroy a slot.

#include <functional>
#include <string>

namespace fast::runtime {

class InterruptSlot {
 public:
  using Interrupt = std::function<void(const std::string& message)>;
  explicit InterruptSlot(Interrupt interrupt);
  ~InterruptSlot();
  InterruptSlot(const InterruptSlot&) = delete;
  InterruptSlot& operator=(const InterruptSlot&) = delete;

 private:
  friend void interrupt_launches(const std::string& message);
  Interrupt interrupt_;
};

}  // namespace fast::runtime
