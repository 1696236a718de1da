#pragma once
// Sealer: protects the chunks of one direction of one TCP stream (stream.hpp) — AES-256-GCM
// (where the CPU accelerates AES and carry-less multiplication; computed by Intel's ipsec-mb
// library where the build has it, gcm_ipsec.hpp, else by OpenSSL's libcrypto: AesLibrary),
// ChaCha20-Poly1305 (elsewhere, libcrypto), or an XXH3 checksum (--insecure: integrity against
// faults, no secrecy, no defence against an attacker).
//
// Nonces: chunk i of a direction is sealed with nonce i (96 bits: 4 zero bytes, then i as a
// little-endian u64), counted by both ends and never sent, so a nonce is never reused under a key
// (the key is fresh for each connection) and a chunk that is replayed, dropped or reordered fails
// to open exactly as a tampered one does. The checksum mode seeds XXH3 with the counter the same
// way, so that a repeated chunk fails there too.
//
// Thread-safety: one Sealer per direction. seal() and open() (which advance the counter) from one
// thread at a time; seal_at() and open_at() (a given counter, on a cipher context of their own
// per slot) from several threads at once, each with a slot no other thread uses meanwhile (a
// SealPool's slots, seal_pool.hpp), and not while seal() or open() runs.
// Failure: open() and open_at() return false (open()'s counter does not advance); libcrypto
// failures throw core::IoError.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fast::runtime::zmq {

class IpsecGcm;

enum class Protection { aes_256_gcm, chacha20_poly1305, checksum };

// The AEAD this machine runs fastest: AES-256-GCM with AES-NI and PCLMULQDQ (x86-64), else
// ChaCha20-Poly1305.
Protection fastest_aead();
std::string_view protection_name(Protection p);
// The protection named `name` (protection_name's spelling); core::InvalidArgument otherwise.
Protection parse_protection(std::string_view name);

// The library that computes AES-256-GCM. Both write the same bytes: a chunk sealed with one opens
// with the other, so the processes of a run may differ in it.
enum class AesLibrary { ipsec_mb, openssl };
std::string_view aes_library_name(AesLibrary library);  // "ipsec-mb", "openssl"
// The libraries this build and this CPU offer, fastest first: ipsec-mb (built with it, and AES
// instructions found), then openssl.
std::vector<AesLibrary> aes_libraries();
// FAST_AES_LIBRARY's choice: "auto" (aes_libraries()'s first), "ipsec-mb" or "openssl";
// core::InvalidArgument naming the variable for another value or a library not offered here.
AesLibrary choose_aes_library(std::string_view name);
// "ipsec-mb (avx512)", "openssl": the library and, for ipsec-mb, the code path it runs, for the log.
std::string describe_aes_library(AesLibrary library);

class Sealer {
 public:
  static constexpr std::size_t kKeyBytes = 32;
  static constexpr std::size_t kTagBytes = 16;
  using Key = std::array<std::byte, kKeyBytes>;
  using Tag = std::array<std::byte, kTagBytes>;

  // A fresh random key from the operating system's generator (libcrypto's RAND_bytes).
  static Key random_key();

  // `aes`: the library of AES-256-GCM (unused by the other protections).
  Sealer(Protection protection, const Key& key, AesLibrary aes = aes_libraries().front());
  ~Sealer();
  Sealer(const Sealer&) = delete;
  Sealer& operator=(const Sealer&) = delete;

  Protection protection() const { return protection_; }
  // Whether seal() writes ciphertext (an AEAD); the checksum mode leaves the bytes as they are.
  bool encrypts() const { return protection_ != Protection::checksum; }
  // Chunks sealed (or opened) so far: the next chunk's nonce.
  std::uint64_t counter() const { return counter_; }

  // Seals `plain` as the next chunk: its ciphertext into `out` (plain.size() bytes; may equal
  // plain.data(); unused when !encrypts()) and its tag into `tag`.
  void seal(std::span<const std::byte> plain, std::byte* out, Tag& tag);
  // Opens the next chunk in place (`data` holds its ciphertext, then its plaintext): true when
  // `tag` matches (the chunk is this direction's next one, unaltered, under this key).
  bool open(std::span<std::byte> data, const Tag& tag);

  // The same for the chunk whose nonce is `counter`, on slot `slot` (< kSlots)'s cipher context,
  // without touching the counter: chunks of one record sealed or opened in parallel. skip(n)
  // then moves the counter past the n chunks.
  static constexpr unsigned kSlots = 16;
  void seal_at(unsigned slot, std::uint64_t counter, std::span<const std::byte> plain, std::byte* out, Tag& tag);
  bool open_at(unsigned slot, std::uint64_t counter, std::span<std::byte> data, const Tag& tag);
  void skip(std::uint64_t chunks);

 private:
  static void require_slot(unsigned slot);  // IoError unless slot < kSlots (every library)
  void* context(unsigned slot);  // slot's EVP_CIPHER_CTX with the key set, made on first use

  Protection protection_;
  Key key_;
  std::array<void*, kSlots> contexts_{};  // EVP_CIPHER_CTX per slot (AEAD modes through libcrypto)
  std::shared_ptr<const IpsecGcm> gcm_;   // AES-256-GCM through ipsec-mb (every slot); null: libcrypto
  std::uint64_t counter_ = 0;
};

}  // namespace fast::runtime::zmq
