#include "transport.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>

#include <zmq_addon.hpp>

#include <fmt/format.h>

#include "../completion.hpp"
#include "fast/core/error.hpp"
#include "fast/core/log.hpp"
#include "frames.hpp"

namespace fast::runtime::zmq {

namespace {
// ZeroMQ calls this when it no longer needs a zero-copy payload: the send's Work completes.
void release_payload(void* /*data*/, void* hint) {
  auto* done = static_cast<std::shared_ptr<detail::Completion>*>(hint);
  (*done)->complete();
  delete done;
}

}  // namespace

std::string ProcessInfo::where() const {
  if (vacant) return fmt::format("process {} (vacant: no process has taken it yet)", rank);
  return fmt::format("process {} on host {}, pid {}", rank, hostname, pid);
}

ProcessInfo vacant_process(int rank, int workers) {
  return {.rank = rank, .first_worker = rank * workers, .workers = workers, .vacant = true};
}

bool same_machine(const ProcessInfo& a, const ProcessInfo& b) {
  if (!a.machine_id.empty() && !b.machine_id.empty()) return a.machine_id == b.machine_id;
  return a.hostname == b.hostname;
}

bool rings_between(const ProcessInfo& a, const ProcessInfo& b) {
  return !a.vacant && !b.vacant && a.host_id == b.host_id && a.shared_memory && b.shared_memory;
}

int workers_on_machine(const ProcessTable& table, int process) {
  const ProcessInfo& me = table.at(static_cast<std::size_t>(process));
  int workers = 0;
  for (const ProcessInfo& p : table)
    if (!p.vacant && same_machine(p, me)) workers += p.workers;
  return workers;
}

std::string tcp_address(const std::string& host, const std::string& port) {
  return host.find(':') != std::string::npos ? fmt::format("tcp://[{}]:{}", host, port)
                                             : fmt::format("tcp://{}:{}", host, port);
}

std::string endpoint_host(const std::string& endpoint) {
  std::string rest = endpoint.starts_with("tcp://") ? endpoint.substr(6) : endpoint;
  rest = rest.substr(0, rest.rfind(':'));
  if (rest.size() > 2 && rest.front() == '[') rest = rest.substr(1, rest.size() - 2);
  return rest;
}

ZmqTransport::ZmqTransport(::zmq::context_t& context, const Settings& settings, ProcessTable table, int process,
                           ::zmq::socket_t router, ::zmq::socket_t pulse)
    : context_(context),
      settings_(settings),
      table_(std::move(table)),
      process_(process),
      workers_per_process_(table_[0].workers),
      router_(std::move(router)),
      pulse_(std::move(pulse)),
      peers_(table_.size()),
      lost_(std::make_unique<std::atomic<bool>[]>(table_.size())),
      start_(std::chrono::steady_clock::now()) {
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  FAST_ENFORCE_AS(core::IoError, wake_fd_ >= 0, "zmq runtime: cannot create an eventfd");
  for (std::size_t p = 0; p < table_.size(); ++p) {
    lost_[p] = table_[p].vacant;  // a vacant rank is lost until a process takes it (revive)
    if (!table_[p].vacant) continue;
    peers_[p].lost = true;
    peers_[p].reason = "is vacant: no process has taken its rank yet";
    for (int w = table_[p].first_worker; w < table_[p].first_worker + table_[p].workers; ++w)
      events_.push_back({.at = 0,
                         .worker = w,
                         .joined = false,
                         .before_join = true,
                         .vacant = true,
                         .detail = "vacant: the run may grow to this rank (--max-workers); no process holds it yet"});
  }
  // The workers that share this machine's cores, in every network namespace of it.
  const auto on_machine = static_cast<unsigned>(workers_on_machine(table_, process_));
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  spin_pays_ = on_machine <= cores;
  readers_alongside_ = settings_.read_alongside >= 0 ? settings_.read_alongside == 1 : 2 * on_machine <= cores;
  // Automatic: helpers only where the streams encrypt (the --insecure checksum runs at tens of GB/s
  // per core: helpers measured no faster there, docs/benchmarks.md, (e), "Seal helpers").
  const unsigned helpers = settings_.seal_threads >= 0 ? static_cast<unsigned>(settings_.seal_threads)
                           : settings_.insecure        ? 0
                                                       : SealPool::automatic_helpers(cores, on_machine);
  seal_pool_ = std::make_unique<SealPool>(helpers);
}

ZmqTransport::~ZmqTransport() {
  stop();
  if (wake_fd_ >= 0) close(wake_fd_);
}

double ZmqTransport::clock() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

int ZmqTransport::process_of(int rank) const { return rank / workers_per_process_; }

std::unique_ptr<::zmq::socket_t> ZmqTransport::new_dealer(std::uint64_t affinity, const ProcessInfo& peer) {
  auto dealer = std::make_unique<::zmq::socket_t>(context_, ::zmq::socket_type::dealer);
  dealer->set(::zmq::sockopt::affinity, affinity);
  dealer->set(::zmq::sockopt::routing_id, fmt::format("p{}", process_));
  if (!settings_.insecure) {
    dealer->set(::zmq::sockopt::curve_serverkey, peer.public_key);
    dealer->set(::zmq::sockopt::curve_publickey, settings_.public_key);
    dealer->set(::zmq::sockopt::curve_secretkey, settings_.secret_key);
  }
  return dealer;
}

std::unique_ptr<::zmq::socket_t> ZmqTransport::make_dealer(const ProcessInfo& peer) {
  std::unique_ptr<::zmq::socket_t> dealer = new_dealer(kDataAffinity, peer);
  dealer->set(::zmq::sockopt::sndhwm, 0);  // never drop or block: a lost peer's socket is closed instead
  dealer->set(::zmq::sockopt::linger, 2000);
  // tcp:// unless ipc is asked for: on one host ZeroMQ's ipc:// (a Unix socket) carried 1 MiB
  // CURVE messages 1.45x slower than tcp:// over loopback (docs/benchmarks.md, (j)).
  dealer->connect(settings_.transport == "ipc" ? peer.ipc_endpoint : peer.tcp_endpoint);
  return dealer;
}

void ZmqTransport::open_dealers() {
  links_.resize(table_.size());
  pulse_links_.resize(table_.size());
  for (const ProcessInfo& peer : table_) {
    if (peer.rank == process_ || peer.vacant) continue;  // a vacant rank's links open when a process takes it
    peers_[static_cast<std::size_t>(peer.rank)].last_heard = clock();
    links_[static_cast<std::size_t>(peer.rank)] = std::make_unique<PeerLink>(make_dealer(peer));
    pulse_links_[static_cast<std::size_t>(peer.rank)] = make_pulse_dealer(peer);
  }
}

void ZmqTransport::start(engine::LocalWorld& world, std::function<void(const std::string&)> on_lost) {
  world_ = &world;
  on_lost_ = std::move(on_lost);
  open_dealers();
  outbound_.resize(table_.size());
  inbound_.resize(table_.size());
  for (auto& out : outbound_) out = std::make_shared<OutboundShared>();
  for (auto& in : inbound_) in = std::make_shared<InboundShared>();
  for (const ProcessInfo& peer : table_)
    if (peer.rank != process_ && !peer.vacant) offer_ring(peer.rank);
  open_streams();
  for (const ProcessInfo& peer : table_)  // their receives fail at once, as a lost process's do
    if (peer.vacant)
      for (int w = peer.first_worker; w < peer.first_worker + peer.workers; ++w)
        world_->fail_source(w, fmt::format("worker {} ({}) is not in the run", w, peer.where()));
  told_lost_at_.assign(table_.size(), 0);
  last_check_ = clock();
  thread_ = std::thread([this] { loop(); });
  await_rings();
}

void ZmqTransport::await_rings() {
  // Bounded: a peer that never answers (or answers late) is reached through ZeroMQ meanwhile.
  const double limit = clock() + std::min(settings_.peer_timeout, 10.0);
  for (;;) {
    bool answered = true;
    for (std::size_t p = 0; p < outbound_.size() && answered; ++p) {
      OutboundShared& out = *outbound_[p];
      std::lock_guard<std::mutex> lock(out.mutex);
      answered = !out.ring || out.ready || lost_[p].load();
    }
    for (std::size_t p = 0; p < outbound_.size() && answered; ++p)  // and the streams
      // lost_ first: a vacant rank's entry is read (wants_stream) only once revive() wrote it.
      answered = static_cast<int>(p) == process_ || stream_fd_ < 0 || lost_[p].load() ||
                 !wants_stream(static_cast<int>(p)) || stream_out_[p]->ready.load();
    if (answered) return;
    if (clock() >= limit) {
      core::log(core::LogLevel::info,
                "zmq runtime: some processes did not map their shared-memory rings or "
                "connect their streams within {:.0f} s; messages to them go through ZeroMQ "
                "until they do",
                std::min(settings_.peer_timeout, 10.0));
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void ZmqTransport::stop() {
  if (!thread_.joinable()) return;
  stop_ = true;
  const std::uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
  thread_.join();
  stop_streams();
  for (auto& out : outbound_) {
    std::lock_guard<std::mutex> lock(out->mutex);
    drop_pending(*out);
  }
  for (auto& in : inbound_) stop_reader(*in);
  links_.clear();  // each socket lingers up to 2 s for the frames it took
  pulse_links_.clear();
  router_.close();
  pulse_.close();
}

core::Work ZmqTransport::send(int src, int dst, Tag tag, core::ConstView data) {
  ensure_alive(dst);
  const int process = process_of(dst);
  const wire::FrameHeader header = wire::data_header(src, dst, tag, data);
  StreamOut& stream = *stream_out_[static_cast<std::size_t>(process)];
  if (!stream.ready.load(std::memory_order_acquire)) {
    OutboundShared& out = *outbound_[static_cast<std::size_t>(process)];
    std::lock_guard<std::mutex> lock(out.mutex);  // records and frames to `process` in the order counted
    // `ready` is set under out.mutex: a send that finds it clear here goes before the stream's data.
    if (!stream.ready.load()) return send_ordered(out, process, header, data);
  }
  return send_stream(stream, process, header, data);
}

core::Work ZmqTransport::send_ordered(OutboundShared& out, int process, const wire::FrameHeader& header,
                                      core::ConstView data) {
  if (!out.pending.empty()) flush_pending(process, out);
  const bool fits = out.ready && header.payload_bytes + kRecordHeadBytes <= out.ring->max_body();
  if (out.ready && !fits) return send_fragments(out, process, header, data);
  if (out.pending.empty() && send_shared(out, header, data)) return {};
  if (out.pending.empty() && !fits) return send_zmq(out, process, header, data);
  // The ring is full, or earlier messages wait for room: this one waits behind them.
  auto done = std::make_shared<detail::Completion>(
      fmt::format("send from worker {} to worker {} (tag {:#x})", header.src, header.dst, header.tag),
      settings_.op_timeout);
  out.pending.push_back({.header = header, .data = data, .done = done, .fits = fits});
  out.has_pending = true;
  wait_for_room(process, out);
  return core::Work(std::make_shared<PolledWork>(*this, std::move(done)));
}

std::size_t ZmqTransport::fragment_bytes(const OutboundShared& out) {
  // A quarter of the ring: the sender copies one part in while the receiver copies the one before
  // out. A multiple of 64 bytes, so of every dtype's size.
  const std::size_t quarter = (out.ring->max_body() - kRecordHeadBytes) / 4 / 64 * 64;
  return std::max<std::size_t>(quarter, 64);
}

core::Work ZmqTransport::send_fragments(OutboundShared& out, int process, const wire::FrameHeader& header,
                                        core::ConstView data) {
  const std::size_t piece = fragment_bytes(out), total = data.bytes(), element = core::size_of(data.dtype());
  const auto* bytes = static_cast<const std::byte*>(data.data());
  auto done = std::make_shared<detail::Completion>(
      fmt::format("send from worker {} to worker {} (tag {:#x})", header.src, header.dst, header.tag),
      settings_.op_timeout);
  bool queued = !out.pending.empty();
  for (std::size_t at = 0; at < total; at += piece) {
    const std::size_t n = std::min(piece, total - at);
    const core::ConstView part(bytes + at, n / element, data.dtype());
    if (!queued && send_shared(out, header, part)) continue;
    queued = true;  // the ring is full: this part and the rest wait, in order
    out.pending.push_back(
        {.header = header, .data = part, .done = at + n == total ? done : nullptr, .fits = true, .fragment = true});
  }
  if (!queued) return {};
  out.has_pending = true;
  wait_for_room(process, out);
  return core::Work(std::make_shared<PolledWork>(*this, std::move(done)));
}

core::Work ZmqTransport::send_zmq(OutboundShared& out, int process, wire::FrameHeader header, core::ConstView data,
                                  std::shared_ptr<detail::Completion> done) {
  const std::size_t bytes = data.bytes();
  const std::span<const std::byte> payload(static_cast<const std::byte*>(data.data()), bytes);
  if (settings_.insecure) {  // CURVE authenticates every message; without it, a checksum guards the payload
    header.flags |= wire::kFlagPayloadChecksum;
    header.payload_checksum = wire::checksum(payload);
  }
  Frame frame{header_message(header), {}};
  core::Work work;
  if (bytes < kZeroCopyBytes) {
    frame.payload = ::zmq::message_t(data.data(), bytes);
    if (done) done->complete();
  } else {
    if (!done) {
      done = std::make_shared<detail::Completion>(
          fmt::format("send from worker {} to worker {} (tag {:#x})", header.src, header.dst, header.tag),
          settings_.op_timeout);
      work = core::Work(done);
    }
    auto* hint = new std::shared_ptr<detail::Completion>(std::move(done));
    frame.payload = ::zmq::message_t(const_cast<void*>(data.data()), bytes, release_payload, hint);
  }
  ++out.zmq_data;
  send_frame(process, std::move(frame));
  return work;
}

void ZmqTransport::send_frame(int process, Frame frame) {
  // Null for a vacant rank: no process to send to. revive() creates it on the I/O thread before it
  // clears lost_, and senders check lost_ first (ensure_alive), so they never read it meanwhile.
  const std::unique_ptr<PeerLink>& link = links_[static_cast<std::size_t>(process)];
  if (!link) return;
  if (link->send(std::move(frame)) != PeerLink::Result::queued) return;
  const std::uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
}

bool ZmqTransport::alive(int rank) const { return !lost_[static_cast<std::size_t>(process_of(rank))].load(); }

void ZmqTransport::ensure_alive(int rank) const {
  const int p = process_of(rank);
  if (!lost_[static_cast<std::size_t>(p)].load()) return;
  std::lock_guard<std::mutex> lock(peers_mutex_);
  throw core::PeerLost(fmt::format("worker {} ({}) {}", rank, table_[static_cast<std::size_t>(p)].where(),
                                   peers_[static_cast<std::size_t>(p)].reason));
}

std::vector<MembershipEvent> ZmqTransport::membership_events() const {
  std::lock_guard<std::mutex> lock(peers_mutex_);
  return events_;
}

std::optional<NetworkModel> ZmqTransport::pair_network_model(int a, int b) const {
  const auto pa = static_cast<std::size_t>(process_of(a)), pb = static_cast<std::size_t>(process_of(b));
  std::lock_guard<std::mutex> lock(peers_mutex_);  // revive() replaces entries
  if (pa == pb || pa >= table_.size() || pb >= table_.size()) return std::nullopt;
  if (table_[pa].vacant || table_[pb].vacant || rings_between(table_[pa], table_[pb])) return std::nullopt;
  return kMessageModel;
}

void ZmqTransport::settle_lost_peers() {
  const double since = clock();
  std::unique_lock<std::mutex> lock(peers_mutex_);
  peers_cv_.wait_for(lock, std::chrono::duration<double>(settings_.peer_timeout + 1), [&] {
    if (expelled_.load()) return true;  // it left the run: nobody is to be heard from
    for (std::size_t p = 0; p < peers_.size(); ++p)
      if (static_cast<int>(p) != process_ && !peers_[p].lost && peers_[p].last_heard <= since) return false;
    return true;
  });
}

}  // namespace fast::runtime::zmq
