#pragma once
// IpsecGcm: AES-256-GCM through Intel's Multi-Buffer Crypto for IPsec library (Debian
// libipsec-mb-dev; amd64), the streams' AES engine where the build has it (sealer.hpp,
// AesLibrary::ipsec_mb). The library picks its fastest code for the CPU at run time: with VAES and
// VPCLMULQDQ (AVX-512) it seals about 2.3 times as many bytes per core as OpenSSL 3.0's libcrypto
// (docs/launch.md, "Encryption of the data between hosts"). Its output is standard AES-256-GCM:
// a chunk sealed here opens with libcrypto and the other way round (tests/runtime/stream_test.cpp).
//
// Nonces are the caller's (Sealer's counter, 96 bits); no associated data; 16-byte tags.
// Thread-safety: seal() and open() are const and keep their state on the stack: any number of
// threads may use one IpsecGcm at once. Failure: open() returns false on a tag mismatch;
// construction throws core::IoError where the library cannot run (available() is false).

#include <array>
#include <cstddef>
#include <memory>
#include <span>
#include <string_view>

struct gcm_key_data;  // intel-ipsec-mb.h, kept out of this header

namespace fast::runtime::zmq {

class IpsecGcm {
 public:
  static constexpr std::size_t kKeyBytes = 32;
  static constexpr std::size_t kNonceBytes = 12;
  static constexpr std::size_t kTagBytes = 16;

  // Whether the library runs here with AES instructions: its manager, made once per process,
  // found an AES-NI path (SSE, AVX, AVX2 or AVX-512). Thread-safe.
  static bool available();
  // The path it found ("avx512", "avx2", "avx", "sse"; "none" where unavailable), for the log.
  static std::string_view path();

  // Expands `key` (AES round keys and GHASH powers), wiped again by the destructor.
  explicit IpsecGcm(std::span<const std::byte, kKeyBytes> key);
  ~IpsecGcm();
  IpsecGcm(const IpsecGcm&) = delete;
  IpsecGcm& operator=(const IpsecGcm&) = delete;

  // Encrypts `plain` into `out` (plain.size() bytes; may equal plain.data()) and writes its tag.
  void seal(const std::array<unsigned char, kNonceBytes>& nonce, std::span<const std::byte> plain, std::byte* out,
            std::span<std::byte, kTagBytes> tag) const;
  // Decrypts `data` in place; true when `tag` matches (compared in constant time). On false, `data`
  // holds bytes that must not be used.
  bool open(const std::array<unsigned char, kNonceBytes>& nonce, std::span<std::byte> data,
            std::span<const std::byte, kTagBytes> tag) const;

 private:
  std::unique_ptr<gcm_key_data> key_;  // 64-byte aligned (the library's declaration)
};

}  // namespace fast::runtime::zmq
