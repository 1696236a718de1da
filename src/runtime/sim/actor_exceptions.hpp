#pragma once
// Each simulated actor's own stack of the exceptions it is handling.
//
// SimGrid runs the actors one after another on one OS thread (its raw contexts swap stacks, not
// threads), and the C++ runtime keeps the exceptions being handled per OS thread: a `catch` pushes
// its exception on one stack, the handler's end pops the top, and `throw;` and
// std::current_exception() read the top. An actor that yields inside a handler (any runtime call
// there: a send, a wait, a lock) would resume with the other actors' handlers on that stack: its
// `throw;` rethrew another actor's exception, and its handler's end ended another's, freeing an
// exception still in use. So the sim runtime saves the calling actor's stack before every SimGrid
// call that may switch actors and puts it back when the call returns or throws
// (KeepCaughtExceptions), and each actor starts with an empty one (start_actor_exceptions). With
// them, code that runs on the sim runtime may call the runtime inside a catch handler as it may
// on the others.
//
// Only the stack's top is kept: the count of exceptions in flight (std::uncaught_exceptions) stays
// shared between the actors of the thread; no FAST code reads it. Relies on the Itanium C++ ABI's
// per-thread exception globals (GCC's and Clang's runtimes), whose first member is that top.
//
// Thread-safety: used by an actor on the simulation's thread (or its own thread, where SimGrid's
// thread contexts run each actor on one), never shared.

namespace fast::runtime::sim {

// Saves the calling actor's stack of caught exceptions; the destructor puts it back. Declared
// before a SimGrid call (or a lock whose unlock is one) and destroyed after it, including when the
// call throws.
class KeepCaughtExceptions {
 public:
  KeepCaughtExceptions() noexcept;
  ~KeepCaughtExceptions();
  KeepCaughtExceptions(const KeepCaughtExceptions&) = delete;
  KeepCaughtExceptions& operator=(const KeepCaughtExceptions&) = delete;

 private:
  void* saved_;
};

// The first statement of every actor's body: no exception is being handled when an actor starts
// (rather than those of the actor that ran before it on the thread).
void start_actor_exceptions() noexcept;

}  // namespace fast::runtime::sim
