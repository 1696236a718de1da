#include "fast/adapters/torch/pooled_allocator.hpp"

#include <atomic>
#include <mutex>
#include <new>

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include "fast/core/page_pool.hpp"

namespace fast::torch {

namespace {

// What the deleter needs of a pooled block: its run and the length it was taken with.
struct PooledBlock {
  void* run;
  std::size_t bytes;
};

void give_block(void* context) {
  auto* block = static_cast<PooledBlock*>(context);
  core::give_pooled_pages(block->run, block->bytes);
  delete block;
}

class PooledCpuAllocator final : public c10::Allocator {
 public:
  explicit PooledCpuAllocator(c10::Allocator* fallback) : fallback_(fallback) {}

  c10::DataPtr allocate(std::size_t n) const override {
    if (n < kPooledTensorBytes) return fallback_->allocate(n);
    auto* block = new PooledBlock{nullptr, n};
    try {
      block->run = core::take_pooled_pages(n);
    } catch (...) {
      delete block;
      throw;
    }
    return {block->run, block, &give_block, c10::Device(c10::DeviceType::CPU)};
  }

  // No single function frees both kinds of block (their contexts differ).
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }

 private:
  c10::Allocator* fallback_;
};

std::atomic<bool> pooled_allocator_installed{false};

}  // namespace

void use_pooled_cpu_allocator() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Never destroyed: tensors it allocated may be freed during static destruction.
    static auto* allocator = new PooledCpuAllocator(c10::GetCPUAllocator());  // NOLINT
    c10::SetCPUAllocator(allocator, /*priority=*/1);                          // above libtorch's own registration (0)
    pooled_allocator_installed = true;
  });
}

bool pooled_cpu_allocator_in_use() noexcept { return pooled_allocator_installed; }

}  // namespace fast::torch
