#include "gcm_ipsec.hpp"

#include <intel-ipsec-mb.h>
#include <openssl/crypto.h>

#include "fast/core/error.hpp"

namespace fast::runtime::zmq {

namespace {

// The process's manager: initialised once, then only its function table is read (the direct
// GCM functions take their state as arguments), so every thread shares it. Never freed: sealers
// may run until the process ends.
struct Manager {
  IMB_MGR* mgr = nullptr;
  IMB_ARCH arch = IMB_ARCH_NONE;
  Manager() {
    mgr = alloc_mb_mgr(0);
    if (mgr == nullptr) return;
    init_mb_mgr_auto(mgr, &arch);
    if (imb_get_errno(mgr) != 0) arch = IMB_ARCH_NONE;
  }
};

const Manager& manager() {
  static const Manager m;
  return m;
}

const std::uint8_t* bytes(const void* p) { return static_cast<const std::uint8_t*>(p); }

}  // namespace

bool IpsecGcm::available() {
  const IMB_ARCH a = manager().arch;
  return a == IMB_ARCH_SSE || a == IMB_ARCH_AVX || a == IMB_ARCH_AVX2 || a == IMB_ARCH_AVX512;
}

std::string_view IpsecGcm::path() {
  switch (available() ? manager().arch : IMB_ARCH_NONE) {
    case IMB_ARCH_SSE: return "sse";
    case IMB_ARCH_AVX: return "avx";
    case IMB_ARCH_AVX2: return "avx2";
    case IMB_ARCH_AVX512: return "avx512";
    default: return "none";
  }
}

IpsecGcm::IpsecGcm(std::span<const std::byte, kKeyBytes> key) : key_(std::make_unique<gcm_key_data>()) {
  FAST_ENFORCE_AS(core::IoError, available(),
                  "stream encryption: the ipsec-mb library found no AES instructions on this CPU (path '{}')", path());
  IMB_AES256_GCM_PRE(manager().mgr, key.data(), key_.get());
}

IpsecGcm::~IpsecGcm() { imb_clear_mem(key_.get(), sizeof(gcm_key_data)); }

void IpsecGcm::seal(const std::array<unsigned char, kNonceBytes>& nonce, std::span<const std::byte> plain,
                    std::byte* out, std::span<std::byte, kTagBytes> tag) const {
  gcm_context_data context;
  IMB_AES256_GCM_ENC(manager().mgr, key_.get(), &context, reinterpret_cast<std::uint8_t*>(out), bytes(plain.data()),
                     plain.size(), nonce.data(), nullptr, 0, reinterpret_cast<std::uint8_t*>(tag.data()), kTagBytes);
}

bool IpsecGcm::open(const std::array<unsigned char, kNonceBytes>& nonce, std::span<std::byte> data,
                    std::span<const std::byte, kTagBytes> tag) const {
  gcm_context_data context;
  std::array<std::uint8_t, kTagBytes> computed{};
  auto* in_place = reinterpret_cast<std::uint8_t*>(data.data());
  IMB_AES256_GCM_DEC(manager().mgr, key_.get(), &context, in_place, in_place, data.size(), nonce.data(), nullptr, 0,
                     computed.data(), kTagBytes);
  return CRYPTO_memcmp(computed.data(), tag.data(), kTagBytes) == 0;
}

}  // namespace fast::runtime::zmq
