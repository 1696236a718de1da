#pragma once
// Shared by the all-reduce tests: inputs whose sums are exact and their closed form.

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

#include "fast/collective/communicator.hpp"

namespace fast::collective::closed_form {

// Worker r's element i: an exact binary fraction, so every order of addition gives the exact sum in
// f32 and f64. Closed form of the sum over ranks 0..n-1: 0.5 (i % 97 + 1) n (n + 1) / 2.
inline double value(int rank, std::size_t i) {
  return 0.5 * static_cast<double>(rank + 1) * static_cast<double>(i % 97 + 1);
}
inline double sum_of(int n, std::size_t i) { return 0.5 * static_cast<double>(i % 97 + 1) * n * (n + 1) / 2.0; }

// All-reduces `len` elements of value(rank, i) with `options` and returns how many differ from the
// closed form (exactly for sums, within 1e-6 relative for averages), reporting the first three.
template <typename T>
std::size_t allreduce_mismatches(Communicator& comm, std::size_t len, const AllreduceOptions& options) {
  const int n = comm.size();
  std::vector<T> data(len);
  for (std::size_t i = 0; i < len; ++i) data[i] = static_cast<T>(value(comm.rank(), i));
  comm.allreduce(core::MutableView(std::span<T>(data)), options);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < len; ++i) {
    const double expect = options.op == ReduceOp::sum ? sum_of(n, i) : sum_of(n, i) / n;
    const double tol = options.op == ReduceOp::sum ? 0.0 : 1e-6 * std::abs(expect);
    if (std::abs(static_cast<double>(data[i]) - expect) > tol && bad++ < 3)
      ADD_FAILURE() << name_of(comm.resolve(len * sizeof(T), options)) << ", " << n << " workers, rank " << comm.rank()
                    << ", length " << len << ", element " << i << ": got " << data[i] << ", expected " << expect;
  }
  return bad;
}

}  // namespace fast::collective::closed_form
