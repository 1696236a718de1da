// ZmqTransport's direct TCP streams (transport.hpp, "Streams"; stream.hpp): offering one,
// connecting to an offer, accepting and authenticating connections, sending records and reading
// them.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <new>
#include <thread>
#include <tuple>

#include <fmt/format.h>

#include "fast/core/buffer.hpp"
#include "fast/core/error.hpp"
#include "fast/core/log.hpp"
#include "hello.hpp"
#include "log_limit.hpp"
#include "transport.hpp"

namespace fast::runtime::zmq {

using nlohmann::json;

namespace {
constexpr double kHandshakeSeconds = 5;    // to send the preamble and the `open` record
constexpr double kMaxConnectSeconds = 10;  // a connector's limit (or the peer timeout, if shorter)
// Messages from this size up are read by the stream's thread alongside polling waiters, where the
// host's cores allow (readers_alongside_): a reader thread then reads and opens the next one while
// the worker adds or sends, which paid for large all-reduces on 16 cores; for smaller messages the
// polling waiter alone was faster (docs/benchmarks.md, (e), "Stream readers alongside").
constexpr std::size_t kAlongsideBytes = 256 * 1024;

std::string hex(std::span<const std::byte> bytes) {
  std::string text;
  for (std::byte b : bytes) text += fmt::format("{:02x}", static_cast<unsigned>(b));
  return text;
}

Sealer::Key key_from_hex(const std::string& text) {
  Sealer::Key key{};
  FAST_ENFORCE(text.size() == 2 * key.size(), "frame: stream offer: expected a key of {} hex digits, got {}",
               2 * key.size(), text.size());
  for (std::size_t i = 0; i < key.size(); ++i) {
    unsigned value = 0;
    for (int d = 0; d < 2; ++d) {
      const char c = text[2 * i + static_cast<std::size_t>(d)];
      const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      FAST_ENFORCE(digit >= 0, "frame: stream offer: the key is not hexadecimal");
      value = value * 16 + static_cast<unsigned>(digit);
    }
    key[i] = static_cast<std::byte>(value);
  }
  return key;
}

std::string peer_address(const sockaddr_storage& addr) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (addr.ss_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&addr)->sin_addr, text, sizeof text);
  else if (addr.ss_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_addr, text, sizeof text);
  return text;
}
}  // namespace

bool ZmqTransport::wants_stream(int process) const {
  if (!settings_.streams || settings_.transport == "ipc" || process == process_) return false;
  if (table_[static_cast<std::size_t>(process)].vacant) return false;  // until a process takes the rank
  return !outbound_[static_cast<std::size_t>(process)]->ring;  // a ring was offered: shared memory instead
}

void ZmqTransport::open_streams() {
  stream_out_.resize(table_.size());
  stream_in_.resize(table_.size());
  for (auto& s : stream_out_) s = std::make_unique<StreamOut>();
  for (auto& s : stream_in_) s = std::make_unique<StreamIn>();
  // A vacant rank may be taken by a process on another host: listen for it too.
  bool any = false;
  for (const ProcessInfo& peer : table_)
    any = any || wants_stream(peer.rank) || (peer.vacant && settings_.streams && settings_.transport != "ipc");
  if (!any) return;
  const std::string& host = settings_.host;  // bound here; peers connect to the advertised address
  try {
    stream_fd_ = listen_stream(host, settings_.ports, rendezvous_ports(settings_), stream_port_);
  } catch (const core::Error& e) {
    core::log(core::LogLevel::info, "zmq runtime: no direct streams (messages go through ZeroMQ): {}", e.what());
    return;
  }
  const bool v6 = host.find(':') != std::string::npos;
  const unsigned helpers = seal_pool_->helpers();
  const std::string protection =
      settings_.insecure ? std::string("an XXH3 checksum")
      : fastest_aead() == Protection::aes_256_gcm
          ? fmt::format("AES-256-GCM by {} (FAST_AES_LIBRARY)", describe_aes_library(settings_.aes_library))
          : std::string("ChaCha20-Poly1305");
  core::log(core::LogLevel::info, "zmq runtime: direct streams listen on tcp://{}{}{}:{}, protected by {}{}",
            v6 ? "[" : "", host, v6 ? "]" : "", stream_port_, protection,
            helpers == 0 ? std::string() : fmt::format("; seal helper threads: {} (FAST_SEAL_THREADS)", helpers));
  for (const ProcessInfo& peer : table_)
    if (wants_stream(peer.rank)) offer_stream(peer.rank);
}

void ZmqTransport::offer_stream(int process) {
  if (stream_fd_ < 0) return;
  StreamIn& in = *stream_in_[static_cast<std::size_t>(process)];
  json offer;
  {
    std::lock_guard<std::mutex> lock(in.mutex);
    in.offer = next_ring_id_++;
    in.key = Sealer::random_key();
    in.protection = settings_.insecure ? Protection::checksum : fastest_aead();
    in.connected = false;
    in.failed = false;
    in.bye = false;
    offer = {{"stream",
              {{"id", in.offer},
               {"port", stream_port_},
               {"protection", protection_name(in.protection)},
               {"key", hex(in.key)}}}};
  }
  send_hello(process, offer);
}

void ZmqTransport::on_stream_offer(int from, const json& offer) {
  const auto id = offer.at("id").get<std::uint64_t>();
  const int port = json_int<int>(offer, "port", 1, 65535, "frame: stream offer");
  const Protection protection = parse_protection(offer.at("protection").get<std::string>());
  FAST_ENFORCE(settings_.insecure || protection != Protection::checksum,
               "frame: stream offer without encryption in a run with CURVE");
  const Sealer::Key key = key_from_hex(offer.at("key").get<std::string>());
  std::string host = endpoint_host(table_[static_cast<std::size_t>(from)].tcp_endpoint);
  start_stream_thread([this, from, host = std::move(host), port, id, protection, key] {
    connect_stream_to(from, host, port, id, protection, key);
  });
}

void ZmqTransport::start_stream_thread(std::function<void()> body) {
  std::lock_guard<std::mutex> lock(stream_threads_mutex_);
  std::erase_if(stream_threads_, [](StreamThread& t) {
    if (!t.done->load()) return false;
    t.thread.join();
    return true;
  });
  auto done = std::make_shared<std::atomic<bool>>(false);
  stream_threads_.push_back({std::thread([body = std::move(body), done] {
                               body();
                               done->store(true);
                             }),
                             done});
}

std::string ZmqTransport::stream_stop(int process) const {
  if (stop_.load()) return "the transport stopped";
  if (lost_[static_cast<std::size_t>(process)].load()) return "the peer process was lost";
  return {};
}

void ZmqTransport::connect_stream_to(int process, std::string host, int port, std::uint64_t offer,
                                     Protection protection, Sealer::Key key) {
  const ProcessInfo peer = [&] {  // revive() may replace the entry meanwhile
    std::lock_guard<std::mutex> lock(peers_mutex_);
    return table_[static_cast<std::size_t>(process)];
  }();
  const double limit = std::min(settings_.peer_timeout, kMaxConnectSeconds);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit);
  const StopCheck stop = [this, process, deadline, limit]() -> std::string {
    std::string why = stream_stop(process);
    if (why.empty() && std::chrono::steady_clock::now() > deadline)
      why = fmt::format("not accepted within {} s", limit);
    return why;
  };
  // A connection the peer dropped before it accepted it (a stranger's newer connection took its
  // handshake slot, handshake_slots.hpp) is made again, with the same offer, until the deadline.
  try {
    for (int attempt = 1;; ++attempt) {
      const double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
      FAST_ENFORCE_AS(core::IoError, left > 0, "dropped before it was accepted, {} times in {} s", attempt - 1, limit);
      if (try_stream_to(process, peer, host, port, {offer, protection, key}, left, stop)) return;
      core::log(core::LogLevel::debug, "zmq runtime: {} dropped the direct stream before it accepted it (try {})",
                peer.where(), attempt);
      // Backing off (5 ms, doubling to 160 ms): a peer that keeps refusing is not hammered.
      std::this_thread::sleep_for(std::chrono::milliseconds(5 << std::min(attempt - 1, 5)));
    }
  } catch (const core::Error& e) {
    if (!stop_.load())
      core::log(core::LogLevel::info, "zmq runtime: no direct stream to {} (messages go through ZeroMQ): {}",
                peer.where(), e.what());
  }
}

bool ZmqTransport::try_stream_to(int process, const ProcessInfo& peer, const std::string& host, int port,
                                 const StreamOffer& offer, double seconds, const StopCheck& stop) {
  const int fd = connect_stream(host, port, seconds);
  auto writer = std::make_unique<StreamWriter>(fd, offer.protection, offer.key, seal_pool_.get(),
                                               settings_.aes_library);  // owns fd from here
  // A write that fails while `stop` has nothing to say: the peer dropped the connection (its socket
  // shut down by an eviction); the answer, had it come, would tell no more.
  const auto dropped = [&stop] { return stop().empty(); };
  try {
    write_preamble(fd, {.process = static_cast<std::uint32_t>(process_), .offer = offer.id}, stop);
  } catch (const core::IoError&) {
    if (dropped()) return false;
    throw;
  }
  OutboundShared& out = *outbound_[static_cast<std::size_t>(process)];
  StreamOut& stream = *stream_out_[static_cast<std::size_t>(process)];
  // No ZeroMQ data frame to `process` from here until the stream is ready or given up: `after`
  // counts them. (The wait for the answer is a round trip to the peer's handshake thread.)
  std::lock_guard<std::mutex> lock(out.mutex);
  std::lock_guard<std::mutex> write_lock(stream.mutex);
  RecordHead head{.kind = RecordKind::open, .after = out.zmq_data};
  head.header = {.kind = wire::FrameKind::hello,
                 .dtype = core::DType::u8,
                 .src = table_[static_cast<std::size_t>(process_)].first_worker,
                 .dst = peer.first_worker};
  try {
    writer->write(head, {}, stop);
  } catch (const core::IoError&) {
    if (dropped()) return false;
    throw;
  }
  if (!read_accepted(fd, stop)) return false;
  stream.writer = std::move(writer);
  stream.ready = true;
  core::log(core::LogLevel::debug, "zmq runtime: messages to {} go through a direct stream ({})", peer.where(),
            protection_name(offer.protection));
  return true;
}

void ZmqTransport::accept_stream() {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  const int fd = ::accept4(stream_fd_, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_CLOEXEC);
  if (fd < 0) return;
  std::string address = peer_address(addr);
  const HandshakeSlots::Admitted slot = handshake_slots_.admit(fd, address);
  start_stream_thread([this, fd, address = std::move(address), id = slot.id] { serve_stream(fd, address, id); });
}

void ZmqTransport::serve_stream(int fd, std::string address, std::uint64_t slot) {
  setup_stream_socket(fd);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(kHandshakeSeconds);
  const StopCheck handshake_stop = [this, deadline]() -> std::string {
    if (stop_.load()) return "the transport stopped";
    if (std::chrono::steady_clock::now() > deadline) return "no preamble and open record within 5 s";
    return {};
  };
  std::unique_ptr<StreamReader> reader;
  int from = -1;
  std::uint64_t offer = 0;
  RecordHead head;
  bool finished = false;  // handshake_slots_.finish(slot) returned true
  try {
    StreamPreamble preamble;
    if (!read_preamble(fd, preamble, handshake_stop)) FAST_THROW(InvalidArgument, "not a FAST stream (wrong magic)");
    FAST_ENFORCE(preamble.version == kStreamVersion,
                 "a FAST stream of version {} from process {}, this process reads version {}: every process of a "
                 "run needs the same FAST release",
                 preamble.version, preamble.process, kStreamVersion);
    from = static_cast<int>(preamble.process);
    FAST_ENFORCE(preamble.process < table_.size() && from != process_, "claims process {}, not a peer",
                 preamble.process);
    StreamIn& in = *stream_in_[static_cast<std::size_t>(from)];
    {
      std::lock_guard<std::mutex> lock(in.mutex);
      // A connected offer still opens the record (a forged one is refused as such), then is refused.
      if (in.offer == 0 || in.offer != preamble.offer)
        FAST_THROW(InvalidArgument, "claims process {} with offer {}, which is not open", from, preamble.offer);
      offer = in.offer;
      reader = std::make_unique<StreamReader>(fd, in.protection, in.key, seal_pool_.get(),
                                              settings_.aes_library);  // owns fd from here
    }
    handshake_slots_.shown(slot);
    FAST_ENFORCE(reader->read_head(head, handshake_stop) && head.kind == RecordKind::open,
                 "its first record is not `open`");
    finished = handshake_slots_.finish(slot);
    FAST_ENFORCE(finished, "a newer connection took its slot");  // its socket is shut down
    {
      std::lock_guard<std::mutex> lock(in.mutex);
      FAST_ENFORCE(in.offer == offer && !in.connected, "another connection took offer {}", offer);
      in.connected = true;
    }
    try {
      write_accepted(fd, handshake_stop);  // the sender's data may come from here on
    } catch (const core::Error&) {         // the sender is gone: a new connection may take the offer
      std::lock_guard<std::mutex> lock(in.mutex);
      if (in.offer == offer) in.connected = false;
      throw;
    }
  } catch (const core::Error& e) {
    // Before the descriptor is closed: an eviction shuts down only descriptors still in a slot.
    const bool evicted = !handshake_slots_.finish(slot) && !finished;
    if (!reader) ::close(fd);  // else the reader closes it
    if (!stop_.load())
      refused_connections_log().log(
          core::LogLevel::warn,
          evicted
              ? fmt::format("zmq runtime: dropped a stream connection from {} before it authenticated: a newer "
                            "one took its slot (at most {} are authenticated at once)",
                            address, handshake_slots_.capacity())
              : fmt::format("zmq runtime: refused a stream connection from {}: {}", address, core::user_message(e)));
    return;
  }
  read_stream(from, offer, *reader, head.after);
}

std::string ZmqTransport::stream_read_stop(int from, std::uint64_t offer) {
  if (stop_.load()) return "the transport stopped";
  StreamIn& in = *stream_in_[static_cast<std::size_t>(from)];
  std::lock_guard<std::mutex> lock(in.mutex);
  if (in.offer != offer) return "the rank was taken back";
  return {};
}

void ZmqTransport::read_stream(int from, std::uint64_t offer, StreamReader& reader, std::uint64_t after) {
  StreamIn& in = *stream_in_[static_cast<std::size_t>(from)];
  {
    std::lock_guard<std::mutex> lock(in.read_mutex);
    in.reader = &reader;
    in.read_fd = reader.fd();
    auto pool = std::make_shared<BufferPool>();
    in.allocate = [pool](std::size_t bytes) {
      try {
        return pool->take(bytes);
      } catch (const std::bad_alloc&) {  // a record declared more than this process can hold
        FAST_THROW(IoError, "stream: a record of {} bytes: out of memory", bytes);
      }
    };
    in.read_offer = offer;
    in.after = after;
    in.waited = false;
    in.readable = true;
  }
  struct Detach {  // waiters no longer read the stream once this thread returns
    StreamIn& in;
    StreamReader& reader;
    ~Detach() {
      std::lock_guard<std::mutex> lock(in.read_mutex);
      if (in.reader != &reader) return;
      in.readable = false;
      in.partial = false;
      in.read_fd = -1;
      in.reader = nullptr;
      in.allocate = nullptr;
    }
  } detach{in, reader};
  try {
    {
      std::lock_guard<std::mutex> lock(in.read_mutex);  // what the handshake read ahead
      if (!read_available(from, in)) return;
    }
    while (!in.failed.load()) {  // a waiter that found the stream broken said so
      const std::string why = stream_read_stop(from, offer);
      FAST_ENFORCE_AS(core::IoError, why.empty(), "{}", why);
      const bool alongside = readers_alongside_ && in.large.load(std::memory_order_relaxed);
      if (!alongside && waiters_poll()) {  // they read the stream: step back until none polled for kStreamGrace
        std::unique_lock<std::mutex> lock(poll_mutex_);
        polled_cv_.wait_for(lock, kStreamGrace, [this] { return !polled_.load() || stop_.load(); });
        continue;
      }
      // read_available() leaves nothing read ahead: the socket says whether a record is there.
      pollfd p{.fd = reader.fd(), .events = POLLIN, .revents = 0};
      if (::poll(&p, 1, kSocketTimeoutMs) <= 0 || (!alongside && waiters_poll())) continue;
      std::lock_guard<std::mutex> lock(in.read_mutex);
      if (!read_available(from, in)) return;  // the sender closed the stream after its bye
    }
  } catch (const core::Error& e) {
    stream_broke(from, in, offer, e.what());
  }
}

void ZmqTransport::stream_broke(int from, StreamIn& in, std::uint64_t offer, const std::string& what) {
  if (stop_.load() || !stream_read_stop(from, offer).empty() || lost_[static_cast<std::size_t>(from)].load() ||
      in.bye.load())
    return;
  in.failure = fmt::format("lost: its direct stream failed: {}", what);
  in.failed = true;
  const std::uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
}

bool ZmqTransport::read_available(int from, StreamIn& in) {
  for (;;) {
    switch (in.reader->advance(in.allocate)) {
      case StreamReader::Step::waiting:
        in.partial.store(in.reader->in_record(), std::memory_order_relaxed);
        return true;
      case StreamReader::Step::end: return false;
      case StreamReader::Step::record: deliver_record(from, in, in.reader->current());
    }
  }
}

void ZmqTransport::deliver_record(int from, StreamIn& in, StreamReader::Record& record) {
  const RecordHead& head = record.head;
  const ProcessInfo& sender = table_[static_cast<std::size_t>(from)];
  check_endpoints(sender, head.header);
  FAST_ENFORCE_AS(wire::FrameError, head.kind != RecordKind::open, "stream: a second `open` record");
  if (head.kind == RecordKind::bye) {
    const auto* text = reinterpret_cast<const char*>(record.payload.get());
    in.bye_text.assign(text, text == nullptr ? 0 : std::min<std::size_t>(head.header.payload_bytes, 4096));
    in.bye = true;
    heard_from(from);
    return;  // the sender closes the stream
  }
  InboundShared& counted = *inbound_[static_cast<std::size_t>(from)];
  while (!in.waited) {  // the data frames sent through ZeroMQ before the stream come first
    {
      std::lock_guard<std::mutex> lock(counted.mutex);
      in.waited = counted.zmq_data >= in.after;
    }
    if (!in.waited) {
      const std::string why = stream_read_stop(from, in.read_offer);
      FAST_ENFORCE_AS(core::IoError, why.empty(), "{}", why);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  heard_from(from);
  in.large.store(head.header.payload_bytes >= kAlongsideBytes, std::memory_order_relaxed);
  const core::ConstView view(record.payload.get(), head.header.count, head.header.dtype);
  world_->deliver_remote(head.header.src, head.header.dst, head.header.tag, view, std::move(record.payload));
}

bool ZmqTransport::receiving() const {
  for (const auto& in : stream_in_)
    if (in->partial.load(std::memory_order_relaxed)) return true;
  return false;
}

bool ZmqTransport::waiters_poll() const {
  if (!polls_in_caller() || !polled_.load(std::memory_order_relaxed)) return false;
  const std::int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
  return now - last_poll_.load(std::memory_order_relaxed) <
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(kStreamGrace).count();
}

void ZmqTransport::poll_streams() {
  for (std::size_t p = 0; p < stream_in_.size(); ++p) {
    StreamIn& in = *stream_in_[p];
    if (!in.readable.load(std::memory_order_acquire)) continue;
    std::unique_lock<std::mutex> lock(in.read_mutex, std::try_to_lock);
    if (!lock || in.reader == nullptr) continue;  // another thread reads it
    try {
      if (!read_available(static_cast<int>(p), in)) in.readable = false;  // ended: its thread sees it too
    } catch (const core::Error& e) {
      in.readable = false;  // its thread finds the failure too and ends
      stream_broke(static_cast<int>(p), in, in.read_offer, e.what());
    }
  }
}

void ZmqTransport::wait_writable(int fd) {
  pollfd out{.fd = fd, .events = POLLOUT, .revents = 0};
  if (!polls_in_caller()) {  // the streams' threads read what the peer sends meanwhile
    ::poll(&out, 1, kSocketTimeoutMs);
    return;
  }
  // What the peers send meanwhile is read here (a peer may be waiting for room in this process's
  // socket, as this thread waits for room in its): first polling, for the poll budget; then
  // blocked on this socket and the streams that come in together, polling again as they wake it
  // and at least every millisecond (the rings), for at most kSocketTimeoutMs.
  const auto start = std::chrono::steady_clock::now();
  const auto spin_until = start + std::chrono::duration<double>(settings_.poll_seconds);
  do {
    poll();
    if (::poll(&out, 1, 0) > 0) return;
    pause_between_looks();
  } while (std::chrono::steady_clock::now() < spin_until);
  std::vector<pollfd> fds;
  do {
    fds.assign(1, out);
    for (const auto& in : stream_in_)
      if (const int read_fd = in->read_fd.load(std::memory_order_acquire); read_fd >= 0)
        fds.push_back({.fd = read_fd, .events = POLLIN, .revents = 0});
    ::poll(fds.data(), fds.size(), 1);
    if (fds[0].revents != 0) return;
    poll();
  } while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(kSocketTimeoutMs));
}

core::Work ZmqTransport::send_stream(StreamOut& out, int process, const wire::FrameHeader& header,
                                     core::ConstView data) {
  std::string failure;
  {
    std::lock_guard<std::mutex> lock(out.mutex);
    try {
      FAST_ENFORCE_AS(core::IoError, out.writer != nullptr, "the stream was closed");
      out.writer->write(
          {.kind = RecordKind::data, .header = header}, {static_cast<const std::byte*>(data.data()), data.bytes()},
          [this, process] { return stream_stop(process); }, [this](int fd) { wait_writable(fd); });
      return {};
    } catch (const core::IoError& e) {
      ensure_alive(header.dst);  // lost meanwhile: that is the error
      if (!out.failed.load()) {  // the I/O thread counts the process lost
        out.failure = fmt::format("lost: its direct stream failed: {}", e.what());
        out.failed = true;
      }
      failure = e.what();
    }
  }
  // The caller tells a loss from another error by the runtime's report (runtime::lost_since): wait
  // for the I/O thread to count the process lost (check_streams, at its next turn) before throwing.
  const std::uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
  {
    std::unique_lock<std::mutex> lock(peers_mutex_);
    peers_cv_.wait_for(lock, std::chrono::duration<double>(settings_.peer_timeout),
                       [&] { return lost_[static_cast<std::size_t>(process)].load(); });
  }
  ensure_alive(header.dst);
  throw core::PeerLost(fmt::format("worker {} ({}) its direct stream failed: {}", header.dst,
                                   table_[static_cast<std::size_t>(process)].where(), failure));
}

bool ZmqTransport::bye_through_stream(int process, const std::string& text) {
  StreamOut& out = *stream_out_[static_cast<std::size_t>(process)];
  if (!out.ready.load()) return false;
  std::lock_guard<std::mutex> lock(out.mutex);
  if (!out.writer) return false;
  const ProcessInfo& peer = table_[static_cast<std::size_t>(process)];
  RecordHead head{.kind = RecordKind::bye};
  head.header = {.kind = wire::FrameKind::bye,
                 .dtype = core::DType::u8,
                 .src = table_[static_cast<std::size_t>(process_)].first_worker,
                 .dst = peer.first_worker,
                 .count = text.size(),
                 .payload_bytes = text.size()};
  try {
    out.writer->write(head, std::as_bytes(std::span<const char>(text)),
                      [this, process] { return stream_stop(process); });
    out.writer->shutdown();  // nothing follows a bye
    return true;
  } catch (const core::Error&) {
    return false;  // the peer is gone; the bye through ZeroMQ is as good
  }
}

void ZmqTransport::check_streams(int process) {
  if (stream_in_.empty()) return;
  StreamIn& in = *stream_in_[static_cast<std::size_t>(process)];
  StreamOut& out = *stream_out_[static_cast<std::size_t>(process)];
  if (in.failed.load()) {
    mark_lost(process, in.failure, false);
  } else if (out.failed.load()) {
    std::string failure;
    {
      std::lock_guard<std::mutex> lock(out.mutex);
      failure = out.failure;
    }
    mark_lost(process, failure, false);
  } else if (in.bye.load()) {
    mark_said_bye(process, in.bye_text);
  }
}

void ZmqTransport::retire_stream(int process) {
  {
    StreamOut& out = *stream_out_[static_cast<std::size_t>(process)];
    std::lock_guard<std::mutex> outer(outbound_[static_cast<std::size_t>(process)]->mutex);
    out.ready = false;
    std::lock_guard<std::mutex> lock(out.mutex);
    if (out.writer) out.writer->shutdown();
    out.writer.reset();
    out.failed = false;
  }
  StreamIn& in = *stream_in_[static_cast<std::size_t>(process)];
  std::lock_guard<std::mutex> lock(in.mutex);
  in.offer = 0;  // its reader ends at its next look
  in.connected = false;
  in.failed = false;
  in.bye = false;
}

void ZmqTransport::stop_streams() {
  std::vector<StreamThread> threads;
  {
    std::lock_guard<std::mutex> lock(stream_threads_mutex_);
    threads.swap(stream_threads_);
  }
  for (StreamThread& t : threads) t.thread.join();  // each looks at stop_ every kSocketTimeoutMs at least
  for (auto& out : stream_out_) {
    std::lock_guard<std::mutex> lock(out->mutex);
    out->writer.reset();
  }
  if (stream_fd_ >= 0) ::close(stream_fd_);
  stream_fd_ = -1;
}

}  // namespace fast::runtime::zmq
