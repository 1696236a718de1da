#pragma once
// Copying a large record into a shared-memory ring (shared_ring.hpp) without reading the ring's
// lines first.
//
// An ordinary copy (memcpy) writes a line only after owning it, and a ring's lines were last read
// by the receiving process on another core: each one is fetched from that core and invalidated
// there before it is written. Measured on the 2-core AMD EPYC reference VM, two processes each
// putting a record at the ring's first byte and taking the other's (docs/launch.md, "Shared memory
// on one host"): a 1 MiB put took 130-170 us with memcpy (about 7 GB/s) against 21-27 us with
// non-temporal stores, 4 MiB 390-590 us against 95-125 us; up to 768 KiB memcpy ran at 30-40 GB/s,
// and the stores past the caches were no slower there (256 KiB: 6.1 against 7.5 us), nor the
// receiver's copy out of the ring.
//
// The stores past the caches are weakly ordered: copy_past_caches ends with a store fence, so a
// release store after it (the ring's `published`) is seen after every byte it wrote.

#include <cstddef>

namespace fast::runtime::zmq {

// The payload size from which OutboundRing::put copies past the caches. Where memcpy was no slower
// (up to 768 KiB on the reference VM) a record written through the caches may still be in them
// when the receiver reads it soon, on machines whose cores exchange lines cheaply; the 2-process
// all-reduce ran alike with 64 KiB and 256 KiB here (docs/benchmarks.md, (e)).
inline constexpr std::size_t kPastCachesBytes = std::size_t{256} << 10;

// Copies `bytes` from `src` to `dst` (not overlapping) with non-temporal stores where the CPU has
// them (x86-64: SSE2, always), then a store fence; elsewhere memcpy. Any alignment (the stores
// start at dst's first 16-byte boundary, the bytes before it and after the last whole 16 are
// copied as usual). Thread-safety: none needed (touches only the two ranges).
void copy_past_caches(std::byte* dst, const std::byte* src, std::size_t bytes);

}  // namespace fast::runtime::zmq
