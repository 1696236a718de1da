#include "local_world.hpp"

#include <thread>

#include "fast/core/error.hpp"
#include "op.hpp"

namespace fast::runtime::engine {

LocalWorld::LocalWorld(WorldShape shape, double op_timeout_seconds, std::string runtime_name, Transport* transport)
    : state_(shape, op_timeout_seconds, std::move(runtime_name), transport) {
  mailboxes_.reserve(static_cast<std::size_t>(shape.local_size));
  for (int r = 0; r < shape.local_size; ++r) mailboxes_.push_back(std::make_unique<Mailbox>());
  if (transport == nullptr && shape.local_size == shape.world_size) board_ = std::make_unique<SharedBoard>(state_);
  interrupt_slot_.emplace([this](const std::string& message) { abort_all(message); });
}

std::vector<std::exception_ptr> LocalWorld::run(const WorkerFn& fn, const FailureFn& on_failure) {
  const int n = state_.local_size();
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
  auto fail = [&](int rank, std::exception_ptr error, const std::string& reason) {
    errors[static_cast<std::size_t>(rank - state_.first_rank())] = std::move(error);
    state_.abort(rank, reason);
    for (auto& box : mailboxes_) box->abort();
    if (on_failure) on_failure(rank, reason);
  };
  auto body = [&](int rank) {
    try {
      ThreadsContext ctx(rank, state_, mailboxes_, activities_, board_.get());
      fn(ctx);
    } catch (const std::exception& e) {
      fail(rank, std::current_exception(), e.what());
    } catch (...) {
      fail(rank, std::current_exception(), "unknown exception");
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(n));
  for (int i = 1; i < n; ++i) threads.emplace_back(body, state_.first_rank() + i);
  body(state_.first_rank());  // the first local rank runs on the calling thread
  for (auto& t : threads) t.join();
  activities_.join_all();
  return errors;
}

void LocalWorld::deliver_remote(int src, int dst, Tag tag, core::ConstView data, std::shared_ptr<const void> owner,
                                bool copy_when_queued) {
  auto op = std::make_shared<Op>();
  op->kind = Op::Kind::send;
  op->src = src;
  op->dst = dst;
  op->tag = tag;
  op->send_data = data;
  op->payload_owner = std::move(owner);
  op->copy_when_queued = copy_when_queued;
  if (std::shared_ptr<Op> recv = mailbox(dst).post_send(op, state_))
    if (!recv->offer(op)) transfer(*op, *recv);
}

void LocalWorld::abort_all(const std::string& message) {
  state_.abort_with(message);
  for (auto& box : mailboxes_) box->abort();
}

void LocalWorld::fail_source(int src, const std::string& reason) {
  for (auto& box : mailboxes_) box->fail_source(src, reason);
}

void LocalWorld::revive_source(int src) {
  for (auto& box : mailboxes_) box->revive_source(src);
}

}  // namespace fast::runtime::engine
