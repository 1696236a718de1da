#pragma once
// A direct TCP stream from one process to another for the zmq runtime's data messages
// (transport.hpp, "Streams"): records, each protected chunk by chunk by a Sealer.
//
// On the wire, after connect():
//   preamble, clear: "FASTSTRM", u32 version (3), u32 the sender's process index, u64 the
//     receiver's offer id (which key to open the stream with);
//   then records: a head chunk of kHeadBytes (u32 kind, u32 the record's chunk size, u64 `after`,
//   the wire frame header of the message), its tag; then the payload (header.payload_bytes) in
//   chunks of the declared size (the last one shorter), each followed by its tag. Integers are
//   little-endian. The chunk size is a power of two from kMinChunkBytes to kChunkBytes, chosen by
//   the writer per record (record_chunk_bytes); a reader refuses any other.
// The first record is `open` (no payload): it proves the sender holds the key the receiver gave
// it. The receiver answers it with "FASTACPT" (8 bytes, clear, the only bytes it ever sends): the
// connection is accepted as the offer's stream. A connection closed before that answer was not
// (dropped before it authenticated, handshake_slots.hpp): the sender may connect again with the
// same offer. A data record is one message; a bye record carries the sender's bye text.
//
// Parallel protection: a writer or reader given a SealPool with helpers seals (opens) the chunks of
// a record of two chunks or more on the pool's slots, each with its own nonce as above, so each
// chunk is the same bytes on the wire as one sealed without a pool. The writer keeps up to twice
// the pool's slots of chunks being sealed ahead and writes each one as soon as it is sealed, in
// order; the reader opens each chunk on a helper as soon as it is read and delivers the record
// once all are open.
//
// Ownership: a writer or reader owns its socket (closed by the destructor); the pool, shared by
// many, must outlive them.
// Thread-safety: none; the transport serialises each writer under a mutex, and each reader under a
// mutex of its own (its thread, or a worker that waits for a message, reads it; transport.hpp).
// Failures: core::IoError naming what failed (the transport names the peer).

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "fast/core/port_range.hpp"
#include "fast/wire/frame.hpp"
#include "seal_pool.hpp"
#include "sealer.hpp"

namespace fast::runtime::zmq {

enum class RecordKind : std::uint32_t { open = 1, data = 2, bye = 3 };

// The stream format this build writes and reads (the preamble's version).
inline constexpr std::uint32_t kStreamVersion = 3;

struct StreamPreamble {
  static constexpr std::size_t kBytes = 24;
  std::uint32_t version = kStreamVersion;  // read_preamble: the sender's
  std::uint32_t process = 0;
  std::uint64_t offer = 0;
};

struct RecordHead {
  RecordKind kind = RecordKind::open;
  std::uint64_t after = 0;   // `open`: data frames the sender sent through ZeroMQ before the stream
  wire::FrameHeader header;  // data: the message's; bye: a u8 payload of the text
};

inline constexpr std::size_t kHeadBytes = 16 + wire::kHeaderBytes;
inline constexpr std::size_t kChunkBytes = 256 * 1024;    // the largest chunk, and the one without helpers
inline constexpr std::size_t kMinChunkBytes = 16 * 1024;  // the smallest a reader accepts
// The chunk size a writer with `helpers` seal helpers uses for a payload of `payload_bytes`:
// kChunkBytes without helpers; with them, small enough that a record is split among the helpers
// and the socket (a chunk is sealed while the one before it is written).
std::size_t record_chunk_bytes(std::size_t payload_bytes, unsigned helpers);

// Whether this process should stop waiting on a socket (asked every kSocketTimeoutMs while one
// blocks); a non-empty answer aborts with core::IoError carrying it.
using StopCheck = std::function<std::string()>;
inline constexpr int kSocketTimeoutMs = 200;
// What a writer does when the socket takes no more bytes now: returns once it may (or after at
// most about kSocketTimeoutMs; the writer then asks its StopCheck and tries again). Null: waits
// for the socket to be writable. The transport's makes progress meanwhile (it reads what the
// peer sends, so that two processes that write to each other at once never both wait).
using WriteWait = std::function<void(int fd)>;

// A listening socket on `host` (an address), on a port of `ports` but those in `avoid` (any: an ephemeral
// one); returns the fd and writes the port. core::IoError when it cannot (every port of the range
// taken).
int listen_stream(const std::string& host, const core::PortRange& ports, const std::vector<int>& avoid, int& port);
// Connects to host:port within `timeout_seconds`; the socket returned is set up for streaming
// (TCP_NODELAY, send and receive timeouts of kSocketTimeoutMs). core::IoError otherwise.
int connect_stream(const std::string& host, int port, double timeout_seconds);
// Sets up an accepted socket the same way.
void setup_stream_socket(int fd);
// Writes or reads the preamble (read: false when it is not one: wrong magic; a FAST stream of
// another version is read, with its version, for the caller to refuse by name).
void write_preamble(int fd, const StreamPreamble& preamble, const StopCheck& stop);
bool read_preamble(int fd, StreamPreamble& preamble, const StopCheck& stop);
// The receiver's answer to the `open` record (above). read_accepted: true once read; false when the
// connection ends first (the receiver dropped it) or sends anything else; core::IoError when
// `stop` answers or the socket fails otherwise.
void write_accepted(int fd, const StopCheck& stop);
bool read_accepted(int fd, const StopCheck& stop);

class StreamWriter {
 public:
  // `pool`: null, or helpers to seal large records with (see above); `aes`: Sealer's.
  StreamWriter(int fd, Protection protection, const Sealer::Key& key, SealPool* pool = nullptr,
               AesLibrary aes = aes_libraries().front());
  ~StreamWriter();
  StreamWriter(const StreamWriter&) = delete;
  StreamWriter& operator=(const StreamWriter&) = delete;

  // Writes one record; returns once the kernel holds all of it (the payload's memory may be
  // reused then); calls `wait` whenever the socket is full. A record cut short leaves the stream
  // unusable (the peer sees a failure).
  void write(const RecordHead& head, std::span<const std::byte> payload, const StopCheck& stop,
             const WriteWait& wait = nullptr);
  // Unblocks a write in progress (it fails) and ends the stream; from any thread.
  void shutdown();
  std::uint64_t chunks() const { return sealer_.counter(); }

 private:
  void send_all(std::span<const std::span<const std::byte>> parts, const StopCheck& stop, const WriteWait& wait);
  // The payload's chunks sealed on the pool ahead of the one being written (the head rides with the first).
  void write_parallel(std::span<const std::span<const std::byte>> head, std::span<const std::byte> payload,
                      std::size_t chunk_bytes, const StopCheck& stop, const WriteWait& wait);

  int fd_;
  Sealer sealer_;
  SealPool* pool_;
  std::vector<std::byte> scratch_;   // head and one chunk's ciphertext
  std::vector<std::byte> batches_;   // write_parallel: the ciphertext of the chunks sealed ahead (kChunkBytes each)
};

class StreamReader {
 public:
  // `pool`: null, or helpers to open large records with (advance() only; see above); `aes`: Sealer's.
  StreamReader(int fd, Protection protection, const Sealer::Key& key, SealPool* pool = nullptr,
               AesLibrary aes = aes_libraries().front());
  ~StreamReader();  // waits for chunks still being opened
  StreamReader(const StreamReader&) = delete;
  StreamReader& operator=(const StreamReader&) = delete;

  // Reads the next record's head: false at the stream's clean end (between records). A head
  // that fails to open throws core::IoError ("failed authentication").
  bool read_head(RecordHead& head, const StopCheck& stop);
  int fd() const { return fd_; }
  // The chunk size the last head read declared (read_head or advance; the writer chose it).
  std::size_t chunk_bytes() const { return chunk_bytes_; }

  // Reading without blocking (the other way to read; not mixed with read_head/read_payload in
  // the middle of a record): advance() reads what the socket holds now into the record in
  // progress, opening each chunk as it completes, and returns `record` once one is whole
  // (current() then holds it, and its payload, until the next advance()), `end` at the stream's
  // clean end between records, `waiting` when it needs more bytes (then nothing is left read ahead: the socket's
  // readiness says when to call it again). `allocate(bytes)` gives the payload's memory once the head is read.
  // core::IoError as read_head/read_payload.
  enum class Step { waiting, record, end };
  struct Record {
    RecordHead head;
    std::shared_ptr<std::byte> payload;  // head.header.payload_bytes bytes (empty: none)
  };
  using Allocate = std::function<std::shared_ptr<std::byte>(std::size_t bytes)>;
  Step advance(const Allocate& allocate);
  // Whether advance() is in the middle of a record (some of it read, not all).
  bool in_record() const { return part_ == Part::payload || done_ > 0; }
  Record& current() { return record_; }
  // Reads the current record's payload (head.header.payload_bytes) into `out`, opening each chunk.
  void read_payload(std::span<std::byte> out, const StopCheck& stop);
  void shutdown();  // from any thread: a read in progress ends

 private:
  // Reads exactly n bytes; false only at a clean end with nothing read and `eof_ok`.
  bool read_exact(std::byte* out, std::size_t n, const StopCheck& stop, bool eof_ok);
  // Reads what is there now, without blocking, up to n bytes into `out` and then up to m into
  // `then` (read ahead into buffer_ when n + m is small); returns how many; -1 at the stream's
  // end (core::IoError for an error).
  long read_some(std::byte* out, std::size_t n, std::byte* then = nullptr, std::size_t m = 0);
  // The head's bytes, opened: checks and decodes them into `head` and chunk_bytes_.
  void decode_head(std::span<const std::byte, kHeadBytes> bytes, RecordHead& head);
  void open_head();   // advance(): the head and its tag are in: checks and decodes them
  void open_chunk();  // advance(): a chunk and its tag are in: opens it (or has a helper open it)
  void finish_record();  // advance(): every chunk is in: waits for the helpers' opens, checks them

  // advance()'s record in progress: its part (head, payload), the bytes of the part read so far,
  // the head's bytes, the current chunk's start and the tag being read.
  enum class Part { head, payload } part_ = Part::head;
  std::size_t done_ = 0;
  std::array<std::byte, kHeadBytes + Sealer::kTagBytes> head_bytes_{};
  std::size_t chunk_at_ = 0;
  Sealer::Tag tag_{};
  std::size_t tag_done_ = 0;
  Record record_;
  int fd_;
  Sealer sealer_;
  std::size_t chunk_bytes_ = kChunkBytes;  // the current record's chunk size (from its head)
  // Opening on the pool: the record's first chunk's nonce, its chunks handed out, and the lowest
  // nonce that failed to open (~0: none; written by helpers under the group's jobs).
  std::uint64_t first_nonce_ = 0, handed_ = 0;
  std::atomic<std::uint64_t> failed_nonce_{~std::uint64_t{0}};
  std::vector<std::byte> buffer_;  // bytes read ahead: [begin_, end_)
  std::size_t begin_ = 0, end_ = 0;
  // Last: destroyed first, it waits for the opens still running, which use the members above.
  std::unique_ptr<SealPool::Group> opening_;
};

}  // namespace fast::runtime::zmq
