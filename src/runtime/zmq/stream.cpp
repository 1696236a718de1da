#include "stream.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "fast/core/error.hpp"

namespace fast::runtime::zmq {

namespace {
constexpr char kMagic[8] = {'F', 'A', 'S', 'T', 'S', 'T', 'R', 'M'};
// Small parts are read ahead into a buffer of this size (fewer calls for small records); larger
// ones straight into their place (a part read ahead is copied once more).
constexpr std::size_t kReadAheadBytes = 16 * 1024;

void put_u32(std::byte* at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) at[i] = static_cast<std::byte>(v >> (8 * i));
}
void put_u64(std::byte* at, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) at[i] = static_cast<std::byte>(v >> (8 * i));
}
std::uint32_t get_u32(const std::byte* at) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(at[i]) << (8 * i);
  return v;
}
std::uint64_t get_u64(const std::byte* at) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(at[i]) << (8 * i);
  return v;
}

[[noreturn]] void fail(const char* what, int error) {
  FAST_THROW(IoError, "stream: {}: {}", what, std::strerror(error));
}

addrinfo* resolve(const std::string& host, int port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  const int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found);
  FAST_ENFORCE_AS(core::IoError, rc == 0 && found, "stream: cannot resolve '{}': {}", host, ::gai_strerror(rc));
  return found;
}

void set_timeouts(int fd) {
  const timeval tv{.tv_sec = 0, .tv_usec = kSocketTimeoutMs * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

// A send or receive that timed out: ask `stop`, throw when it answers.
void check_stop(const StopCheck& stop) {
  if (!stop) return;
  const std::string why = stop();
  FAST_ENFORCE_AS(core::IoError, why.empty(), "{}", why);
}

// Why a record or chunk of a stream did not open: an AEAD's tag (an attacker's change, a replay, a
// reordering, another key), or --insecure's checksum, which catches corruption, not an attacker.
// `n`: the record's or chunk's counter (its nonce).
std::string not_opened(const Sealer& sealer, const char* what, std::uint64_t n) {
  return sealer.encrypts()
             ? fmt::format("stream: {} {} failed authentication (tampered, replayed, reordered, or a wrong key)", what,
                           n)
             : fmt::format("stream: {} {} failed its checksum (corrupted, replayed or reordered on the way)", what, n);
}
}  // namespace

std::size_t record_chunk_bytes(std::size_t payload_bytes, unsigned helpers) {
  if (helpers == 0) return kChunkBytes;
  // A sixteenth of the record, as a power of two from 64 KiB to kChunkBytes: on a 16-core machine
  // with 2 helpers, 64 KiB chunks made 256 KiB and 1 MiB records 1.3-1.9x faster than 256 KiB ones,
  // and 256 KiB ones stayed the fastest from 4 MiB (docs/benchmarks.md (e), "Stream chunks").
  constexpr std::size_t kParallelMinChunkBytes = 64 * 1024;
  return std::clamp(std::bit_floor(payload_bytes / 16), kParallelMinChunkBytes, kChunkBytes);
}

int listen_stream(const std::string& host, const core::PortRange& ports, const std::vector<int>& avoid, int& port) {
  int fd = -1, error = EADDRINUSE;
  for (const int candidate : core::ports_to_try(ports, avoid)) {
    addrinfo* found = resolve(host, candidate, true);
    fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    const bool ok = fd >= 0 && ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0 &&
                    ::bind(fd, found->ai_addr, found->ai_addrlen) == 0 && ::listen(fd, 64) == 0;
    error = errno;
    ::freeaddrinfo(found);
    if (ok) break;
    if (fd >= 0) ::close(fd);
    fd = -1;
    if (error != EADDRINUSE) break;
  }
  if (fd < 0)
    FAST_THROW(IoError, "stream: cannot listen on {}{}: {}", host,
               ports.any() ? "" : " in the port range " + ports.text(), std::strerror(error));
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  port = ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                          : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  return fd;
}

void setup_stream_socket(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  set_timeouts(fd);
}

int connect_stream(const std::string& host, int port, double timeout_seconds) {
  addrinfo* found = resolve(host, port, false);
  const int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    ::freeaddrinfo(found);
    fail("socket", errno);
  }
  int rc = ::connect(fd, found->ai_addr, found->ai_addrlen);
  int error = rc == 0 ? 0 : errno;
  ::freeaddrinfo(found);
  if (rc != 0 && error == EINPROGRESS) {
    pollfd p{.fd = fd, .events = POLLOUT, .revents = 0};
    rc = ::poll(&p, 1, static_cast<int>(timeout_seconds * 1000));
    socklen_t len = sizeof error;
    if (rc == 1)
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len);
    else
      error = rc == 0 ? ETIMEDOUT : errno;
  }
  if (error != 0) {
    ::close(fd);
    FAST_THROW(IoError, "stream: cannot connect to {}:{}: {}", host, port, std::strerror(error));
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  setup_stream_socket(fd);
  return fd;
}

namespace {
// Sends all of `bytes`, asking `stop` whenever the socket's timeout passes; core::IoError naming
// `what` on failure.
void send_all(int fd, std::span<const std::byte> bytes, const char* what, const StopCheck& stop) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n > 0)
      done += static_cast<std::size_t>(n);
    else if (n < 0 && (errno == EAGAIN || errno == EINTR))
      check_stop(stop);
    else
      fail(what, n < 0 ? errno : EPIPE);
  }
}

// Reads all of `bytes` likewise: false when the connection ends first (or is reset by the peer).
bool recv_all(int fd, std::span<std::byte> bytes, const char* what, const StopCheck& stop) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::recv(fd, bytes.data() + done, bytes.size() - done, 0);
    if (n > 0)
      done += static_cast<std::size_t>(n);
    else if (n == 0 || (n < 0 && errno == ECONNRESET))
      return false;
    else if (errno == EAGAIN || errno == EINTR)
      check_stop(stop);
    else
      fail(what, errno);
  }
  return true;
}

constexpr char kAccepted[8] = {'F', 'A', 'S', 'T', 'A', 'C', 'P', 'T'};
}  // namespace

void write_preamble(int fd, const StreamPreamble& preamble, const StopCheck& stop) {
  std::array<std::byte, StreamPreamble::kBytes> bytes{};
  std::memcpy(bytes.data(), kMagic, 8);
  put_u32(bytes.data() + 8, kStreamVersion);
  put_u32(bytes.data() + 12, preamble.process);
  put_u64(bytes.data() + 16, preamble.offer);
  send_all(fd, bytes, "writing the preamble", stop);
}

bool read_preamble(int fd, StreamPreamble& preamble, const StopCheck& stop) {
  std::array<std::byte, StreamPreamble::kBytes> bytes{};
  if (!recv_all(fd, bytes, "reading the preamble", stop)) fail("reading the preamble", ECONNRESET);
  if (std::memcmp(bytes.data(), kMagic, 8) != 0) return false;
  preamble.version = get_u32(bytes.data() + 8);
  preamble.process = get_u32(bytes.data() + 12);
  preamble.offer = get_u64(bytes.data() + 16);
  return true;
}

void write_accepted(int fd, const StopCheck& stop) {
  send_all(fd, std::as_bytes(std::span(kAccepted)), "writing the answer to `open`", stop);
}

bool read_accepted(int fd, const StopCheck& stop) {
  std::array<std::byte, sizeof kAccepted> bytes{};
  return recv_all(fd, bytes, "reading the answer to `open`", stop) && std::memcmp(bytes.data(), kAccepted, 8) == 0;
}

// --- writer ------------------------------------------------------------------------------------

StreamWriter::StreamWriter(int fd, Protection protection, const Sealer::Key& key, SealPool* pool, AesLibrary aes)
    : fd_(fd), sealer_(protection, key, aes), pool_(pool), scratch_(kHeadBytes + kChunkBytes) {}

StreamWriter::~StreamWriter() { ::close(fd_); }

void StreamWriter::shutdown() { ::shutdown(fd_, SHUT_RDWR); }

void StreamWriter::send_all(std::span<const std::span<const std::byte>> parts, const StopCheck& stop,
                            const WriteWait& wait) {
  std::array<iovec, 8> iov{};
  FAST_ENFORCE_AS(core::IoError, parts.size() <= iov.size(), "stream: {} parts in one write, at most {}", parts.size(),
                  iov.size());
  std::size_t count = 0;
  for (std::span<const std::byte> p : parts)
    if (!p.empty()) iov[count++] = {const_cast<std::byte*>(p.data()), p.size()};
  std::size_t first = 0;
  auto checked = std::chrono::steady_clock::now();
  while (first < count) {
    msghdr message{};
    message.msg_iov = iov.data() + first;
    message.msg_iovlen = count - first;
    ssize_t n = ::sendmsg(fd_, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN) fail("writing", errno);
      if (wait) {
        wait(fd_);
      } else {
        pollfd p{.fd = fd_, .events = POLLOUT, .revents = 0};
        ::poll(&p, 1, kSocketTimeoutMs);
      }
      const auto now = std::chrono::steady_clock::now();
      if (now - checked >= std::chrono::milliseconds(kSocketTimeoutMs)) {  // as often as a blocking send would
        check_stop(stop);
        checked = now;
      }
      continue;
    }
    while (n > 0) {  // drop what was sent
      const auto step = std::min(static_cast<std::size_t>(n), iov[first].iov_len);
      iov[first].iov_base = static_cast<std::byte*>(iov[first].iov_base) + step;
      iov[first].iov_len -= step;
      n -= static_cast<ssize_t>(step);
      if (iov[first].iov_len == 0) ++first;
    }
  }
}

void StreamWriter::write(const RecordHead& head, std::span<const std::byte> payload, const StopCheck& stop,
                         const WriteWait& wait) {
  const unsigned helpers = pool_ ? pool_->helpers() : 0;
  const std::size_t chunk_bytes = record_chunk_bytes(payload.size(), helpers);
  std::array<std::byte, kHeadBytes> plain{};
  put_u32(plain.data(), static_cast<std::uint32_t>(head.kind));
  put_u32(plain.data() + 4, static_cast<std::uint32_t>(chunk_bytes));
  put_u64(plain.data() + 8, head.after);
  wire::encode_header(head.header, std::span<std::byte, wire::kHeaderBytes>(plain.data() + 16, wire::kHeaderBytes));
  Sealer::Tag head_tag{}, tag{};
  std::byte* sealed_head = scratch_.data();
  sealer_.seal(plain, sealed_head, head_tag);
  const std::span<const std::byte> head_bytes(sealer_.encrypts() ? sealed_head : plain.data(), kHeadBytes);
  if (payload.empty()) {
    const std::span<const std::byte> parts[] = {head_bytes, head_tag};
    send_all(parts, stop, wait);
    return;
  }
  if (helpers > 0 && payload.size() > chunk_bytes) {
    const std::span<const std::byte> parts[] = {head_bytes, head_tag};
    write_parallel(parts, payload, chunk_bytes, stop, wait);
    return;
  }
  // Chunk by chunk: each is sealed just before it is written (the head rides with the first), so
  // that the socket sends one chunk while the next is being sealed.
  bool first = true;
  for (std::size_t at = 0; at < payload.size(); at += chunk_bytes) {
    const std::span<const std::byte> chunk = payload.subspan(at, std::min(chunk_bytes, payload.size() - at));
    std::byte* sealed = scratch_.data() + kHeadBytes;
    sealer_.seal(chunk, sealed, tag);
    const std::span<const std::byte> body =
        sealer_.encrypts() ? std::span<const std::byte>(sealed, chunk.size()) : chunk;
    if (first) {
      const std::span<const std::byte> parts[] = {head_bytes, head_tag, body, tag};
      send_all(parts, stop, wait);
      first = false;
    } else {
      const std::span<const std::byte> parts[] = {body, tag};
      send_all(parts, stop, wait);
    }
  }
}

void StreamWriter::write_parallel(std::span<const std::span<const std::byte>> head, std::span<const std::byte> payload,
                                  std::size_t chunk_bytes, const StopCheck& stop, const WriteWait& wait) {
  const std::size_t chunks = (payload.size() + chunk_bytes - 1) / chunk_bytes;
  // Up to `ahead` chunks are being sealed while chunk i is written: chunk i goes to slot i % ahead
  // of batches_ and tags, sealed by group i % ahead, which holds that one job.
  const std::size_t ahead = 2 * pool_->slots();
  const bool encrypts = sealer_.encrypts();
  if (encrypts && batches_.size() < ahead * kChunkBytes) batches_.assign(ahead * kChunkBytes, std::byte{});
  std::vector<Sealer::Tag> tags(ahead);
  const std::uint64_t base = sealer_.counter();
  auto chunk = [&](std::size_t i) {
    return payload.subspan(i * chunk_bytes, std::min(chunk_bytes, payload.size() - i * chunk_bytes));
  };
  auto out = [&](std::size_t i) { return encrypts ? batches_.data() + i % ahead * kChunkBytes : nullptr; };
  std::vector<std::unique_ptr<SealPool::Group>> groups(ahead);
  for (auto& g : groups) g = std::make_unique<SealPool::Group>(*pool_);
  auto start = [&](std::size_t i) {
    groups[i % ahead]->add([&, i](unsigned slot) { sealer_.seal_at(slot, base + i, chunk(i), out(i), tags[i % ahead]); });
  };
  for (std::size_t i = 0; i < std::min(ahead, chunks); ++i) start(i);
  for (std::size_t i = 0; i < chunks; ++i) {
    groups[i % ahead]->wait();  // runs the job itself if no helper took it yet
    const std::span<const std::byte> body = encrypts ? std::span<const std::byte>(out(i), chunk(i).size()) : chunk(i);
    if (i == 0) {
      const std::span<const std::byte> parts[] = {head[0], head[1], body, tags[0]};
      send_all(parts, stop, wait);
    } else {
      const std::span<const std::byte> parts[] = {body, tags[i % ahead]};
      send_all(parts, stop, wait);
    }
    if (i + ahead < chunks) start(i + ahead);  // its slot's bytes are in the kernel now
  }
  sealer_.skip(chunks);
}

// --- reader ------------------------------------------------------------------------------------

StreamReader::StreamReader(int fd, Protection protection, const Sealer::Key& key, SealPool* pool, AesLibrary aes)
    : fd_(fd), sealer_(protection, key, aes), buffer_(kReadAheadBytes) {
  if (pool && pool->helpers() > 0) opening_ = std::make_unique<SealPool::Group>(*pool);
}

StreamReader::~StreamReader() { ::close(fd_); }

void StreamReader::shutdown() { ::shutdown(fd_, SHUT_RDWR); }

bool StreamReader::read_exact(std::byte* out, std::size_t n, const StopCheck& stop, bool eof_ok) {
  const std::size_t wanted = n;
  while (n > 0) {
    if (begin_ < end_) {
      const std::size_t step = std::min(n, end_ - begin_);
      std::memcpy(out, buffer_.data() + begin_, step);
      begin_ += step;
      out += step;
      n -= step;
      continue;
    }
    // Large reads go straight to their destination; small ones read ahead into the buffer.
    const bool direct = n >= buffer_.size() / 2;
    const ssize_t got = ::recv(fd_, direct ? static_cast<void*>(out) : buffer_.data(), direct ? n : buffer_.size(), 0);
    if (got > 0) {
      if (direct) {
        out += got;
        n -= static_cast<std::size_t>(got);
      } else {
        begin_ = 0;
        end_ = static_cast<std::size_t>(got);
      }
    } else if (got < 0 && (errno == EAGAIN || errno == EINTR)) {
      check_stop(stop);
    } else if (got == 0 && eof_ok && n == wanted) {
      return false;
    } else {
      fail("reading", got < 0 ? errno : ECONNRESET);
    }
  }
  return true;
}

void StreamReader::decode_head(std::span<const std::byte, kHeadBytes> bytes, RecordHead& head) {
  const std::uint32_t kind = get_u32(bytes.data());
  FAST_ENFORCE_AS(core::IoError, kind >= 1 && kind <= 3, "stream: unknown record kind {}", kind);
  const std::uint32_t chunk = get_u32(bytes.data() + 4);
  FAST_ENFORCE_AS(core::IoError, chunk >= kMinChunkBytes && chunk <= kChunkBytes && (chunk & (chunk - 1)) == 0,
                  "stream: record {} declares chunks of {} bytes, expected a power of two from {} to {}",
                  sealer_.counter() - 1, chunk, kMinChunkBytes, kChunkBytes);
  head.kind = static_cast<RecordKind>(kind);
  head.after = get_u64(bytes.data() + 8);
  head.header = wire::decode_header(std::span<const std::byte>(bytes.data() + 16, wire::kHeaderBytes),
                                    {.max_payload_bytes = wire::Limits{}.max_payload_bytes, .world_size = 0});
  chunk_bytes_ = chunk;
}

bool StreamReader::read_head(RecordHead& head, const StopCheck& stop) {
  std::array<std::byte, kHeadBytes> bytes{};
  Sealer::Tag tag{};
  if (!read_exact(bytes.data(), bytes.size(), stop, true)) return false;
  read_exact(tag.data(), tag.size(), stop, false);
  if (!sealer_.open(bytes, tag)) throw core::IoError(not_opened(sealer_, "record", sealer_.counter()));
  decode_head(bytes, head);
  return true;
}

void StreamReader::read_payload(std::span<std::byte> out, const StopCheck& stop) {
  Sealer::Tag tag{};
  for (std::size_t at = 0; at < out.size(); at += chunk_bytes_) {
    const std::span<std::byte> chunk = out.subspan(at, std::min(chunk_bytes_, out.size() - at));
    read_exact(chunk.data(), chunk.size(), stop, false);
    read_exact(tag.data(), tag.size(), stop, false);
    if (!sealer_.open(chunk, tag)) throw core::IoError(not_opened(sealer_, "chunk", sealer_.counter()));
  }
}

}  // namespace fast::runtime::zmq

namespace fast::runtime::zmq {

long StreamReader::read_some(std::byte* out, std::size_t n, std::byte* then, std::size_t m) {
  if (begin_ == end_ && n + m < kReadAheadBytes / 2) {  // small: read ahead
    const ssize_t got = ::recv(fd_, buffer_.data(), buffer_.size(), MSG_DONTWAIT);
    if (got == 0) return -1;
    if (got < 0) {
      if (errno == EAGAIN || errno == EINTR) return 0;
      fail("reading", errno);
    }
    begin_ = 0;
    end_ = static_cast<std::size_t>(got);
  }
  if (begin_ < end_) {
    const std::size_t first = std::min(n, end_ - begin_);
    std::memcpy(out, buffer_.data() + begin_, first);
    begin_ += first;
    const std::size_t second = first == n ? std::min(m, end_ - begin_) : 0;
    if (second > 0) std::memcpy(then, buffer_.data() + begin_, second);
    begin_ += second;
    return static_cast<long>(first + second);
  }
  iovec iov[2] = {{out, n}, {then, m}};
  msghdr message{};
  message.msg_iov = iov;
  message.msg_iovlen = m > 0 ? 2 : 1;
  for (;;) {
    const ssize_t got = ::recvmsg(fd_, &message, MSG_DONTWAIT);
    if (got > 0) return static_cast<long>(got);
    if (got == 0) return -1;
    if (errno == EAGAIN) return 0;
    if (errno != EINTR) fail("reading", errno);
  }
}

void StreamReader::open_head() {
  const std::span<std::byte, kHeadBytes> bytes(head_bytes_.data(), kHeadBytes);
  Sealer::Tag tag{};
  std::memcpy(tag.data(), head_bytes_.data() + kHeadBytes, tag.size());
  if (!sealer_.open(bytes, tag)) throw core::IoError(not_opened(sealer_, "record", sealer_.counter()));
  decode_head(bytes, record_.head);
}

void StreamReader::open_chunk() {
  const std::size_t total = record_.head.header.payload_bytes;
  const std::size_t end = std::min(chunk_at_ + chunk_bytes_, total);
  const std::span<std::byte> chunk(record_.payload.get() + chunk_at_, end - chunk_at_);
  if (opening_ && total > chunk_bytes_) {  // a helper opens it while the next one is read
    if (chunk_at_ == 0) {
      first_nonce_ = sealer_.counter();
      handed_ = 0;
      failed_nonce_ = ~std::uint64_t{0};
    }
    const std::uint64_t nonce = first_nonce_ + handed_++;
    opening_->add([this, chunk, nonce, tag = tag_](unsigned slot) {
      if (sealer_.open_at(slot, nonce, chunk, tag)) return;
      for (std::uint64_t seen = failed_nonce_; nonce < seen && !failed_nonce_.compare_exchange_weak(seen, nonce);) {
      }
    });
  } else {
    if (!sealer_.open(chunk, tag_)) throw core::IoError(not_opened(sealer_, "chunk", sealer_.counter()));
  }
  chunk_at_ = end;
  tag_done_ = 0;
}

void StreamReader::finish_record() {
  if (!opening_ || handed_ == 0) return;
  opening_->wait();
  handed_ = 0;
  const std::uint64_t failed = failed_nonce_;
  if (failed != ~std::uint64_t{0}) throw core::IoError(not_opened(sealer_, "chunk", failed));
  sealer_.skip((record_.head.header.payload_bytes + chunk_bytes_ - 1) / chunk_bytes_);
}

StreamReader::Step StreamReader::advance(const Allocate& allocate) {
  for (;;) {
    if (part_ == Part::head) {
      const long got = read_some(head_bytes_.data() + done_, head_bytes_.size() - done_);
      if (got < 0 && done_ == 0) return Step::end;
      if (got < 0) fail("reading", ECONNRESET);
      if (got == 0) return Step::waiting;
      done_ += static_cast<std::size_t>(got);
      if (done_ < head_bytes_.size()) continue;
      open_head();
      const std::size_t bytes = record_.head.header.payload_bytes;
      record_.payload = bytes > 0 ? allocate(bytes) : nullptr;
      done_ = chunk_at_ = tag_done_ = 0;
      if (bytes == 0) return Step::record;
      part_ = Part::payload;
      continue;
    }
    // The payload: each chunk, then its tag (read together when both are there).
    const std::size_t total = record_.head.header.payload_bytes;
    const std::size_t chunk_end = std::min(chunk_at_ + chunk_bytes_, total);
    const std::size_t rest = chunk_end - done_;
    const long got = read_some(record_.payload.get() + done_, rest, tag_.data() + tag_done_,
                               rest > 0 ? tag_.size() : tag_.size() - tag_done_);
    if (got < 0) fail("reading", ECONNRESET);
    if (got == 0) return Step::waiting;
    const std::size_t into_chunk = std::min(static_cast<std::size_t>(got), rest);
    done_ += into_chunk;
    tag_done_ += static_cast<std::size_t>(got) - into_chunk;
    if (done_ < chunk_end || tag_done_ < tag_.size()) continue;
    open_chunk();
    if (chunk_at_ < total) continue;
    part_ = Part::head;
    finish_record();
    done_ = 0;
    return Step::record;
  }
}

}  // namespace fast::runtime::zmq
