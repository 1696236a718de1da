#include "sim_context.hpp"

#include <simgrid/Exception.hpp>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>

#include <fmt/format.h>

#include "compute_pool.hpp"
#include "fast/core/error.hpp"
#include "fast/core/log.hpp"
#include "mailbox.hpp"
#include "sim_sync.hpp"
#include "world_state.hpp"

namespace fast::runtime::sim {

namespace sg = simgrid::s4u;

SimContext::SimContext(int rank, WorldState& world)
    : rank_(rank), world_(world), sleep_mutex_(new_mutex()), sleep_cv_(new_condition_variable()) {
  world_.watch(sleep_cv_);  // woken when a worker is lost
}

int SimContext::size() const { return world_.size(); }
double SimContext::now() const { return world_.now(); }
double SimContext::operation_time_limit() const { return world_.op_timeout(); }

void SimContext::check_alive(const char* what) const {
  world_.take_interrupt();
  if (world_.aborted()) throw core::RemoteError(fmt::format("{} refused: {}", what, world_.abort_message()));
  // This worker itself was lost: it stops at its next runtime call.
  if (world_.lost(rank_)) throw core::PeerLost(fmt::format("{} refused: {}", what, world_.lost_message(rank_)));
}

void SimContext::sleep(double seconds) {
  check_alive("sleep");
  if (seconds <= 0) return;
  // A condition wait rather than sleep_for, so that a loss ends the sleep at once.
  const double deadline = world_.now() + seconds;
  {
    KeepCaughtExceptions keep;  // locking, waiting and unlocking are simcalls
    std::unique_lock<sg::Mutex> lock(*sleep_mutex_);
    for (double left = seconds; left > 0 && !world_.lost(rank_) && !world_.aborted(); left = deadline - world_.now())
      sleep_cv_->wait_for(lock, left);
  }
  check_alive("sleep");
}

void SimContext::compute(double flops) {
  check_alive("compute");
  if (flops <= 0) return;
  sg::ExecPtr exec;
  {
    KeepCaughtExceptions keep;
    exec = sg::this_actor::exec_init(flops);
  }
  world_.add_running(rank_, exec);  // cancelled if this worker is lost meanwhile
  try {
    KeepCaughtExceptions keep;  // put back before the handler below runs
    exec->start();
    exec->wait();
  } catch (const simgrid::Exception&) {
    world_.remove_running(rank_, exec);
    check_alive("compute");
    throw;
  }
  world_.remove_running(rank_, exec);
  check_alive("compute");
}

// The work runs on a pool thread while the simulated execution lets the other actors run (each
// hands its own work to the pool): their computations overlap in real time, and the simulated
// events stay those of work() then compute(flops), as the simulated duration does not depend on
// the work. Work of no simulated time (flops <= 0) yields instead: the other actors of the same
// instant run on (handing their own such work to the pool) before this one waits for its work.
// The yield is made with and without a pool, so the simulated events do not depend on the
// threads. The work is waited for before anything unwinds: it uses this worker's memory.
void SimContext::compute_overlapped(double flops, const std::function<void()>& work) {
  ComputePool* pool = world_.compute_pool();
  check_alive("compute");
  if (pool == nullptr) {
    work();
    simulate_work(flops);
    return;
  }
  std::future<void> done = pool->submit([&work] { work(); });
  std::exception_ptr simulated;
  try {
    simulate_work(flops);
  } catch (...) {
    simulated = std::current_exception();
  }
  done.get();  // the work's own error first: it came before the flops in the simulated order
  if (simulated) std::rethrow_exception(simulated);
}

// The work's simulated part: its flops, or for none a yield, which lets every other actor that is
// ready at this simulated instant run before this one goes on.
void SimContext::simulate_work(double flops) {
  if (flops > 0) {
    compute(flops);
    return;
  }
  yield_to_others();
  check_alive("compute");
}

// bytes / memory_bandwidth seconds of one core, as an execution of that many seconds' flops at the
// host's speed: it shares the cores with the host's other executions, and slows down with the host.
void SimContext::memory_traffic(double bytes) {
  const double bandwidth = world_.memory_bandwidth();
  if (bytes <= 0 || bandwidth <= 0) return;
  compute(bytes / bandwidth * world_.host(rank_)->get_speed());
}

std::optional<core::Work> SimContext::refuse_send(int peer, Tag tag, const char* what) {
  check_peer(*this, peer, what);
  // A lost peer first (also when its loss aborted the world): the send's own cause.
  if (world_.lost(peer) && !world_.lost(rank_))
    return core::Work::failed(std::make_exception_ptr(core::PeerLost(fmt::format(
        "{} from rank {} to rank {} (tag {:#x}) failed: {}", what, rank_, peer, tag, world_.lost_message(peer)))));
  check_alive(what);
  return std::nullopt;
}

std::shared_ptr<SendWork> SimContext::start_send(int peer, Tag tag, std::shared_ptr<Payload> payload) {
  LinkCounters& c = counters_.at(peer);
  c.bytes_sent += payload->bytes();
  c.messages_sent += 1;
  auto m = std::make_shared<Message>();
  m->src = rank_;
  m->dst = peer;
  m->tag = tag;
  m->data = std::move(payload);
  {
    KeepCaughtExceptions keep;
    m->transfer = sg::Comm::sendto_async(world_.host(rank_), world_.host(peer), m->data->bytes());
  }
  // A receive matched now completes on its own side once the transfer arrives; an owned
  // message's bytes go into it at once.
  if (const std::shared_ptr<RecvOp> recv = world_.inbox(peer).post_message(m)) deliver_early(world_, *m, recv);
  return std::make_shared<SendWork>(std::move(m), world_);
}

core::Work SimContext::send(int peer, Tag tag, core::ConstView data) {
  if (std::optional<core::Work> refused = refuse_send(peer, tag, "send")) return std::move(*refused);
  std::shared_ptr<SendWork> work = start_send(peer, tag, payload_of(data));
  last_send_ = work;
  last_source_ = data.data();
  return core::Work(std::move(work));
}

core::Work SimContext::send_owned(int peer, Tag tag, std::shared_ptr<const core::Buffer> data) {
  FAST_ENFORCE_AS(core::InvalidArgument, data != nullptr, "send_owned to rank {} (tag {:#x}): no buffer", peer, tag);
  if (std::optional<core::Work> refused = refuse_send(peer, tag, "send_owned")) return std::move(*refused);
  auto payload = std::make_shared<Payload>(std::move(data));
  payload->add_message();
  return core::Work(start_send(peer, tag, std::move(payload)));
}

// Context::send lets no one change the memory of a send under way, so a message reads it in place
// and keeps a copy only if its sender may change it before delivery (Message::release_source). So
// while this worker's last send, from the same memory with the same length and dtype, is under way
// from the sender's view (its Work held and not seen complete), the memory is still the content
// of its Payload and the new message shares that Payload. neighbor_average's sends of one model to
// every neighbour take at most one copy instead of one each, none when every neighbour received
// before the sender saw its sends complete.
std::shared_ptr<Payload> SimContext::payload_of(core::ConstView data) {
  if (const std::shared_ptr<SendWork> last = last_send_.lock(); last && last_source_ == data.data()) {
    const Message& m = *last->message();
    const core::ConstView shared = m.data->view();
    if (shared.numel() == data.numel() && shared.dtype() == data.dtype() && !last->released()) {
      m.data->add_message();
      return m.data;
    }
  }
  auto payload = std::make_shared<Payload>(data);
  payload->add_message();
  return payload;
}

// The payload of the sends of `data` under way when exactly `sends` share it (payload_of: its
// messages are every send made from that memory since the first of them), else null.
std::shared_ptr<Payload> SimContext::payload_of_sends(const std::vector<core::Work>& sends, core::ConstView data) {
  const std::shared_ptr<SendWork> last = last_send_.lock();
  if (!last || last_source_ != data.data() || last->released()) return nullptr;
  const std::shared_ptr<Payload>& payload = last->message()->data;
  const core::ConstView shared = payload->view();
  if (payload->copied() || shared.numel() != data.numel() || shared.dtype() != data.dtype()) return nullptr;
  return payload->messages() == sends.size() ? payload : nullptr;
}

// The messages not delivered when their sender sees its sends complete each need the content sent;
// rather than a copy for them, `scratch` takes it (Payload::keep writes the new contents into
// scratch and swaps it with the sender's memory). Without such messages, write(data) as by default.
void SimContext::finish_sends_then_write(std::vector<core::Work>& sends, core::MutableView data, core::Buffer& scratch,
                                         const ElementWrite& write) {
  const std::shared_ptr<Payload> payload = payload_of_sends(sends, data);
  if (!payload || scratch.numel() != data.numel() || scratch.dtype() != data.dtype()) {
    Context::finish_sends_then_write(sends, data, scratch, write);
    return;
  }
  payload->offer_spare(data, scratch, write);
  try {
    core::wait_all(sends);
  } catch (...) {  // the std errors after every send ended; an actor's kill at once
    payload->withdraw_spare(/*restore=*/true);
    throw;
  }
  // Lent or not, one computation of no simulated time follows the waits (the lent write ran in
  // Payload::keep): the actors' order in the instant does not depend on the lending.
  if (payload->withdraw_spare(/*restore=*/false))
    compute_overlapped(0, [] {});
  else
    compute_overlapped(0, [&] { write(data); });
}

core::Work SimContext::post_recv(std::shared_ptr<RecvOp> op) {
  check_alive(op->describe().c_str());
  op->counters = &counters_;
  world_.inbox(rank_).post_recv(op);
  return core::Work(std::make_shared<RecvWork>(std::move(op), world_));
}

core::Work SimContext::recv(int peer, Tag tag, core::MutableView dst, Combine combine) {
  check_peer(*this, peer, "recv");
  auto op = std::make_shared<RecvOp>();
  op->kind = RecvOp::Kind::view;
  op->src = peer;
  op->dst = rank_;
  op->tag = tag;
  op->dst_view = dst;
  op->combine = combine;
  return post_recv(std::move(op));
}

core::Work SimContext::recv(int peer, Tag tag, core::Buffer& out) {
  check_peer(*this, peer, "recv");
  auto op = std::make_shared<RecvOp>();
  op->kind = RecvOp::Kind::buffer;
  op->src = peer;
  op->dst = rank_;
  op->tag = tag;
  op->out = &out;
  return post_recv(std::move(op));
}

core::Work SimContext::recv_any(Tag tag, core::Buffer& out, int& source) {
  auto op = std::make_shared<RecvOp>();
  op->kind = RecvOp::Kind::buffer;
  op->src = RecvOp::kAnySource;
  op->dst = rank_;
  op->tag = tag;
  op->out = &out;
  op->source = &source;
  return post_recv(std::move(op));
}

void SimContext::recv_each_then(std::span<const int> peers, Tag tag, core::DType dtype, std::size_t numel,
                                const ReduceReceived& reduce) {
  for (int peer : peers) check_peer(*this, peer, "recv_each_then");
  std::vector<std::shared_ptr<RecvOp>> ops;
  std::vector<core::Work> receives;
  ops.reserve(peers.size());
  receives.reserve(peers.size());
  for (int peer : peers) {
    auto op = std::make_shared<RecvOp>();
    op->kind = RecvOp::Kind::held;
    op->src = peer;
    op->dst = rank_;
    op->tag = tag;
    ops.push_back(op);
    receives.push_back(post_recv(std::move(op)));
  }
  core::wait_all(receives);  // each completes without moving its bytes (deliver: Kind::held)
  read_held(world_, ops, dtype, numel, reduce);
}

std::optional<std::size_t> SimContext::try_recv(int peer, Tag tag, core::MutableView dst, Combine combine) {
  check_peer(*this, peer, "try_recv");
  check_alive("try_recv");
  std::shared_ptr<Message> m = world_.inbox(rank_).take_arrived(peer, tag);
  if (!m) return std::nullopt;
  RecvOp recv;
  recv.kind = RecvOp::Kind::view;
  recv.src = peer;
  recv.dst = rank_;
  recv.tag = tag;
  recv.dst_view = dst;
  recv.combine = combine;
  recv.counters = &counters_;
  recv.message = m;
  const std::size_t numel = m->data->view().numel();  // before the delivery, which lets go of an owned buffer
  deliver(recv);
  if (recv.error) std::rethrow_exception(recv.error);
  return numel;
}

namespace {
// Completion of a spawned activity: waiters sleep on a SimGrid condition variable.
struct ActivityWork final : core::WorkImpl {
  explicit ActivityWork(WorldState& w) : world(w), mutex(new_mutex()), cv(new_condition_variable()) {}
  WorldState& world;
  sg::MutexPtr mutex;
  sg::ConditionVariablePtr cv;
  std::string name;
  bool done = false;
  std::exception_ptr err;

  bool completed() const override { return done; }
  std::exception_ptr error() const override { return err; }
  bool wait_for(double timeout_seconds) override {
    if (done) return true;
    KeepCaughtExceptions keep;  // locking, waiting and unlocking are simcalls
    std::unique_lock<sg::Mutex> lock(*mutex);
    if (timeout_seconds < 0) {
      // An activity runs for as long as its work takes; its own operations carry the time limits.
      while (!done) cv->wait(lock);
      return true;
    }
    const double deadline = world.now() + timeout_seconds;
    while (!done) {
      const double left = deadline - world.now();
      if (left <= 0 || cv->wait_for(lock, left) == std::cv_status::timeout) return done;
    }
    return true;
  }
  void finish(std::exception_ptr e) {
    err = std::move(e);
    done = true;
    KeepCaughtExceptions keep;
    cv->notify_all();
  }
};
}  // namespace

core::Work SimContext::spawn(std::string name, std::function<void()> fn) {
  check_alive("spawn");
  auto state = std::make_shared<ActivityWork>(world_);
  state->name = name;
  KeepCaughtExceptions keep;
  sg::Actor::create(
      fmt::format("w{}-{}", rank_, name), world_.host(rank_), [state, fn = std::move(fn), rank = rank_]() {
        start_actor_exceptions();
        std::exception_ptr err;
        try {
          fn();
        } catch (const std::exception& e) {
          core::log(core::LogLevel::debug, "worker {} activity '{}' failed: {}", rank, state->name, e.what());
          err = std::current_exception();
        }
        state->finish(err);
      });
  return core::Work(state);
}

std::unique_ptr<Mutex> SimContext::make_mutex() { return std::make_unique<SimMutex>(); }
std::unique_ptr<CondVar> SimContext::make_condvar() { return std::make_unique<SimCondVar>(world_, rank_); }

bool SimContext::alive(int peer) const {
  check_peer(*this, peer, "alive");
  return !world_.lost(peer) && !world_.ended(peer);
}

void SimContext::ensure_alive(int peer) const {
  check_peer(*this, peer, "ensure_alive");
  if (world_.lost(peer)) throw core::PeerLost(world_.lost_message(peer));
  if (world_.ended(peer)) throw core::PeerLost(world_.ended_message(peer));
}

LinkStats SimContext::link_stats(int peer) const {
  check_peer(*this, peer, "link_stats");
  const LinkCounters c = counters_.get(peer);
  return {c.bytes_sent, c.messages_sent, c.bytes_received, c.messages_received};
}

}  // namespace fast::runtime::sim

namespace fast::runtime::sim {

std::optional<NetworkModel> SimContext::network_model() const { return world_.network_model(); }

}  // namespace fast::runtime::sim
