#pragma once
// Page runs from the pool behind core::Buffer::pooled, for allocators outside fast_core (a
// libtorch CPU allocator: fast/adapters/torch/pooled_allocator.hpp). The pool keeps idle runs by
// length and hands them back whole, so that blocks of the same sizes that come and go at every step
// neither split into holes that small blocks then fill (the malloc heap's fate) nor fault their
// pages in again; at most Buffer::kPoolIdleBytes stay idle, the rest goes back to the kernel.

#include <cstddef>

namespace fast::core {

// `bytes` rounded up to whole pages: the length of the run take_pooled_pages(bytes) returns.
std::size_t pooled_pages_bytes(std::size_t bytes) noexcept;
// A page-aligned run of pooled_pages_bytes(bytes) bytes (bytes > 0), its contents unspecified.
// Throws std::bad_alloc when the kernel refuses a new mapping. Thread-safe.
void* take_pooled_pages(std::size_t bytes);
// Gives back a run that take_pooled_pages(bytes) returned, with the same `bytes`. Thread-safe.
void give_pooled_pages(void* p, std::size_t bytes) noexcept;
// The bytes of the idle runs the pool holds now (at most Buffer::kPoolIdleBytes): what came back
// to it and waits to be taken again. Thread-safe; a snapshot that other threads may change.
std::size_t idle_pooled_bytes() noexcept;

}  // namespace fast::core
