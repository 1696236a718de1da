#include "threads_context.hpp"

#include <chrono>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "../completion.hpp"
#include "fast/core/error.hpp"
#include "fast/core/log.hpp"
#include "mailbox.hpp"
#include "op.hpp"
#include "shared_board.hpp"
#include "threads_sync.hpp"
#include "transport.hpp"
#include "world_state.hpp"

namespace fast::runtime::engine {

void ActivityList::add(std::thread t) {
  std::lock_guard<std::mutex> lock(mutex_);
  threads_.push_back(std::move(t));
}

void ActivityList::join_all() {
  for (;;) {
    std::vector<std::thread> batch;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      batch.swap(threads_);
    }
    if (batch.empty()) return;
    for (auto& t : batch) t.join();
  }
}

ThreadsContext::ThreadsContext(int rank, WorldState& world, std::vector<std::unique_ptr<Mailbox>>& mailboxes,
                               ActivityList& activities, SharedBoard* board)
    : rank_(rank),
      world_(world),
      mailboxes_(mailboxes),
      activities_(activities),
      board_(board),
      counters_(std::make_unique<LinkCounters[]>(static_cast<std::size_t>(world.size()))) {
  if (board_ != nullptr) board_->seat(rank_).attach(counters_.get());
}

int ThreadsContext::size() const { return world_.size(); }
void ThreadsContext::settle_lost_peers() {
  if (world_.transport() != nullptr) world_.transport()->settle_lost_peers();
}

NativeCollectives* ThreadsContext::native_collectives() {
  return world_.transport() != nullptr ? world_.transport()->native_collectives() : nullptr;
}

RemoteMemory* ThreadsContext::remote_memory() {
  return world_.transport() != nullptr ? world_.transport()->remote_memory(counters_.get()) : nullptr;
}

std::optional<NetworkModel> ThreadsContext::pair_network_model(int a, int b) const {
  if (world_.transport() == nullptr || (world_.is_local(a) && world_.is_local(b))) return std::nullopt;
  return world_.transport()->pair_network_model(a, b);
}

SharedRendezvous* ThreadsContext::shared_rendezvous() { return board_ != nullptr ? &board_->seat(rank_) : nullptr; }

Mailbox& ThreadsContext::own_mailbox() const {
  return *mailboxes_[static_cast<std::size_t>(rank_ - world_.first_rank())];
}

int ThreadsContext::local_size() const { return world_.local_size(); }
std::string ThreadsContext::runtime_name() const { return world_.runtime_name(); }
double ThreadsContext::operation_time_limit() const { return world_.op_timeout(); }

bool ThreadsContext::joins_run_under_way() const { return world_.joining(); }

std::vector<MembershipEvent> ThreadsContext::membership_events() const {
  return world_.transport() != nullptr ? world_.transport()->membership_events() : std::vector<MembershipEvent>{};
}

bool ThreadsContext::alive(int peer) const {
  check_peer(*this, peer, "alive");
  return world_.is_local(peer) || world_.transport()->alive(peer);
}

void ThreadsContext::ensure_alive(int peer) const {
  check_peer(*this, peer, "ensure_alive");
  if (!world_.is_local(peer)) world_.transport()->ensure_alive(peer);
}
double ThreadsContext::now() const { return world_.now(); }

void ThreadsContext::sleep(double seconds) {
  if (seconds <= 0) return;
  // Sleep in slices so an aborted world releases the sleeper.
  const double end = world_.now() + seconds;
  for (;;) {
    if (world_.aborted()) throw core::RemoteError("sleep abandoned: " + world_.abort_message());
    const double left = end - world_.now();
    if (left <= 0) return;
    std::this_thread::sleep_for(std::chrono::duration<double>(std::min(left, 0.05)));
  }
}

namespace {
std::shared_ptr<Op> new_op(Op::Kind kind, int src, int dst, Tag tag) {
  auto op = std::make_shared<Op>();
  op->kind = kind;
  op->src = src;
  op->dst = dst;
  op->tag = tag;
  return op;
}
}  // namespace

core::Work ThreadsContext::send(int peer, Tag tag, core::ConstView data) {
  check_peer(*this, peer, "send");
  auto op = new_op(Op::Kind::send, rank_, peer, tag);
  op->send_data = data;
  LinkCounters& c = counters_[static_cast<std::size_t>(peer)];
  c.bytes_sent.fetch_add(data.bytes(), std::memory_order_relaxed);
  c.messages_sent.fetch_add(1, std::memory_order_relaxed);
  if (!world_.is_local(peer)) return world_.transport()->send(rank_, peer, tag, data);
  Mailbox& box = *mailboxes_[static_cast<std::size_t>(peer - world_.first_rank())];
  if (std::shared_ptr<Op> recv = box.post_send(op, world_))
    if (!recv->offer(op)) transfer(*op, *recv);
  return core::Work(std::make_shared<OpWork>(std::move(op), box, world_));
}

core::Work ThreadsContext::post_recv(std::shared_ptr<Op> op) {
  Mailbox& box = own_mailbox();
  op->receiver_counters = counters_.get();
  if (std::shared_ptr<Op> send = box.post_recv(op, world_)) transfer(*send, *op);
  return core::Work(std::make_shared<OpWork>(std::move(op), box, world_));
}

core::Work ThreadsContext::recv(int peer, Tag tag, core::MutableView dst, Combine combine) {
  check_peer(*this, peer, "recv");
  auto op = new_op(Op::Kind::recv_view, peer, rank_, tag);
  op->recv_dst = dst;
  op->combine = combine;
  return post_recv(std::move(op));
}

core::Work ThreadsContext::recv_any(Tag tag, core::Buffer& out, int& source) {
  auto op = new_op(Op::Kind::recv_buffer, Op::kAnySource, rank_, tag);
  op->recv_out = &out;
  op->recv_source = &source;
  return post_recv(std::move(op));
}

core::Work ThreadsContext::recv(int peer, Tag tag, core::Buffer& out) {
  check_peer(*this, peer, "recv");
  auto op = new_op(Op::Kind::recv_buffer, peer, rank_, tag);
  op->recv_out = &out;
  return post_recv(std::move(op));
}

std::optional<std::size_t> ThreadsContext::try_recv(int peer, Tag tag, core::MutableView dst, Combine combine) {
  check_peer(*this, peer, "try_recv");
  std::shared_ptr<Op> send = own_mailbox().take_send(peer, tag, world_);
  if (!send) {
    ensure_alive(peer);
    if (!world_.is_local(peer) && world_.transport() != nullptr) world_.wake_transport();  // it may be on its way
    return std::nullopt;
  }
  Op recv;
  recv.kind = Op::Kind::recv_view;
  recv.src = peer;
  recv.dst = rank_;
  recv.tag = tag;
  recv.recv_dst = dst;
  recv.combine = combine;
  recv.matched = true;
  recv.receiver_counters = counters_.get();
  const std::size_t n = transfer(*send, recv);
  if (recv.error) std::rethrow_exception(recv.error);
  return n;
}

core::Work ThreadsContext::spawn(std::string name, std::function<void()> fn) {
  auto state = std::make_shared<detail::Completion>(fmt::format("worker {} activity '{}'", rank_, name), 0.0);
  world_.activity_started();
  activities_.add(std::thread([state, name = std::move(name), fn = std::move(fn), rank = rank_, world = &world_]() {
    std::exception_ptr err;
    try {
      fn();
    } catch (const std::exception& e) {
      core::log(core::LogLevel::debug, "worker {} activity '{}' failed: {}", rank, name, e.what());
      err = std::current_exception();
    } catch (...) {
      err = std::current_exception();
    }
    world->activity_ended();
    state->complete(std::move(err));  // moved: the waiter's references alone keep the exception (see transfer())
  }));
  return core::Work(state);
}

std::unique_ptr<Mutex> ThreadsContext::make_mutex() { return std::make_unique<ThreadsMutex>(); }
std::unique_ptr<CondVar> ThreadsContext::make_condvar() { return std::make_unique<ThreadsCondVar>(world_); }

LinkStats ThreadsContext::link_stats(int peer) const {
  check_peer(*this, peer, "link_stats");
  const LinkCounters& c = counters_[static_cast<std::size_t>(peer)];
  return {c.bytes_sent.load(std::memory_order_relaxed), c.messages_sent.load(std::memory_order_relaxed),
          c.bytes_received.load(std::memory_order_relaxed), c.messages_received.load(std::memory_order_relaxed)};
}

}  // namespace fast::runtime::engine
