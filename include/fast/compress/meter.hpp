#pragma once
// CompressionMeter: what a worker's codec traffic would have cost dense and what it cost encoded.
// Every encode of a tensor through a codec adds (raw = elements x sizeof(their dtype), wire = payload
// bytes). compression_ratio = raw / wire over all encodes (1 when nothing was encoded). Forwarded
// payloads (an all-gather relaying another worker's message) are not encodes and are not counted.
//
// Thread-safety: add() and the readers may be called concurrently (atomics).

#include <atomic>
#include <cstdint>

namespace fast::compress {

struct CompressionStats {
  std::uint64_t raw_bytes = 0;   // bytes the encoded tensors hold dense
  std::uint64_t wire_bytes = 0;  // bytes of their encoded payloads
  std::uint64_t messages = 0;    // number of encodes
  double ratio() const noexcept {
    return wire_bytes == 0 ? 1.0 : static_cast<double>(raw_bytes) / static_cast<double>(wire_bytes);
  }
  void merge(const CompressionStats& o) noexcept {
    raw_bytes += o.raw_bytes;
    wire_bytes += o.wire_bytes;
    messages += o.messages;
  }
};

class CompressionMeter {
 public:
  void add(std::uint64_t raw_bytes, std::uint64_t wire_bytes) noexcept {
    raw_.fetch_add(raw_bytes, std::memory_order_relaxed);
    wire_.fetch_add(wire_bytes, std::memory_order_relaxed);
    messages_.fetch_add(1, std::memory_order_relaxed);
  }
  CompressionStats stats() const noexcept {
    return {raw_.load(std::memory_order_relaxed), wire_.load(std::memory_order_relaxed),
            messages_.load(std::memory_order_relaxed)};
  }

 private:
  std::atomic<std::uint64_t> raw_{0};
  std::atomic<std::uint64_t> wire_{0};
  std::atomic<std::uint64_t> messages_{0};
};

}  // namespace fast::compress
