// strategy::Checkpoint's file format (round trip, every truncation, corruption, hostile counts) and
// Worker::save/restore: a worker restored from a checkpoint continues bit for bit as the one that
// saved it would have.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "common/error_message.hpp"
#include "common/temp_dir_test.hpp"
#include "fast/core/error.hpp"
#include "fast/runtime/threads/world.hpp"
#include "fast/strategy/checkpoint.hpp"
#include "fast/strategy/worker.hpp"
#include "fast/wire/frame.hpp"
#include "quadratic.hpp"

namespace fast::strategy {
namespace {

using runtime::Context;

Checkpoint sample() {
  Checkpoint c;
  c.arrays["params"] = {1.5f, -2.25f, 3.0f};
  c.arrays["optimizer.0"] = {};
  c.integers["steps"] = 42;
  c.integers["skipped_steps"] = -7;
  return c;
}

// A file's bytes with its trailing checksum recomputed (a hostile file that passes the checksum).
std::vector<std::byte> resealed(std::vector<std::byte> bytes) {
  const std::uint32_t crc = wire::checksum(std::span<const std::byte>(bytes).first(bytes.size() - 4));
  std::memcpy(bytes.data() + bytes.size() - 4, &crc, 4);
  return bytes;
}

TEST(Checkpoint, RoundTripsArraysAndIntegers) {
  const Checkpoint c = sample();
  const std::vector<std::byte> bytes = encode_checkpoint(c);
  // magic 8 + version 4 + count 4 + sections + crc 4: arrays 1+2+n+8+4k, integers 1+2+n+8+8.
  EXPECT_EQ(bytes.size(), 16 + (11 + 6 + 12) + (11 + 11) + (11 + 5 + 8) + (11 + 13 + 8) + 4u);
  const Checkpoint d = decode_checkpoint(bytes, "sample");
  EXPECT_EQ(d.arrays, c.arrays);
  EXPECT_EQ(d.integers, c.integers);
}

TEST(Checkpoint, EveryTruncationAndEveryFlippedByteIsRefused) {
  const std::vector<std::byte> bytes = encode_checkpoint(sample());
  for (std::size_t n = 0; n < bytes.size(); ++n)
    EXPECT_THROW(decode_checkpoint(std::span<const std::byte>(bytes).first(n), "cut"), core::IoError) << n;
  for (std::size_t k = 0; k < bytes.size(); ++k) {
    std::vector<std::byte> flipped = bytes;
    flipped[k] ^= std::byte{0x10};
    EXPECT_THROW(decode_checkpoint(flipped, "flipped"), core::IoError) << k;
  }
}

TEST(Checkpoint, HostileSectionsAreRefusedWithTheirReason) {
  const std::vector<std::byte> bytes = encode_checkpoint(sample());
  // The first section is the array "optimizer.0" (names sorted): kind at 16, name length at 17,
  // the name (11 bytes) at 19, the count at 30.
  auto with = [&](std::size_t at, const void* value, std::size_t size) {
    std::vector<std::byte> b = bytes;
    std::memcpy(b.data() + at, value, size);
    return resealed(b);
  };
  const std::uint64_t huge = ~std::uint64_t{0} / 2;
  fast::testing::expect_error<core::IoError>([&] { decode_checkpoint(with(30, &huge, 8), "huge"); },
                                            {"huge", "optimizer.0", "declares", "remain"});
  const std::uint8_t kind = 9;
  fast::testing::expect_error<core::IoError>([&] { decode_checkpoint(with(16, &kind, 1), "kind"); },
                                            {"kind 9", "expected 1 (array) or 2 (integer)"});
  const std::uint16_t no_name = 0;
  fast::testing::expect_error<core::IoError>([&] { decode_checkpoint(with(17, &no_name, 2), "name"); },
                                            {"name length 0"});
  const std::uint32_t version = 2;
  fast::testing::expect_error<core::IoError>([&] { decode_checkpoint(with(8, &version, 4), "v"); },
                                            {"format version 2, expected 1"});
  const std::uint32_t sections = 3;  // one section fewer than written: trailing bytes
  fast::testing::expect_error<core::IoError>([&] { decode_checkpoint(with(12, &sections, 4), "count"); },
                                            {"after the last of 3 sections"});
  const std::uint32_t more = 5;  // one more than written: the reader runs out of bytes
  fast::testing::expect_error<core::IoError>([&] { decode_checkpoint(with(12, &more, 4), "more"); },
                                            {"truncated"});
  std::vector<std::byte> garbage = bytes;
  garbage[0] = std::byte{'X'};
  fast::testing::expect_error<core::IoError>([&] { decode_checkpoint(garbage, "magic"); }, {"not a FAST checkpoint"});
}

TEST(Checkpoint, ArrayAndIntegerLookupsNameWhatIsMissingOrOfAnotherSize) {
  const Checkpoint c = sample();
  EXPECT_EQ(c.array("params", 3, "f").size(), 3u);
  fast::testing::expect_error<core::IoError>([&] { c.array("params", 4, "f"); },
                                            {"'f'", "params", "3 elements, expected 4"});
  fast::testing::expect_error<core::IoError>([&] { c.array("moments", 3, "f"); }, {"no array 'moments'"});
  fast::testing::expect_error<core::IoError>([&] { c.integer("epoch", "f"); }, {"no integer 'epoch'"});
}

class CheckpointFile : public fast::testing::TempDirTest {};

TEST_F(CheckpointFile, WritesAtomicallyAndReadsBack) {
  const auto file = dir_ / "w.ckpt";
  write_checkpoint_file(file, sample());
  EXPECT_EQ(read_checkpoint_file(file).integers.at("steps"), 42);
  // No temporary file is left beside it.
  int entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir_)) ++entries;
  EXPECT_EQ(entries, 1);
  // Overwriting replaces the whole file.
  Checkpoint other = sample();
  other.integers["steps"] = 43;
  write_checkpoint_file(file, other);
  EXPECT_EQ(read_checkpoint_file(file).integers.at("steps"), 43);
  fast::testing::expect_error<core::IoError>([&] { read_checkpoint_file(dir_ / "missing.ckpt"); },
                                            {"missing.ckpt", "cannot read"});
  fast::testing::expect_error<core::IoError>([&] { write_checkpoint_file(dir_ / "no" / "such" / "w.ckpt", sample()); },
                                            {"cannot create"});
}

// 2 workers on the quadratic with momentum and with adam: 40 steps straight, against 20 steps,
// save, a fresh Worker restored from the checkpoint, 20 more steps: the same bits.
TEST(WorkerCheckpoint, ARestoredWorkerContinuesBitForBit) {
  constexpr std::size_t kDim = 33;
  for (const char* optimizer : {"momentum", "adam"}) {
    for (const char* strategy : {"allreduce", "local-sgd", "dpsgd"}) {
      const WorkerOptions options{.strategy = {.name = strategy, .period = 3},
                                  .optimizer = {.name = optimizer, .lr = 0.05}};
      std::vector<std::vector<float>> straight(2), resumed(2);
      runtime::threads::World({.size = 2}).run([&](Context& ctx) {
        std::vector<float> x(kDim, 0.5f), g(kDim);
        Worker worker(ctx, options, {.params = x, .grads = g});
        for (int t = 0; t < 40; ++t) {
          testing::gradient(ctx.rank(), x, g);
          worker.step();
        }
        straight[ctx.rank()] = x;
      });
      runtime::threads::World({.size = 2}).run([&](Context& ctx) {
        std::vector<float> x(kDim, 0.5f), g(kDim);
        Checkpoint saved;
        {
          Worker worker(ctx, options, {.params = x, .grads = g});
          for (int t = 0; t < 20; ++t) {
            testing::gradient(ctx.rank(), x, g);
            worker.step();
          }
          saved = decode_checkpoint(encode_checkpoint(worker.save()), "memory");
        }
        std::vector<float> y(kDim, 0.0f), h(kDim);  // a fresh replica: restore() fills it
        Worker worker(ctx, options, {.params = y, .grads = h});
        worker.restore(saved, "memory");
        EXPECT_EQ(worker.steps(), 20);
        for (int t = 0; t < 20; ++t) {
          testing::gradient(ctx.rank(), y, h);
          worker.step();
        }
        resumed[ctx.rank()] = y;
      });
      EXPECT_EQ(resumed, straight) << strategy << " " << optimizer;
    }
  }
}

TEST(WorkerCheckpoint, RefusesStrategiesWithStateOfTheirOwnAndCheckpointsOfAnotherOptimizer) {
  EXPECT_EQ(resume_refusal({.name = "allreduce"}), "");
  EXPECT_EQ(resume_refusal({.name = "adpsgd"}), "");
  EXPECT_NE(resume_refusal({.name = "gosgd"}).find("gosgd"), std::string::npos);
  EXPECT_NE(resume_refusal({.name = "adpsgd", .compress = "topk:ratio=0.1"}).find("topk"), std::string::npos);
  EXPECT_NE(resume_refusal({.name = "ps", .mode = "sync"}).find("'ps'"), std::string::npos);
  EXPECT_NE(resume_refusal({.name = "allreduce", .compress = "topk:ratio=0.1"}).find("topk"), std::string::npos);
  runtime::threads::World({.size = 1}).run([&](Context& ctx) {
    std::vector<float> x(4, 1.0f), g(4, 0.0f);
    Worker sgd(ctx, {.strategy = {.name = "allreduce"}, .optimizer = {.name = "sgd"}}, {.params = x, .grads = g});
    const Checkpoint plain = sgd.save();
    Worker adam(ctx, {.strategy = {.name = "allreduce"}, .optimizer = {.name = "adam"}}, {.params = x, .grads = g});
    fast::testing::expect_error<core::IoError>([&] { adam.restore(plain, "sgd.ckpt"); },
                                              {"sgd.ckpt", "no array 'optimizer.0'"});
    std::vector<float> y(4), h(4);
    Worker async(ctx, {.strategy = {.name = "gosgd"}}, {.params = y, .grads = h});
    fast::testing::expect_error<core::InvalidUsage>([&] { (void)async.save(); }, {"gosgd"});
    async.finish();
  });
}

// adpsgd: a restored model becomes the worker's exposed x_i (what its peers average with), and a
// save after finish() holds the final model.
TEST(WorkerCheckpoint, AdpsgdRestoredModelIsWhatThePeersSee) {
  constexpr int n = 2;
  runtime::threads::World({.size = n}).run([&](Context& ctx) {
    std::vector<float> x(3, 0.0f), g(3, 0.0f);
    Worker worker(ctx, {.strategy = {.name = "adpsgd"}, .optimizer = {.name = "sgd"}}, {.params = x, .grads = g});
    Checkpoint saved;
    saved.arrays.emplace("params", std::vector<float>(3, static_cast<float>(5 + ctx.rank())));
    saved.integers = {{"optimizer.steps", 7}, {"steps", 7 + ctx.rank()}, {"skipped_steps", 0}};
    worker.restore(saved, "mem");
    EXPECT_EQ(worker.steps(), 7 + ctx.rank());
    worker.communicator().barrier();  // both restored
    std::vector<float> average(3);
    worker.snapshot(average);  // the mean of the replicas the window exposes
    EXPECT_EQ(average, std::vector<float>(3, 5.5f));
    worker.communicator().barrier();
    worker.finish();
    EXPECT_EQ(worker.save().arrays.at("params"), std::vector<float>(3, static_cast<float>(5 + ctx.rank())));
  });
}

// ps (async): a restored checkpoint puts the shard and the server's optimizer state back (what the
// workers pull), and a save after finish() holds the server's optimizer state on the server rank.
TEST(WorkerCheckpoint, PsRestoresTheServerShardAndItsOptimizer) {
  constexpr int n = 2;
  runtime::threads::World({.size = n}).run([&](Context& ctx) {
    std::vector<float> x(4, 0.0f), g(4, 0.0f);
    Worker worker(ctx, {.strategy = {.name = "ps", .mode = "async"}, .optimizer = {.name = "momentum", .momentum = 0.9}},
                  {.params = x, .grads = g});
    Checkpoint saved;
    saved.arrays.emplace("params", std::vector<float>{1, 2, 3, 4});
    saved.arrays.emplace("optimizer.0", std::vector<float>(4, 0.0f));  // the worker's own (unused by ps)
    saved.integers = {{"optimizer.steps", 0}, {"steps", 9}, {"skipped_steps", 0}};
    if (ctx.rank() == 0) {  // the one server: its momentum buffer and step count
      saved.arrays.emplace("ps.server.optimizer.0", std::vector<float>{0.5f, 0.5f, 0.5f, 0.5f});
      saved.integers.emplace("ps.server.optimizer.steps", 9);
    }
    worker.restore(saved, "mem");
    worker.communicator().barrier();
    std::vector<float> pulled(4);
    worker.snapshot(pulled);  // the server's shard
    EXPECT_EQ(pulled, (std::vector<float>{1, 2, 3, 4}));
    worker.communicator().barrier();
    worker.finish();
    const Checkpoint after = worker.save();
    EXPECT_EQ(after.arrays.at("params"), (std::vector<float>{1, 2, 3, 4}));
    EXPECT_EQ(after.arrays.contains("ps.server.optimizer.0"), ctx.rank() == 0);
    if (ctx.rank() == 0) {
      EXPECT_EQ(after.arrays.at("ps.server.optimizer.0"), std::vector<float>(4, 0.5f));
      EXPECT_EQ(after.integers.at("ps.server.optimizer.steps"), 9);
    }
  });
}

}  // namespace
}  // namespace fast::strategy
