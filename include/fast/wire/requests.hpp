#pragma once
// Request headers of FAST's own services, as structs with named fields. Each travels as a small
// i64 tensor (a point-to-point message through Context); to_words() and from_words() are the only
// code that knows the word layout, written next to them in requests.cpp. from_words() validates
// every field before the service uses it: a bad request is InvalidArgument naming the field,
// expected versus got, never an out-of-range read or write.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fast/core/dtype.hpp"

namespace fast::wire {

// A one-sided window request (collective/window.hpp), sent by the requester to the owner.
struct WindowRequest {
  enum class Op : std::int64_t {
    put = 1,
    get = 2,
    accumulate = 3,
    fetch_accumulate = 4,
    fetch_average = 5,
    accumulate_scaled = 6,
    exchange_difference = 7,
    stop = 9
  };
  static constexpr std::size_t kMaxBlocks = 4;            // exchange_difference: blocks per request
  static constexpr std::size_t kWords = 10 + kMaxBlocks;  // size of the i64 tensor on the wire

  Op op = Op::stop;
  std::uint64_t offset = 0;  // first element of the owner's tensor touched
  std::uint64_t count = 0;   // elements of the payload (per block for exchange_difference)
  core::DType dtype = core::DType::f32;
  std::uint32_t seq = 0;             // the requester's sequence number (tags of payload and answer)
  bool encoded = false;              // payload and reply go through the window's codec
  double scale = 1;                  // accumulate_scaled: factor of the payload
  std::int64_t scale_at = -1;        // element whose value scales the payload; -1: none
  std::uint64_t summed = 0;          // exchange_difference: blocks summed into the difference
  std::vector<double> coefficients;  // exchange_difference: one per block (1..kMaxBlocks), finite

  std::array<std::int64_t, kWords> to_words() const;
  static WindowRequest from_words(std::span<const std::int64_t> words);
};

const char* name_of(WindowRequest::Op op) noexcept;

// A parameter-server request (strategy/ps.hpp), sent by a worker to the server of a shard.
struct PsRequest {
  // join: a new process took a lost worker's rank back (async, ssp; docs/faults.md).
  enum class Kind : std::int64_t { push = 1, done = 2, stop = 3, join = 4 };
  static constexpr std::size_t kWords = 5;

  Kind kind = Kind::stop;
  std::int64_t clock = 0;     // push: the worker's gradient number, from 0; done: pushes made
  std::uint64_t version = 0;  // push: the shard version the gradient was computed on
  bool finite = true;         // push: the gradient has no NaN or infinity (else it is dropped)
  double lr = 0;              // push: the learning rate of this step

  std::array<std::int64_t, kWords> to_words() const;
  static PsRequest from_words(std::span<const std::int64_t> words);
};

}  // namespace fast::wire
