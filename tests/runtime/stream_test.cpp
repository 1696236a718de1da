// The zmq runtime's direct streams (src/runtime/zmq/sealer.hpp, stream.hpp): the AEAD against a
// published test vector, nonces, tampered / replayed / reordered chunks, wrong keys, and records
// over a socket pair, both ends in this process.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fast/core/error.hpp"
#include "sealer.hpp"
#include "stream.hpp"

namespace fast::runtime::zmq {
namespace {

const Protection kAll[] = {Protection::aes_256_gcm, Protection::chacha20_poly1305, Protection::checksum};

// Each protection with each library that computes it here: AES-256-GCM through ipsec-mb (where the
// build and the CPU offer it) and through libcrypto.
struct Variant {
  Protection p;
  AesLibrary aes = AesLibrary::openssl;
  std::string name() const {
    return std::string(protection_name(p)) + (p == Protection::aes_256_gcm ? " by " + describe_aes_library(aes) : "");
  }
};
std::vector<Variant> variants(bool encrypting_only = false) {
  std::vector<Variant> v;
  for (AesLibrary aes : aes_libraries()) v.push_back({Protection::aes_256_gcm, aes});
  v.push_back({Protection::chacha20_poly1305});
  if (!encrypting_only) v.push_back({Protection::checksum});
  return v;
}

std::vector<std::byte> pattern(std::size_t n, int seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((i * 131 + static_cast<std::size_t>(seed)) & 0xff);
  return v;
}

std::string hex(std::span<const std::byte> bytes) {
  std::string s;
  const char* digits = "0123456789abcdef";
  for (std::byte b : bytes) {
    s += digits[static_cast<unsigned>(b) >> 4];
    s += digits[static_cast<unsigned>(b) & 15];
  }
  return s;
}

Sealer::Key key_of(int seed) {
  Sealer::Key k{};
  for (std::size_t i = 0; i < k.size(); ++i) k[i] = static_cast<std::byte>(i * 7 + static_cast<std::size_t>(seed));
  return k;
}

// How a record or chunk that does not open is named: an AEAD's failed authentication, --insecure's
// failed checksum (which says nothing of an attacker).
std::string not_opened_text(Protection p) {
  return p == Protection::checksum ? "failed its checksum (corrupted" : "failed authentication (tampered";
}

// The first chunk is sealed with nonce 0: GCM's published test case 14 (key 0^256, IV 0^96,
// plaintext 0^128) gives this ciphertext and tag (McGrew and Viega, "The Galois/Counter Mode of
// Operation", appendix B).
TEST(Sealer, AesGcmFirstChunkMatchesThePublishedTestVector) {
  for (AesLibrary aes : aes_libraries()) {
    Sealer sealer(Protection::aes_256_gcm, Sealer::Key{}, aes);
    std::vector<std::byte> plain(16), out(16);
    Sealer::Tag tag{};
    sealer.seal(plain, out.data(), tag);
    EXPECT_EQ(hex(out), "cea7403d4d606b6e074ec5d3baf39d18") << aes_library_name(aes);
    EXPECT_EQ(hex(tag), "d0d1c8a799996bf0265b98b5d48ab919") << aes_library_name(aes);
    EXPECT_EQ(sealer.counter(), 1u);
  }
}

// The AES libraries write the same bytes: every chunk one seals (in place or not, on any slot)
// the other opens, at sizes around the block and the chunk; so processes may choose differently.
TEST(Sealer, EachAesLibraryOpensWhatTheOtherSealed) {
  const std::vector<AesLibrary> offered = aes_libraries();
  if (offered.size() < 2) GTEST_SKIP() << "one AES library here: " << aes_library_name(offered.front());
  for (AesLibrary by : offered)
    for (AesLibrary with : offered) {
      Sealer seal(Protection::aes_256_gcm, key_of(9), by), open(Protection::aes_256_gcm, key_of(9), with);
      int i = 0;
      for (std::size_t bytes : {0, 1, 15, 16, 17, 1000, 65536, 262143}) {
        const std::vector<std::byte> plain = pattern(bytes, i);
        std::vector<std::byte> wire = plain;
        Sealer::Tag tag{};
        if (i % 2 == 0)
          seal.seal(wire, wire.data(), tag);  // in place
        else {
          seal.seal_at(3, seal.counter(), plain, wire.data(), tag);
          seal.skip(1);
        }
        ASSERT_TRUE(open.open(wire, tag)) << aes_library_name(by) << " -> " << aes_library_name(with) << ", " << bytes;
        EXPECT_EQ(wire, plain) << aes_library_name(by) << " -> " << aes_library_name(with) << ", " << bytes;
        ++i;
      }
    }
}

// A slot beyond the last is refused by every protection and library (no context is read out of
// bounds, and the ipsec-mb path, which keeps no per-slot state, refuses it as libcrypto's does).
TEST(Sealer, ASlotBeyondTheLastIsRefused) {
  for (const Variant& v : variants()) {
    Sealer sealer(v.p, key_of(4), v.aes);
    std::vector<std::byte> data = pattern(64, 1);
    Sealer::Tag tag{};
    EXPECT_THROW(sealer.seal_at(Sealer::kSlots, 0, data, data.data(), tag), core::IoError) << v.name();
    EXPECT_THROW((void)sealer.open_at(Sealer::kSlots, 0, data, tag), core::IoError) << v.name();
    EXPECT_NO_THROW(sealer.seal_at(Sealer::kSlots - 1, 0, data, data.data(), tag)) << v.name();
  }
}

// FAST_AES_LIBRARY's values: auto is the fastest offered; a name that is not a library is refused
// naming the variable.
TEST(Sealer, TheAesLibraryIsChosenByName) {
  EXPECT_EQ(choose_aes_library("auto"), aes_libraries().front());
  EXPECT_EQ(choose_aes_library("openssl"), AesLibrary::openssl);
  try {
    choose_aes_library("libsodium");
    ADD_FAILURE() << "an unknown library was taken";
  } catch (const core::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("FAST_AES_LIBRARY: expected auto, ipsec-mb or openssl, got 'libsodium'"),
              std::string::npos)
        << e.what();
  }
}

TEST(Sealer, ChunksOpenInOrderUnderTheSameKey) {
  for (const Variant& v : variants()) {
    const Protection p = v.p;
    Sealer seal(p, key_of(1), v.aes), open(p, key_of(1), v.aes);
    for (int i = 0; i < 5; ++i) {
      const std::vector<std::byte> plain = pattern(1000 + static_cast<std::size_t>(i) * 333, i);
      std::vector<std::byte> wire(plain.size());
      Sealer::Tag tag{};
      seal.seal(plain, wire.data(), tag);
      if (!seal.encrypts())
        wire = plain;  // the checksum mode sends the bytes as they are
      else
        EXPECT_NE(wire, plain) << v.name();
      ASSERT_TRUE(open.open(wire, tag)) << v.name() << " chunk " << i;
      EXPECT_EQ(wire, plain) << v.name();
    }
    EXPECT_EQ(open.counter(), 5u);
  }
}

// Seals `count` chunks of `plain`: their wire bytes and tags.
struct Sealed {
  std::vector<std::vector<std::byte>> wire;
  std::vector<Sealer::Tag> tags;
};
Sealed seal_chunks(const Variant& v, const Sealer::Key& key, int count, std::size_t bytes) {
  Sealer sealer(v.p, key, v.aes);
  Sealed s;
  for (int i = 0; i < count; ++i) {
    std::vector<std::byte> plain = pattern(bytes, i), wire(bytes);
    Sealer::Tag tag{};
    sealer.seal(plain, wire.data(), tag);
    s.wire.push_back(sealer.encrypts() ? wire : plain);
    s.tags.push_back(tag);
  }
  return s;
}

TEST(Sealer, ATamperedChunkOrTagFailsToOpen) {
  for (const Variant& v : variants()) {
    const Sealed s = seal_chunks(v, key_of(2), 1, 4096);
    for (std::size_t at : {std::size_t{0}, std::size_t{2047}, std::size_t{4095}}) {
      Sealer open(v.p, key_of(2), v.aes);
      std::vector<std::byte> wire = s.wire[0];
      wire[at] ^= std::byte{0x01};
      EXPECT_FALSE(open.open(wire, s.tags[0])) << v.name() << " byte " << at;
      EXPECT_EQ(open.counter(), 0u);  // a failed chunk does not advance
    }
    Sealer open(v.p, key_of(2), v.aes);
    std::vector<std::byte> wire = s.wire[0];
    Sealer::Tag tag = s.tags[0];
    tag[15] ^= std::byte{0x80};
    EXPECT_FALSE(open.open(wire, tag)) << v.name();
  }
}

TEST(Sealer, AReplayedOrReorderedChunkFailsToOpen) {
  for (const Variant& v : variants()) {
    const Sealed s = seal_chunks(v, key_of(3), 3, 512);
    {
      Sealer open(v.p, key_of(3), v.aes);
      std::vector<std::byte> c0 = s.wire[0];
      ASSERT_TRUE(open.open(c0, s.tags[0]));
      std::vector<std::byte> again = s.wire[0];  // chunk 0 replayed where chunk 1 is due
      EXPECT_FALSE(open.open(again, s.tags[0])) << v.name();
      std::vector<std::byte> c1 = s.wire[1];  // the real chunk 1 still opens
      EXPECT_TRUE(open.open(c1, s.tags[1])) << v.name();
    }
    {
      Sealer open(v.p, key_of(3), v.aes);
      std::vector<std::byte> c1 = s.wire[1];  // chunk 1 before chunk 0
      EXPECT_FALSE(open.open(c1, s.tags[1])) << v.name();
    }
  }
}

TEST(Sealer, AWrongKeyFailsToOpen) {
  for (const Variant& v : variants(true)) {
    const Sealed s = seal_chunks(v, key_of(4), 1, 100);
    Sealer open(v.p, key_of(5), v.aes);
    std::vector<std::byte> wire = s.wire[0];
    EXPECT_FALSE(open.open(wire, s.tags[0])) << v.name();
  }
}

// The same plaintext sealed many times never gives the same ciphertext or tag twice: each chunk
// has its own nonce (a repeated nonce would repeat both).
TEST(Sealer, NoncesNeverRepeatOverALongRun) {
  constexpr int kChunks = 200000;
  for (const Variant& v : variants(true)) {
    Sealer sealer(v.p, key_of(6), v.aes);
    const std::vector<std::byte> plain(16);
    std::set<std::string> ciphertexts, tags;
    std::vector<std::byte> wire(16);
    Sealer::Tag tag{};
    for (int i = 0; i < kChunks; ++i) {
      sealer.seal(plain, wire.data(), tag);
      ciphertexts.insert(std::string(reinterpret_cast<const char*>(wire.data()), wire.size()));
      tags.insert(std::string(reinterpret_cast<const char*>(tag.data()), tag.size()));
    }
    EXPECT_EQ(sealer.counter(), static_cast<std::uint64_t>(kChunks));
    EXPECT_EQ(ciphertexts.size(), static_cast<std::size_t>(kChunks)) << v.name();
    EXPECT_EQ(tags.size(), static_cast<std::size_t>(kChunks)) << v.name();
  }
}

TEST(Sealer, FreshKeysDiffer) { EXPECT_NE(Sealer::random_key(), Sealer::random_key()); }

// --- records over a socket pair ------------------------------------------------------------------

struct Pair {
  int a = -1, b = -1;
  Pair() {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    a = fds[0];
    b = fds[1];
  }
};

RecordHead data_head(std::size_t bytes, std::uint64_t tag) {
  RecordHead head{.kind = RecordKind::data};
  head.header = {.kind = wire::FrameKind::data,
                 .dtype = core::DType::u8,
                 .src = 1,
                 .dst = 0,
                 .tag = tag,
                 .count = bytes,
                 .payload_bytes = bytes};
  return head;
}

TEST(Stream, RecordsOfEverySizeArriveIntactAndInOrder) {
  for (Protection p : kAll) {
    Pair pair;
    const std::vector<std::size_t> sizes = {0, 1, 4096, kChunkBytes, kChunkBytes + 1, 5 * kChunkBytes + 77};
    std::thread writer([&] {
      StreamWriter w(pair.a, p, key_of(7));
      for (std::size_t i = 0; i < sizes.size(); ++i)
        w.write(data_head(sizes[i], i), pattern(sizes[i], static_cast<int>(i)), {});
    });
    StreamReader r(pair.b, p, key_of(7));
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      RecordHead head;
      ASSERT_TRUE(r.read_head(head, {})) << protection_name(p);
      EXPECT_EQ(head.header.tag, static_cast<std::int32_t>(i));
      ASSERT_EQ(head.header.payload_bytes, sizes[i]);
      std::vector<std::byte> got(sizes[i]);
      r.read_payload(got, {});
      EXPECT_EQ(got, pattern(sizes[i], static_cast<int>(i))) << protection_name(p) << " record " << i;
    }
    writer.join();
    RecordHead head;
    EXPECT_FALSE(r.read_head(head, {}));  // the writer closed its end between records
  }
}

// Captures what a writer (sealing on `pool`, if any) puts on the wire for records of the given
// sizes (tags 0, 1, ...).
std::vector<std::byte> wire_of(Protection p, const Sealer::Key& key, const std::vector<std::size_t>& sizes,
                               SealPool* pool = nullptr) {
  Pair pair;
  std::vector<std::byte> out;
  std::thread reader([&] {
    std::byte buf[65536];
    for (;;) {
      const ssize_t n = ::recv(pair.b, buf, sizeof buf, 0);
      if (n <= 0) break;
      out.insert(out.end(), buf, buf + n);
    }
    ::close(pair.b);
  });
  {
    StreamWriter w(pair.a, p, key, pool);
    for (std::size_t i = 0; i < sizes.size(); ++i)
      w.write(data_head(sizes[i], i), pattern(sizes[i], static_cast<int>(i)), {});
  }
  reader.join();
  return out;
}

std::vector<std::byte> wire_of(Protection p, const Sealer::Key& key, int records, std::size_t bytes) {
  return wire_of(p, key, std::vector<std::size_t>(static_cast<std::size_t>(records), bytes));
}

// Where each record ends on the wire: its head and tag, then each chunk of its payload and its tag.
std::vector<std::size_t> record_ends(const std::vector<std::size_t>& sizes) {
  std::vector<std::size_t> ends;
  std::size_t at = 0;
  for (std::size_t bytes : sizes) {
    at += kHeadBytes + Sealer::kTagBytes + bytes + Sealer::kTagBytes * ((bytes + kChunkBytes - 1) / kChunkBytes);
    ends.push_back(at);
  }
  return ends;
}

// advance() never blocks: fed the wire in pieces of uneven sizes, it completes each record exactly
// when its last byte arrived, with the payload sent, and says `end` once the writer closed.
// With a SealPool the reader opens chunks on its helpers: the same.
TEST(Stream, AdvanceCompletesEachRecordWhenItsLastByteArrives) {
  const std::vector<std::size_t> sizes = {0, 1, 4096, 9000, kChunkBytes, kChunkBytes + 1, 3 * kChunkBytes + 77, 5};
  const std::vector<std::size_t> ends = record_ends(sizes);
  SealPool helpers(3);
  for (SealPool* pool : {static_cast<SealPool*>(nullptr), &helpers})
  for (Protection p : kAll) {
    const std::vector<std::byte> bytes = wire_of(p, key_of(11), sizes);
    ASSERT_EQ(bytes.size(), ends.back()) << protection_name(p);
    Pair pair;
    StreamReader r(pair.b, p, key_of(11), pool);
    const StreamReader::Allocate allocate = [](std::size_t n) {
      return std::shared_ptr<std::byte>(new std::byte[n], std::default_delete<std::byte[]>());
    };
    std::size_t fed = 0, completed = 0, piece = 1;
    while (fed < bytes.size()) {
      piece = std::min<std::size_t>((piece * 7919 + 13) % 60000 + 1, bytes.size() - fed);  // 1 B to 60 kB
      ASSERT_EQ(::send(pair.a, bytes.data() + fed, piece, MSG_NOSIGNAL), static_cast<ssize_t>(piece));
      fed += piece;
      for (StreamReader::Step step; (step = r.advance(allocate)) != StreamReader::Step::waiting;) {
        ASSERT_EQ(step, StreamReader::Step::record) << protection_name(p);
        ASSERT_LT(completed, sizes.size());
        EXPECT_LE(ends[completed], fed) << "record " << completed << " completed before its last byte";
        const StreamReader::Record& got = r.current();
        EXPECT_EQ(got.head.header.tag, completed);
        ASSERT_EQ(got.head.header.payload_bytes, sizes[completed]);
        const std::vector<std::byte> want = pattern(sizes[completed], static_cast<int>(completed));
        EXPECT_TRUE(std::equal(want.begin(), want.end(), got.payload.get())) << protection_name(p) << " " << completed;
        ++completed;
      }
      const auto whole = static_cast<std::size_t>(std::upper_bound(ends.begin(), ends.end(), fed) - ends.begin());
      EXPECT_EQ(completed, whole) << protection_name(p) << " after " << fed << " bytes";
    }
    ::close(pair.a);
    EXPECT_EQ(r.advance(allocate), StreamReader::Step::end);
  }
}

// A tampered payload byte fails advance() as it fails read_payload(), naming the chunk (its
// nonce), whether the reader opens the chunks itself or on a SealPool's helpers.
TEST(Stream, AdvanceFailsOnATamperedChunk) {
  SealPool helpers(3);
  for (SealPool* pool : {static_cast<SealPool*>(nullptr), &helpers})
  for (Protection p : kAll) {
    std::vector<std::byte> bytes = wire_of(p, key_of(12), {3 * kChunkBytes + 100});
    bytes[kHeadBytes + Sealer::kTagBytes + kChunkBytes + Sealer::kTagBytes + 50] ^= std::byte{1};  // second chunk
    Pair pair;
    std::thread feeder([&] {
      ::send(pair.a, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      ::close(pair.a);
    });
    const StreamReader::Allocate allocate = [](std::size_t n) {
      return std::shared_ptr<std::byte>(new std::byte[n], std::default_delete<std::byte[]>());
    };
    std::string error;
    {
      StreamReader r(pair.b, p, key_of(12), pool);  // closes its end, so the feeder's send ends
      try {
        while (r.advance(allocate) != StreamReader::Step::end) std::this_thread::yield();
      } catch (const core::IoError& e) {
        error = e.what();
      }
    }
    feeder.join();
    EXPECT_NE(error.find("chunk 2 " + not_opened_text(p)), std::string::npos) << protection_name(p) << ": " << error;
  }
}

// Feeds `bytes` to a reader and reads records until it fails: the error text, or "" when every
// record read.
std::string read_all(Protection p, const Sealer::Key& key, const std::vector<std::byte>& bytes) {
  Pair pair;
  std::thread feeder([&] {
    std::size_t at = 0;
    while (at < bytes.size()) {
      const ssize_t n = ::send(pair.a, bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
      if (n <= 0) break;
      at += static_cast<std::size_t>(n);
    }
    ::close(pair.a);
  });
  std::string error;
  try {
    StreamReader r(pair.b, p, key);
    RecordHead head;
    while (r.read_head(head, {})) {
      std::vector<std::byte> got(head.header.payload_bytes);
      r.read_payload(got, {});
    }
  } catch (const core::Error& e) {
    error = e.what();
  }
  feeder.join();
  return error;
}

TEST(Stream, ATamperedByteAReplayedRecordOrAWrongKeyFailsTheRead) {
  constexpr std::size_t kBytes = 3000;
  for (Protection p : kAll) {
    const std::vector<std::byte> clean = wire_of(p, key_of(8), 2, kBytes);
    ASSERT_EQ(read_all(p, key_of(8), clean), "") << protection_name(p);
    const std::size_t record = clean.size() / 2;
    std::vector<std::byte> tampered = clean;
    tampered[record + kHeadBytes + 16 + 100] ^= std::byte{4};  // in the second record's payload
    EXPECT_NE(read_all(p, key_of(8), tampered).find(not_opened_text(p)), std::string::npos) << protection_name(p);
    std::vector<std::byte> replayed = clean;  // the first record again in place of the second
    std::copy(clean.begin(), clean.begin() + static_cast<std::ptrdiff_t>(record),
              replayed.begin() + static_cast<std::ptrdiff_t>(record));
    EXPECT_NE(read_all(p, key_of(8), replayed).find(not_opened_text(p)), std::string::npos) << protection_name(p);
    if (p != Protection::checksum) {
      EXPECT_NE(read_all(p, key_of(9), clean).find("failed authentication"), std::string::npos) << protection_name(p);
    }
  }
}

// The chunk size by record size: 256 KiB without helpers; with them a sixteenth of the record, as
// a power of two from 64 KiB to 256 KiB.
TEST(Stream, TheChunkSizeFollowsTheRecordWhereHelpersSeal) {
  EXPECT_EQ(record_chunk_bytes(0, 0), 262144u);
  EXPECT_EQ(record_chunk_bytes(std::size_t{1} << 20, 0), 262144u);
  EXPECT_EQ(record_chunk_bytes(0, 2), 65536u);
  EXPECT_EQ(record_chunk_bytes(100, 1), 65536u);
  EXPECT_EQ(record_chunk_bytes(std::size_t{1} << 20, 2), 65536u);
  EXPECT_EQ(record_chunk_bytes((std::size_t{2} << 20) - 1, 2), 65536u);
  EXPECT_EQ(record_chunk_bytes(std::size_t{2} << 20, 2), 131072u);
  EXPECT_EQ(record_chunk_bytes(3 * (std::size_t{1} << 20), 2), 131072u);
  EXPECT_EQ(record_chunk_bytes(std::size_t{4} << 20, 2), 262144u);
  EXPECT_EQ(record_chunk_bytes(std::size_t{1} << 30, 4), 262144u);
}

// The wire of data records of the given sizes (tags 0, 1, ...), built here with a Sealer of its
// own: each head declares `chunk(size)`, each payload is sealed in chunks of that size.
std::vector<std::byte> sealed_wire(Protection p, const Sealer::Key& key, const std::vector<std::size_t>& sizes,
                                   const std::function<std::uint32_t(std::size_t)>& chunk) {
  Sealer sealer(p, key);
  std::vector<std::byte> wire;
  Sealer::Tag tag{};
  auto append = [&](std::span<const std::byte> plain) {
    std::vector<std::byte> out(plain.size());
    sealer.seal(plain, out.data(), tag);
    const std::span<const std::byte> body = sealer.encrypts() ? std::span<const std::byte>(out) : plain;
    wire.insert(wire.end(), body.begin(), body.end());
    wire.insert(wire.end(), tag.begin(), tag.end());
  };
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    std::vector<std::byte> head(kHeadBytes);
    head[0] = std::byte{2};  // data
    const std::uint32_t c = chunk(sizes[i]);
    for (int b = 0; b < 4; ++b) head[4 + b] = static_cast<std::byte>(c >> (8 * b));
    wire::encode_header(data_head(sizes[i], i).header,
                        std::span<std::byte, wire::kHeaderBytes>(head.data() + 16, wire::kHeaderBytes));
    append(head);
    const std::vector<std::byte> payload = pattern(sizes[i], static_cast<int>(i));
    const std::size_t step = c > 0 ? c : payload.size();  // 0: a bad head, never read past
    for (std::size_t at = 0; at < payload.size(); at += step)
      append(std::span<const std::byte>(payload).subspan(at, std::min<std::size_t>(step, payload.size() - at)));
  }
  return wire;
}

// A writer puts on the wire exactly the records built by hand with the chunk sizes of
// record_chunk_bytes, whether it seals each chunk itself or on a SealPool's helpers (each chunk
// keeps its nonce), for records of one chunk, of one batch and of several batches.
TEST(Stream, AWriterWritesEachRecordInItsDeclaredChunks) {
  const std::vector<std::size_t> sizes = {
      0, 100, kChunkBytes, 2 * kChunkBytes, 4 * kChunkBytes + 1, 11 * kChunkBytes + 333, 7, std::size_t{1} << 20};
  for (Protection p : kAll) {
    EXPECT_EQ(wire_of(p, key_of(13), sizes),
              sealed_wire(p, key_of(13), sizes, [](std::size_t n) { return record_chunk_bytes(n, 0); }))
        << protection_name(p) << ", no helpers";
    for (unsigned helpers : {1u, 3u}) {
      SealPool pool(helpers);
      EXPECT_EQ(wire_of(p, key_of(13), sizes, &pool),
                sealed_wire(p, key_of(13), sizes, [&](std::size_t n) { return record_chunk_bytes(n, helpers); }))
          << protection_name(p) << ", " << helpers << " helpers";
    }
  }
}

// Records in chunks of any accepted size arrive intact through either way of reading, with or
// without helpers to open them.
TEST(Stream, RecordsInSmallChunksArriveIntactThroughEitherRead) {
  const std::vector<std::size_t> sizes = {5 * kMinChunkBytes + 3, 0, std::size_t{1} << 20, 3 * kChunkBytes + 9, 1};
  const auto smallest = [](std::size_t) { return static_cast<std::uint32_t>(kMinChunkBytes); };
  SealPool helpers(2);
  for (Protection p : kAll) {
    const std::vector<std::byte> bytes = sealed_wire(p, key_of(14), sizes, smallest);
    EXPECT_EQ(read_all(p, key_of(14), bytes), "") << protection_name(p);
    for (SealPool* pool : {static_cast<SealPool*>(nullptr), &helpers}) {
      Pair pair;
      std::thread feeder([&] {
        ::send(pair.a, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        ::close(pair.a);
      });
      StreamReader r(pair.b, p, key_of(14), pool);
      const StreamReader::Allocate allocate = [](std::size_t n) {
        return std::shared_ptr<std::byte>(new std::byte[n], std::default_delete<std::byte[]>());
      };
      std::size_t completed = 0;
      for (StreamReader::Step step; (step = r.advance(allocate)) != StreamReader::Step::end;) {
        if (step == StreamReader::Step::waiting) {
          std::this_thread::yield();
          continue;
        }
        ASSERT_LT(completed, sizes.size());
        EXPECT_EQ(r.chunk_bytes(), kMinChunkBytes);
        const std::vector<std::byte> want = pattern(sizes[completed], static_cast<int>(completed));
        EXPECT_TRUE(std::equal(want.begin(), want.end(), r.current().payload.get())) << protection_name(p);
        ++completed;
      }
      feeder.join();
      EXPECT_EQ(completed, sizes.size()) << protection_name(p);
    }
  }
}

// A head that declares a chunk size out of range or not a power of two fails the read, naming it.
TEST(Stream, AHeadDeclaringAnotherChunkSizeFailsTheRead) {
  for (std::uint32_t bad : {0u, 8192u, 100000u, 524288u}) {
    const std::vector<std::byte> bytes =
        sealed_wire(Protection::aes_256_gcm, key_of(15), {1000}, [&](std::size_t) { return bad; });
    const std::string error = read_all(Protection::aes_256_gcm, key_of(15), bytes);
    EXPECT_NE(error.find("declares chunks of " + std::to_string(bad) + " bytes"), std::string::npos) << error;
  }
}

TEST(Stream, ACutStreamFailsTheRead) {
  const std::vector<std::byte> clean = wire_of(Protection::aes_256_gcm, key_of(10), 1, 5000);
  const std::vector<std::byte> cut(clean.begin(), clean.end() - 10);
  EXPECT_NE(read_all(Protection::aes_256_gcm, key_of(10), cut), "");
}

TEST(Stream, APreambleRoundTripsAnotherVersionIsReadAndGarbageIsNotOne) {
  Pair pair;
  write_preamble(pair.a, {.process = 3, .offer = 0x1122334455667788ull}, {});
  StreamPreamble got;
  ASSERT_TRUE(read_preamble(pair.b, got, {}));
  EXPECT_EQ(got.process, 3u);
  EXPECT_EQ(got.offer, 0x1122334455667788ull);
  EXPECT_EQ(got.version, kStreamVersion);
  // Another version's preamble is read, with its version, for the caller to refuse by name.
  const unsigned char older[StreamPreamble::kBytes] = {'F', 'A', 'S', 'T', 'S', 'T', 'R', 'M', 1, 0, 0, 0, 2};
  ASSERT_EQ(::send(pair.a, older, sizeof older, 0), static_cast<ssize_t>(sizeof older));
  ASSERT_TRUE(read_preamble(pair.b, got, {}));
  EXPECT_EQ(got.version, 1u);
  EXPECT_EQ(got.process, 2u);
  const char garbage[StreamPreamble::kBytes] = "GET / HTTP/1.1\r\n\r\n";
  ASSERT_EQ(::send(pair.a, garbage, sizeof garbage, 0), static_cast<ssize_t>(sizeof garbage));
  EXPECT_FALSE(read_preamble(pair.b, got, {}));
  ::close(pair.a);
  ::close(pair.b);
}

// The answer to `open` is read once whole; a connection that ends first, or sends anything else,
// was not accepted.
TEST(Stream, TheAnswerToOpenIsReadAndAConnectionEndedFirstWasNotAccepted) {
  {
    Pair pair;
    write_accepted(pair.b, {});
    EXPECT_TRUE(read_accepted(pair.a, {}));
    ::close(pair.a);
    ::close(pair.b);
  }
  {
    Pair pair;
    ASSERT_EQ(::send(pair.b, "FAST", 4, 0), 4);
    ::shutdown(pair.b, SHUT_RDWR);
    EXPECT_FALSE(read_accepted(pair.a, {}));
    ::close(pair.a);
    ::close(pair.b);
  }
  {
    Pair pair;
    ASSERT_EQ(::send(pair.b, "FASTSTRM", 8, 0), 8);
    EXPECT_FALSE(read_accepted(pair.a, {}));
    ::close(pair.a);
    ::close(pair.b);
  }
}

}  // namespace
}  // namespace fast::runtime::zmq
