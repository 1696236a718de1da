#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "fast/core/buffer.hpp"
#include "fast/core/finite.hpp"
#include "fast/core/long_lived.hpp"

#include <cmath>

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <unistd.h>

#include <sanitizer/asan_interface.h>  // __asan_address_is_poisoned (ASan builds)

namespace fast::core {
namespace {

TEST(Buffer, ZeroFilledAlignedAndSized) {
  Buffer b(1000, DType::f64);
  EXPECT_EQ(b.numel(), 1000u);
  EXPECT_EQ(b.bytes(), 8000u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % Buffer::kAlignment, 0u);
  for (double x : b.as<double>()) EXPECT_EQ(x, 0.0);
}

TEST(Buffer, CopyOfAndTypedAccess) {
  std::vector<float> v{1.f, 2.f, 3.f};
  Buffer b = Buffer::copy_of(ConstView(std::span<const float>(v)));
  ASSERT_EQ(b.numel(), 3u);
  EXPECT_EQ(b.as<float>()[2], 3.f);
  EXPECT_THROW(b.as<double>(), InvalidArgument);
}

// A std::vector converts to a view of its elements, with their dtype, as a std::span does.
TEST(Buffer, AVectorIsViewedInPlace) {
  std::vector<double> v{1.0, 2.0};
  const MutableView m = v;
  EXPECT_EQ(m.data(), v.data());
  EXPECT_EQ(m.numel(), 2u);
  EXPECT_EQ(m.dtype(), DType::f64);
  m.as<double>()[1] = 5.0;
  EXPECT_EQ(v[1], 5.0);
  const std::vector<std::int32_t> w{7, 8, 9};
  const ConstView c = w;
  EXPECT_EQ(c.data(), w.data());
  EXPECT_EQ(c.numel(), 3u);
  EXPECT_EQ(c.dtype(), DType::i32);
}

// copy_of writes the copy and zeroes only the rest of its 64-byte capacity: growing within that
// capacity shows the copy followed by zeros, as after Buffer(numel, dtype).
TEST(Buffer, CopyOfIsAlignedAndZeroBeyondTheCopy) {
  std::vector<float> v{1.f, 2.f, 3.f};
  Buffer b = Buffer::copy_of(ConstView(std::span<const float>(v)));
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % Buffer::kAlignment, 0u);
  b.resize(Buffer::kAlignment / sizeof(float), DType::f32);
  const std::span<const float> grown = std::as_const(b).as<float>();
  ASSERT_EQ(grown.size(), 16u);
  EXPECT_EQ(grown[0], 1.f);
  EXPECT_EQ(grown[2], 3.f);
  for (std::size_t i = 3; i < grown.size(); ++i) EXPECT_EQ(grown[i], 0.f) << "element " << i;
  const Buffer empty = Buffer::copy_of(ConstView(std::span<const float>()));
  EXPECT_EQ(empty.numel(), 0u);
  EXPECT_EQ(empty.data(), nullptr);
}

// long_lived: a zero-filled page run of its own, outside malloc's heaps, growing into new zeroed pages.
TEST(Buffer, LongLivedIsZeroFilledPagesOutsideMallocsHeaps) {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  const struct mallinfo2 before = mallinfo2();
#endif
  Buffer b = Buffer::long_lived(300'000, DType::f32);
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  const struct mallinfo2 after = mallinfo2();
  EXPECT_LT(after.uordblks + after.hblkhd, before.uordblks + before.hblkhd + 300'000 * sizeof(float));
#endif
  ASSERT_EQ(b.numel(), 300'000u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % page, 0u);
  for (float x : b.as<float>()) ASSERT_EQ(x, 0.f);
  b.as<float>()[7] = 5.f;
  b.resize(2, DType::f32);  // within its pages: kept
  EXPECT_EQ(b.as<float>()[1], 0.f);
  b.resize(1'000'000, DType::f32);  // new pages
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % page, 0u);
  for (float x : b.as<float>()) ASSERT_EQ(x, 0.f);
  Buffer moved = std::move(b);
  moved.as<float>()[999'999] = 1.f;
  EXPECT_EQ(moved.as<float>()[999'999], 1.f);
  EXPECT_EQ(Buffer::long_lived(0, DType::f64).bytes(), 0u);
}

// pooled: a run of pages that goes back to the pool when the Buffer goes and comes out again,
// the same run, for the next Buffer of that length (this test is the only user of the length);
// zeroed by resize however it was used; small ones from the heap.
TEST(Buffer, PooledReusesItsPagesZeroedAndSmallOnesComeFromTheHeap) {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  constexpr std::size_t kNumel = 333'331;  // a length no other test pools
  const void* first = nullptr;
  {
    Buffer b = Buffer::pooled(DType::f32);
    EXPECT_EQ(b.numel(), 0u);
    EXPECT_EQ(b.dtype(), DType::f32);
    b.resize(kNumel, DType::f32);
    first = b.data();
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(first) % page, 0u);
    for (float& x : b.as<float>()) x = 7.f;
  }
  Buffer again = Buffer::pooled(DType::f32);
  again.resize(kNumel, DType::f32);
  EXPECT_EQ(again.data(), first);  // the same run, taken back from the pool
  for (float x : again.as<float>()) ASSERT_EQ(x, 0.f);
  Buffer other = Buffer::pooled(DType::f32);
  other.resize_to_overwrite(kNumel, DType::f32);
  EXPECT_NE(other.data(), first);  // that run is in use by `again`: a new one
  Buffer small = Buffer::pooled(DType::f64);
  small.resize(100, DType::f64);  // 800 bytes: from the heap, 64-byte aligned
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(small.data()) % Buffer::kAlignment, 0u);
  for (double x : small.as<double>()) EXPECT_EQ(x, 0.0);
}

// Under ASan an idle run of the pool is poisoned: a use of a pooled Buffer's memory after the
// Buffer went reports there; the run taken out again is usable in full.
TEST(Buffer, UnderAsanAnIdlePooledRunIsPoisoned) {
#if defined(__SANITIZE_ADDRESS__)
  constexpr std::size_t kNumel = 333'337;  // a length no other test pools
  const char* first = nullptr;
  {
    Buffer b = Buffer::pooled(DType::f32);
    b.resize(kNumel, DType::f32);
    first = static_cast<const char*>(b.data());
    EXPECT_FALSE(__asan_address_is_poisoned(first));
  }
  EXPECT_TRUE(__asan_address_is_poisoned(first));
  EXPECT_TRUE(__asan_address_is_poisoned(first + kNumel * sizeof(float) - 1));
  Buffer again = Buffer::pooled(DType::f32);
  again.resize(kNumel, DType::f32);
  ASSERT_EQ(again.data(), first);
  EXPECT_EQ(__asan_region_is_poisoned(again.data(), again.bytes()), nullptr);
#else
  GTEST_SKIP() << "checks ASan's shadow: run by `make sanitize`";
#endif
}

// resize_to_overwrite: the size changes as with resize; memory taken anew is zeroed only past the
// elements (up to the capacity), which the caller then writes.
TEST(Buffer, ResizeToOverwriteZeroesOnlyPastTheElements) {
  Buffer b;
  b.resize_to_overwrite(3, DType::f32);
  ASSERT_EQ(b.numel(), 3u);
  for (float& x : b.as<float>()) x = 1.f;
  b.resize(Buffer::kAlignment / sizeof(float), DType::f32);  // within the capacity: kept
  const std::span<const float> grown = std::as_const(b).as<float>();
  EXPECT_EQ(grown[2], 1.f);
  for (std::size_t i = 3; i < grown.size(); ++i) EXPECT_EQ(grown[i], 0.f) << "element " << i;
  b.resize_to_overwrite(1000, DType::f64);
  EXPECT_EQ(b.numel(), 1000u);
  EXPECT_EQ(b.dtype(), DType::f64);
}

// LongLivedVector: a std::vector whose large storage is a page run of its own (page-aligned, outside
// malloc's heaps) and whose small storage is the heap's; values as any vector's.
TEST(LongLivedVector, LargeStorageIsPagesOfItsOwn) {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  const struct mallinfo2 before = mallinfo2();
#endif
  LongLivedVector<double> large(200'000, 1.5);
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  const struct mallinfo2 after = mallinfo2();
  EXPECT_LT(after.uordblks + after.hblkhd, before.uordblks + before.hblkhd + 200'000 * sizeof(double));
#endif
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(large.data()) % page, 0u);
  EXPECT_EQ(large[199'999], 1.5);
  large.push_back(3.0);  // grows into new pages, the values kept
  EXPECT_EQ(large.size(), 200'001u);
  EXPECT_EQ(large[0], 1.5);
  EXPECT_EQ(large.back(), 3.0);
  LongLivedVector<float> small{1.f, 2.f};
  EXPECT_EQ(small[1], 2.f);
  LongLivedVector<double>().swap(large);
  EXPECT_TRUE(large.empty());
}

TEST(Buffer, EmptyBufferIsValid) {
  Buffer b(0, DType::f32);
  EXPECT_EQ(b.bytes(), 0u);
  EXPECT_TRUE(b.as<float>().empty());
}

TEST(TensorView, SliceChecksRange) {
  std::vector<float> v(10);
  MutableView view{std::span<float>(v)};
  EXPECT_EQ(view.slice(3, 7).numel(), 7u);
  EXPECT_EQ(view.slice(3, 7).data(), v.data() + 3);
  EXPECT_THROW(view.slice(4, 7), InvalidArgument);
  EXPECT_THROW(view.slice(11, 0), InvalidArgument);
}

TEST(TensorView, CopyChecksDtypeAndLength) {
  std::vector<float> a{1, 2}, b(2), c(3);
  std::vector<double> d(2);
  copy(ConstView(std::span<const float>(a)), MutableView(std::span<float>(b)));
  EXPECT_EQ(b[1], 2.f);
  EXPECT_THROW(copy(ConstView(std::span<const float>(a)), MutableView(std::span<float>(c))), InvalidArgument);
  EXPECT_THROW(copy(ConstView(std::span<const float>(a)), MutableView(std::span<double>(d))), InvalidArgument);
}

TEST(AllFinite, DetectsNanAndInfinityAnywhereOnEveryPath) {
  // 1001 elements: the vector body and the scalar tail both see a bad value in some case below.
  std::vector<float> v(1001, 2.0f);
  EXPECT_TRUE(all_finite(v));
  v[1000] = -INFINITY;
  EXPECT_FALSE(all_finite(v));
  v[1000] = 0.0f;
  v[3] = std::nanf("");
  EXPECT_FALSE(all_finite(v));
  v[3] = 3.4e38f;  // large but finite
  EXPECT_TRUE(all_finite(v));
}

TEST(AllFinite, EveryPositionIsChecked) {
  std::vector<float> v(67, 1.0f);
  EXPECT_TRUE(all_finite(std::span<const float>()));
  for (std::size_t i = 0; i < v.size(); ++i) {
    v[i] = INFINITY;
    EXPECT_FALSE(all_finite(v)) << i;
    v[i] = 1.0f;
  }
}

}  // namespace
}  // namespace fast::core
