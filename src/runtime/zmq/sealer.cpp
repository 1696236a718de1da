#include "sealer.hpp"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cstring>

#include "fast/core/error.hpp"
#include "fast/wire/frame.hpp"
#if FAST_WITH_IPSEC_MB
#include "gcm_ipsec.hpp"
#endif

namespace fast::runtime::zmq {

namespace {
EVP_CIPHER_CTX* ctx(void* p) { return static_cast<EVP_CIPHER_CTX*>(p); }

const EVP_CIPHER* cipher(Protection p) {
  return p == Protection::aes_256_gcm ? EVP_aes_256_gcm() : EVP_chacha20_poly1305();
}

void check(int ok, const char* what) {
  FAST_ENFORCE_AS(core::IoError, ok == 1, "stream encryption: libcrypto's {} failed", what);
}
}  // namespace

Protection fastest_aead() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("aes") && __builtin_cpu_supports("pclmul")) return Protection::aes_256_gcm;
#endif
  return Protection::chacha20_poly1305;
}

std::string_view protection_name(Protection p) {
  switch (p) {
    case Protection::aes_256_gcm: return "aes-256-gcm";
    case Protection::chacha20_poly1305: return "chacha20-poly1305";
    case Protection::checksum: return "xxh3-checksum";
  }
  return "?";
}

Protection parse_protection(std::string_view name) {
  for (Protection p : {Protection::aes_256_gcm, Protection::chacha20_poly1305, Protection::checksum})
    if (protection_name(p) == name) return p;
  FAST_THROW(InvalidArgument, "stream protection: expected aes-256-gcm, chacha20-poly1305 or xxh3-checksum, got '{}'",
             name);
}

namespace {
#if FAST_WITH_IPSEC_MB
constexpr const char* kIpsecMissing = "the library found no AES instructions on this CPU";
#else
constexpr const char* kIpsecMissing = "this build of FAST was made without it (Debian libipsec-mb-dev)";
#endif
}  // namespace

std::string_view aes_library_name(AesLibrary library) {
  return library == AesLibrary::ipsec_mb ? "ipsec-mb" : "openssl";
}

std::vector<AesLibrary> aes_libraries() {
  std::vector<AesLibrary> offered;
#if FAST_WITH_IPSEC_MB
  if (IpsecGcm::available()) offered.push_back(AesLibrary::ipsec_mb);
#endif
  offered.push_back(AesLibrary::openssl);
  return offered;
}

AesLibrary choose_aes_library(std::string_view name) {
  const std::vector<AesLibrary> offered = aes_libraries();
  if (name == "auto") return offered.front();
  for (AesLibrary l : {AesLibrary::ipsec_mb, AesLibrary::openssl}) {
    if (aes_library_name(l) != name) continue;
    FAST_ENFORCE(std::find(offered.begin(), offered.end(), l) != offered.end(),
                 "FAST_AES_LIBRARY: 'ipsec-mb' is not offered here ({}); expected auto or openssl", kIpsecMissing);
    return l;
  }
  FAST_THROW(InvalidArgument, "FAST_AES_LIBRARY: expected auto, ipsec-mb or openssl, got '{}'", name);
}

std::string describe_aes_library(AesLibrary library) {
#if FAST_WITH_IPSEC_MB
  if (library == AesLibrary::ipsec_mb) return "ipsec-mb (" + std::string(IpsecGcm::path()) + ")";
#endif
  return std::string(aes_library_name(library));
}

Sealer::Key Sealer::random_key() {
  Key key{};
  check(RAND_bytes(reinterpret_cast<unsigned char*>(key.data()), static_cast<int>(key.size())), "RAND_bytes");
  return key;
}

Sealer::Sealer(Protection protection, const Key& key, AesLibrary aes) : protection_(protection), key_(key) {
#if FAST_WITH_IPSEC_MB
  if (protection_ == Protection::aes_256_gcm && aes == AesLibrary::ipsec_mb) {
    gcm_ = std::make_shared<const IpsecGcm>(std::span<const std::byte, kKeyBytes>(key_));
    return;
  }
#endif
  FAST_ENFORCE_AS(core::IoError, protection_ != Protection::aes_256_gcm || aes == AesLibrary::openssl,
                  "stream encryption: the AES library '{}' is not in this build", aes_library_name(aes));
  if (encrypts()) context(0);  // a libcrypto failure shows at once
}

Sealer::~Sealer() {
  for (void* c : contexts_)
    if (c) EVP_CIPHER_CTX_free(ctx(c));
  OPENSSL_cleanse(key_.data(), key_.size());
}

void Sealer::require_slot(unsigned slot) {
  FAST_ENFORCE_AS(core::IoError, slot < kSlots, "stream encryption: slot {} out of range (at most {})", slot,
                  kSlots - 1);
}

void* Sealer::context(unsigned slot) {
  void*& c = contexts_[slot];
  if (c) return c;
  c = EVP_CIPHER_CTX_new();
  FAST_ENFORCE_AS(core::IoError, c != nullptr, "stream encryption: libcrypto's EVP_CIPHER_CTX_new failed");
  // One context for both directions of use: the key schedule is computed once; each chunk only
  // sets its nonce (EncryptInit/DecryptInit with a null cipher and key keep them).
  check(EVP_CipherInit_ex(ctx(c), cipher(protection_), nullptr, nullptr, nullptr, -1), "EVP_CipherInit_ex");
  check(EVP_CIPHER_CTX_ctrl(ctx(c), EVP_CTRL_AEAD_SET_IVLEN, 12, nullptr), "EVP_CTRL_AEAD_SET_IVLEN");
  check(EVP_CipherInit_ex(ctx(c), nullptr, nullptr, reinterpret_cast<const unsigned char*>(key_.data()), nullptr, -1),
        "EVP_CipherInit_ex (key)");
  return c;
}

namespace {
std::array<unsigned char, 12> nonce_of(std::uint64_t counter) {
  std::array<unsigned char, 12> n{};
  for (int i = 0; i < 8; ++i) n[static_cast<std::size_t>(4 + i)] = static_cast<unsigned char>(counter >> (8 * i));
  return n;
}
}  // namespace

void Sealer::seal(std::span<const std::byte> plain, std::byte* out, Tag& tag) {
  seal_at(0, counter_, plain, out, tag);
  ++counter_;
}

bool Sealer::open(std::span<std::byte> data, const Tag& tag) {
  if (!open_at(0, counter_, data, tag)) return false;
  ++counter_;
  return true;
}

void Sealer::skip(std::uint64_t chunks) {
  FAST_ENFORCE_AS(core::IoError, chunks <= ~std::uint64_t{0} - counter_, "stream encryption: the nonce counter is spent");
  counter_ += chunks;
}

void Sealer::seal_at(unsigned slot, std::uint64_t counter, std::span<const std::byte> plain, std::byte* out,
                     Tag& tag) {
  FAST_ENFORCE_AS(core::IoError, counter != ~std::uint64_t{0}, "stream encryption: the nonce counter is spent");
  require_slot(slot);
  if (!encrypts()) {
    const std::array<std::uint64_t, 2> h = wire::checksum128(plain, counter);
    std::memcpy(tag.data(), h.data(), 16);
    return;
  }
  const std::array<unsigned char, 12> n = nonce_of(counter);
#if FAST_WITH_IPSEC_MB
  if (gcm_) {
    gcm_->seal(n, plain, out, tag);
    return;
  }
#endif
  EVP_CIPHER_CTX* c = ctx(context(slot));
  check(EVP_EncryptInit_ex(c, nullptr, nullptr, nullptr, n.data()), "EVP_EncryptInit_ex");
  int length = 0;
  if (!plain.empty())
    check(EVP_EncryptUpdate(c, reinterpret_cast<unsigned char*>(out), &length,
                            reinterpret_cast<const unsigned char*>(plain.data()), static_cast<int>(plain.size())),
          "EVP_EncryptUpdate");
  int tail = 0;
  check(EVP_EncryptFinal_ex(c, reinterpret_cast<unsigned char*>(out) + length, &tail), "EVP_EncryptFinal_ex");
  check(EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, kTagBytes, tag.data()), "EVP_CTRL_AEAD_GET_TAG");
}

bool Sealer::open_at(unsigned slot, std::uint64_t counter, std::span<std::byte> data, const Tag& tag) {
  require_slot(slot);
  if (!encrypts()) {
    const std::array<std::uint64_t, 2> h = wire::checksum128(data, counter);
    Tag expected{};
    std::memcpy(expected.data(), h.data(), 16);
    return expected == tag;
  }
  const std::array<unsigned char, 12> n = nonce_of(counter);
#if FAST_WITH_IPSEC_MB
  if (gcm_) return gcm_->open(n, data, tag);
#endif
  EVP_CIPHER_CTX* c = ctx(context(slot));
  check(EVP_DecryptInit_ex(c, nullptr, nullptr, nullptr, n.data()), "EVP_DecryptInit_ex");
  int length = 0;
  auto* bytes = reinterpret_cast<unsigned char*>(data.data());
  if (!data.empty())
    check(EVP_DecryptUpdate(c, bytes, &length, bytes, static_cast<int>(data.size())), "EVP_DecryptUpdate");
  Tag copy = tag;  // the SET_TAG control takes a non-const pointer
  check(EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_TAG, kTagBytes, copy.data()), "EVP_CTRL_AEAD_SET_TAG");
  int tail = 0;
  return EVP_DecryptFinal_ex(c, bytes + length, &tail) == 1;
}

}  // namespace fast::runtime::zmq
