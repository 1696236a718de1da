#include "fast/adapters/torch/pooled_allocator.hpp"

#include <atomic>
#include <mutex>
#include <new>
#include <unordered_map>

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include "fast/core/page_pool.hpp"

namespace fast::torch {

namespace {

// Blocks of kPooledTensorBytes or more: runs of the page pool, each known by its address (libtorch's
// raw_allocate/raw_deallocate need a block's context to be its data and one deleter for every
// block), the others the fallback's. Thread-safe: libtorch allocates from any thread.
class PooledCpuAllocator final : public c10::Allocator {
 public:
  explicit PooledCpuAllocator(c10::Allocator* fallback)
      : fallback_(fallback), fallback_deleter_(fallback->raw_deleter()) {}

  c10::DataPtr allocate(std::size_t n) const override {
    if (n < kPooledTensorBytes) return fallback_->allocate(n);
    void* run = nullptr;
    try {
      run = core::take_pooled_pages(n);
    } catch (const std::bad_alloc&) {  // the fallback's own error names the size (or it finds the memory)
      return fallback_->allocate(n);
    }
    try {
      const std::lock_guard<std::mutex> lock(mutex_);
      runs_.emplace(run, n);
    } catch (...) {  // the table could not grow
      core::give_pooled_pages(run, n);
      throw;
    }
    return {run, run, raw_deleter(), c10::Device(c10::DeviceType::CPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &free_block; }

  // Whether the fallback's blocks can be freed from their address alone (what raw_deleter needs).
  bool usable() const noexcept { return fallback_deleter_ != nullptr; }

 private:
  static void free_block(void* p);
  void free(void* p) const noexcept {
    std::size_t bytes = 0;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (const auto it = runs_.find(p); it != runs_.end()) {
        bytes = it->second;
        runs_.erase(it);
      }
    }
    if (bytes > 0)
      core::give_pooled_pages(p, bytes);
    else
      fallback_deleter_(p);
  }

  c10::Allocator* fallback_;
  c10::DeleterFnPtr fallback_deleter_;
  mutable std::mutex mutex_;
  mutable std::unordered_map<void*, std::size_t> runs_;  // the pooled blocks alive, by address
};

// The one instance (never destroyed: tensors it allocated may be freed during static destruction).
PooledCpuAllocator* the_pooled_allocator = nullptr;

void PooledCpuAllocator::free_block(void* p) {
  if (p != nullptr) the_pooled_allocator->free(p);
}

std::atomic<bool> pooled_allocator_installed{false};

}  // namespace

void use_pooled_cpu_allocator() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto* allocator = new PooledCpuAllocator(c10::GetCPUAllocator());  // NOLINT: never destroyed
    if (!allocator->usable()) {  // a libtorch whose CPU allocator has no deleter of its own: left as it is
      delete allocator;
      return;
    }
    the_pooled_allocator = allocator;
    c10::SetCPUAllocator(allocator, /*priority=*/1);  // above libtorch's own registration (0)
    pooled_allocator_installed = true;
  });
}

bool pooled_cpu_allocator_in_use() noexcept { return pooled_allocator_installed; }

}  // namespace fast::torch
