// strategy::Checkpoint's file format (round trip, every truncation, corruption, hostile counts) and
// Worker::save/restore: a worker restored from a checkpoint continues bit for bit as the one that
// saved it would have.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <functional>
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

// sample() with a float64 array: "residual" sorts after the float32 arrays, before the integers.
Checkpoint with_doubles() {
  Checkpoint c = sample();
  c.doubles["residual"] = {0.1, -1e-300, 3.0};
  return c;
}

// A file's bytes with its trailing checksum recomputed (a hostile file that passes the checksum).
std::vector<std::byte> resealed(std::vector<std::byte> bytes) {
  const std::uint32_t crc = wire::crc32(std::span<const std::byte>(bytes).first(bytes.size() - 4));
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
  EXPECT_TRUE(d.doubles.empty());
}

TEST(Checkpoint, RoundTripsFloat64ArraysBitForBit) {
  const Checkpoint c = with_doubles();
  const std::vector<std::byte> bytes = encode_checkpoint(c);
  // sample()'s bytes plus one f64 section: 1 + 2 + 8 ("residual") + 8 + 3 x 8.
  EXPECT_EQ(bytes.size(), encode_checkpoint(sample()).size() + 43u);
  const Checkpoint d = decode_checkpoint(bytes, "doubles");
  EXPECT_EQ(d.doubles, c.doubles);
  EXPECT_EQ(d.arrays, c.arrays);
  EXPECT_EQ(d.double_array("residual", 3, "f")[1], -1e-300);
  fast::testing::expect_error<core::IoError>([&] { d.double_array("residual", 2, "f"); },
                                             {"float64 array 'residual' has 3 elements, expected 2"});
  fast::testing::expect_error<core::IoError>([&] { d.double_array("params", 3, "f"); }, {"no float64 array 'params'"});
  EXPECT_TRUE(d.keyed_doubles("params.", "", "f").empty());
  Checkpoint keyed;
  keyed.doubles["r.7.residual"] = {1.0};
  keyed.doubles["r.12.residual"] = {2.0, 3.0};
  const auto by_key = keyed.keyed_doubles("r.", ".residual", "f");
  ASSERT_EQ(by_key.size(), 2u);
  EXPECT_EQ(*by_key.at(7), std::vector<double>{1.0});
  EXPECT_EQ(by_key.at(12)->size(), 2u);
  keyed.doubles["r.x.residual"] = {0.0};
  fast::testing::expect_error<core::IoError>([&] { (void)keyed.keyed_doubles("r.", ".residual", "f"); },
                                             {"'r.x.residual' is not named r.<key>.residual"});
  for (std::size_t n = 0; n < bytes.size(); ++n)
    EXPECT_THROW(decode_checkpoint(std::span<const std::byte>(bytes).first(n), "cut"), core::IoError) << n;
}

// Files written before float64 arrays existed (version 1) still read; a version 1 file cannot hold
// kind 3.
TEST(Checkpoint, ReadsVersionOneFilesWhichHaveNoFloat64Arrays) {
  auto as_version_one = [](std::vector<std::byte> bytes) {
    const std::uint32_t one = 1;
    std::memcpy(bytes.data() + 8, &one, 4);
    return resealed(bytes);
  };
  const Checkpoint d = decode_checkpoint(as_version_one(encode_checkpoint(sample())), "v1");
  EXPECT_EQ(d.arrays, sample().arrays);
  EXPECT_EQ(d.integers, sample().integers);
  fast::testing::expect_error<core::IoError>(
      [&] { decode_checkpoint(as_version_one(encode_checkpoint(with_doubles())), "v1"); },
      {"kind 3", "expected 1 (array), 2 (integer)"});
}

// sample() with the texts a CheckpointStore adds (the run's identity).
Checkpoint with_texts() {
  Checkpoint c = sample();
  c.texts["run"] = R"({"seed":2})";
  c.texts["a"] = "";
  return c;
}

// Texts round-trip, come first (after the 16-byte header: kind 4, name length 1, "a", count 0),
// and read_checkpoint_texts reads them alone; a version 2 file cannot hold kind 4.
TEST(Checkpoint, RoundTripsTextsWhichComeFirst) {
  const std::vector<std::byte> bytes = encode_checkpoint(with_texts());
  EXPECT_EQ(bytes[16], std::byte{4});
  EXPECT_EQ(bytes[19], std::byte{'a'});
  const Checkpoint d = decode_checkpoint(bytes, "texts");
  EXPECT_EQ(d.texts, with_texts().texts);
  EXPECT_EQ(d.arrays, sample().arrays);
  std::vector<std::byte> as_two = bytes;
  const std::uint32_t two = 2;
  std::memcpy(as_two.data() + 8, &two, 4);
  fast::testing::expect_error<core::IoError>([&] { decode_checkpoint(resealed(as_two), "v2"); },
                                             {"kind 4", "expected 1 (array), 2 (integer) or 3 (float64 array)"});
  for (std::size_t n = 0; n < bytes.size(); ++n)
    EXPECT_THROW(decode_checkpoint(std::span<const std::byte>(bytes).first(n), "cut"), core::IoError) << n;
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
  // A file cut short is named so, with its size; a changed value (the byte before the CRC-32) is not.
  const std::size_t half = bytes.size() / 2;
  fast::testing::expect_error<core::IoError>(
      [&] { decode_checkpoint(std::span<const std::byte>(bytes).first(half), "cut"); },
      {"checkpoint 'cut': truncated: " + std::to_string(half) + " bytes", "run past the end at section"});
  std::vector<std::byte> changed = bytes;
  changed[bytes.size() - 5] ^= std::byte{0x01};
  fast::testing::expect_error<core::IoError>([&] { decode_checkpoint(changed, "changed"); },
                                             {"checkpoint 'changed': checksum", "does not match"});
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
  fast::testing::expect_error<core::IoError>(
      [&] { decode_checkpoint(with(16, &kind, 1), "kind"); },
      {"kind 9", "expected 1 (array), 2 (integer), 3 (float64 array) or 4 (text)"});
  const std::uint16_t no_name = 0;
  fast::testing::expect_error<core::IoError>([&] { decode_checkpoint(with(17, &no_name, 2), "name"); },
                                             {"name length 0"});
  const std::uint32_t version = 4;
  fast::testing::expect_error<core::IoError>([&] { decode_checkpoint(with(8, &version, 4), "v"); },
                                             {"format version 4, expected 1 to 3"});
  const std::uint32_t zero = 0;
  fast::testing::expect_error<core::IoError>([&] { decode_checkpoint(with(8, &zero, 4), "v"); },
                                             {"format version 0, expected 1 to 3"});
  const std::uint32_t sections = 3;  // one section fewer than written: trailing bytes
  fast::testing::expect_error<core::IoError>([&] { decode_checkpoint(with(12, &sections, 4), "count"); },
                                             {"after the last of 3 sections"});
  const std::uint32_t more = 5;  // one more than written: the reader runs out of bytes
  fast::testing::expect_error<core::IoError>([&] { decode_checkpoint(with(12, &more, 4), "more"); }, {"truncated"});
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
  EXPECT_EQ(c.integer("steps", 0, 42, "f"), 42);
  fast::testing::expect_error<core::IoError>([&] { c.integer("skipped_steps", 0, 42, "f"); },
                                             {"'skipped_steps' is -7, expected 0 to 42"});
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

// read_checkpoint_texts reads the texts of a file without the rest: the same texts from a file cut
// right after them (whose checksum read_checkpoint_file refuses), none from a file without texts.
TEST_F(CheckpointFile, TextsAreReadFromTheFirstBytesAlone) {
  const auto file = dir_ / "w.ckpt";
  write_checkpoint_file(file, with_texts());
  EXPECT_EQ(read_checkpoint_texts(file), with_texts().texts);
  const std::vector<std::byte> bytes = encode_checkpoint(with_texts());
  const std::size_t texts_end = 16 + (11 + 1) + (11 + 3 + 10);  // "a" (empty), then "run"
  std::ofstream(file, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(texts_end));
  EXPECT_EQ(read_checkpoint_texts(file), with_texts().texts);
  EXPECT_THROW(read_checkpoint_file(file), core::IoError);
  std::ofstream(file, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(texts_end - 1));
  fast::testing::expect_error<core::IoError>([&] { read_checkpoint_texts(file); }, {"w.ckpt", "truncated"});
  write_checkpoint_file(file, sample());
  EXPECT_TRUE(read_checkpoint_texts(file).empty());
}

// The replicas of 2 workers on the quadratic after 40 steps straight, and after 20 steps, save, a
// fresh Worker restored from the checkpoint (through the file format, after `edit`), 20 more.
struct SplitRun {
  std::vector<std::vector<float>> straight, resumed;
};

SplitRun split_run(const WorkerOptions& options, const core::Layout& layout = {},
                   const std::function<void(Checkpoint&)>& edit = {}) {
  constexpr std::size_t kDim = 33;
  SplitRun out{.straight = std::vector<std::vector<float>>(2), .resumed = std::vector<std::vector<float>>(2)};
  runtime::threads::World({.size = 2}).run([&](Context& ctx) {
    std::vector<float> x(kDim, 0.5f), g(kDim);
    Worker worker(ctx, options, {.params = x, .grads = g, .layout = layout});
    for (int t = 0; t < 40; ++t) {
      testing::gradient(ctx.rank(), x, g);
      worker.step();
    }
    out.straight[ctx.rank()] = x;
  });
  runtime::threads::World({.size = 2}).run([&](Context& ctx) {
    std::vector<float> x(kDim, 0.5f), g(kDim);
    Checkpoint saved;
    {
      Worker worker(ctx, options, {.params = x, .grads = g, .layout = layout});
      for (int t = 0; t < 20; ++t) {
        testing::gradient(ctx.rank(), x, g);
        worker.step();
      }
      saved = decode_checkpoint(encode_checkpoint(worker.save()), "memory");
    }
    if (edit) edit(saved);
    std::vector<float> y(kDim, 0.0f), h(kDim);  // a fresh replica: restore() fills it
    Worker worker(ctx, options, {.params = y, .grads = h, .layout = layout});
    worker.restore(saved, "memory");
    EXPECT_EQ(worker.steps(), 20);
    for (int t = 0; t < 20; ++t) {
      testing::gradient(ctx.rank(), y, h);
      worker.step();
    }
    out.resumed[ctx.rank()] = y;
  });
  return out;
}

// With momentum and with adam: the same bits (ps in mode sync: its server's optimizer state too,
// saved between two lockstep steps).
TEST(WorkerCheckpoint, ARestoredWorkerContinuesBitForBit) {
  for (const char* optimizer : {"momentum", "adam"}) {
    for (const char* strategy : {"allreduce", "local-sgd", "dpsgd", "ps"}) {
      const SplitRun run = split_run(
          {.strategy = {.name = strategy, .period = 3, .mode = "sync"}, .optimizer = {.name = optimizer, .lr = 0.05}});
      EXPECT_EQ(run.resumed, run.straight) << strategy << " " << optimizer;
    }
  }
}

// Every codec under allreduce and local-sgd, some under dpsgd (CHOCO), and allreduce's DGC (its
// warm-up crossing the save): error-feedback residuals, random streams, PowerSGD's Q, CHOCO's
// public copies, DGC's velocity come back, so the resumed run has the same bits. With the saved
// residuals and copies zeroed the same resume ends elsewhere: the test sees the state it checks.
TEST(WorkerCheckpoint, ARestoredWorkerWithACodecContinuesBitForBit) {
  // 33 parameters: a 4 x 8 matrix (PowerSGD compresses it) and one dense element.
  const core::Layout layout{{.offset = 0, .numel = 32, .rows = 4, .shape = {4, 8}, .name = "w"},
                            {.offset = 32, .numel = 1, .rows = 1, .shape = {1}, .name = "b"}};
  struct Case {
    const char* strategy;
    const char* compress;
    bool dgc = false;
    std::int64_t servers = 1;  // ps
  };
  for (const Case& c :
       {Case{"allreduce", "fp16"}, Case{"allreduce", "bf16"}, Case{"allreduce", "int8"}, Case{"allreduce", "sign"},
        Case{"allreduce", "topk:ratio=0.2"}, Case{"allreduce", "randk:ratio=0.2"},
        Case{"allreduce", "threshold:value=0.05"}, Case{"allreduce", "powersgd:rank=1"},
        Case{"allreduce", "topk:ratio=0.2", true}, Case{"local-sgd", "int8"}, Case{"local-sgd", "randk:ratio=0.3"},
        Case{"local-sgd", "powersgd:rank=1"}, Case{"dpsgd", "int8"}, Case{"dpsgd", "topk:ratio=0.2"},
        Case{"dpsgd", "powersgd:rank=1"}, Case{"ps", "int8", false, 2}, Case{"ps", "randk:ratio=0.3"},
        Case{"ps", "powersgd:rank=1"}, Case{"ps", "topk:ratio=0.2", true, 2}}) {
    const WorkerOptions options{.strategy = {.name = c.strategy,
                                             .period = 3,
                                             .mode = "sync",
                                             .servers = c.servers,
                                             .compress = c.compress,
                                             .dgc = c.dgc,
                                             .dgc_warmup_steps = 30},
                                .optimizer = {.name = "momentum", .lr = 0.05}};
    const std::string label = fmt::format("{} {}{}", c.strategy, c.compress, c.dgc ? " dgc" : "");
    const SplitRun run = split_run(options, layout);
    EXPECT_EQ(run.resumed, run.straight) << label;
    // The residuals (float64) and CHOCO's copies (".reference") zeroed: what a resume without them has.
    const SplitRun stripped = split_run(options, layout, [](Checkpoint& saved) {
      for (auto& [name, values] : saved.doubles) std::fill(values.begin(), values.end(), 0.0);
      for (auto& [name, values] : saved.arrays)
        if (name.ends_with(".reference")) std::fill(values.begin(), values.end(), 0.0f);
    });
    EXPECT_EQ(stripped.straight, run.straight) << label;
    EXPECT_NE(stripped.resumed, run.straight) << label << ": the codec's saved state made no difference";
  }
}

// ps in mode sync with DGC on two servers: each server saves the rounds it closed (they set its
// replies' density), its shard and its replies' links; a worker restored from a checkpoint saves
// the same checkpoint again.
TEST(WorkerCheckpoint, PsServersSaveTheirRoundsShardsAndReplyLinks) {
  const WorkerOptions options{.strategy = {.name = "ps",
                                           .mode = "sync",
                                           .servers = 2,
                                           .compress = "topk:ratio=0.2",
                                           .dgc = true,
                                           .dgc_warmup_steps = 30},
                              .optimizer = {.name = "momentum", .lr = 0.05}};
  runtime::threads::World({.size = 2}).run([&](Context& ctx) {
    std::vector<float> x(33, 0.5f), g(33);
    Checkpoint saved;
    {
      Worker worker(ctx, options, {.params = x, .grads = g});
      for (int t = 0; t < 7; ++t) {
        testing::gradient(ctx.rank(), x, g);
        worker.step();
      }
      saved = decode_checkpoint(encode_checkpoint(worker.save()), "memory");
    }
    EXPECT_EQ(saved.integers.at("ps.server.rounds"), 7);
    EXPECT_EQ(saved.arrays.at("ps.server.shard").size(), ctx.rank() == 0 ? 17u : 16u);
    for (const char* name : {"ps.server.reply.0.reference", "ps.server.reply.1.reference", "ps.reply.0.reference",
                             "ps.reply.1.reference", "ps.dgc.velocity"})
      EXPECT_TRUE(saved.arrays.contains(name) || saved.doubles.contains(name)) << name;
    std::vector<float> y(33, 0.0f), h(33);
    Worker worker(ctx, options, {.params = y, .grads = h});
    worker.restore(saved, "memory");
    const Checkpoint again = worker.save();
    EXPECT_EQ(again.arrays, saved.arrays);
    EXPECT_EQ(again.doubles, saved.doubles);
    EXPECT_EQ(again.integers, saved.integers);
  });
}

// ps in mode async: a checkpoint between two steps is refused on every worker (the servers apply
// gradients and the window serves reads meanwhile); after finish() it is taken.
TEST(WorkerCheckpoint, PsAsyncRefusesACheckpointBeforeFinish) {
  runtime::threads::World({.size = 2}).run([&](Context& ctx) {
    std::vector<float> x(9, 0.5f), g(9);
    Worker worker(ctx, {.strategy = {.name = "ps", .mode = "async", .compress = "int8"}}, {.params = x, .grads = g});
    testing::gradient(ctx.rank(), x, g);
    worker.step();
    fast::testing::expect_error<core::InvalidUsage>([&] { (void)worker.save(); }, {"after finish()"});
    worker.finish();
    EXPECT_TRUE(worker.save().doubles.contains("ps.push.0.residual.0"));
  });
}

TEST(WorkerCheckpoint, RefusesRejoinsOfStrategiesWithStateOfTheirOwnAndCheckpointsOfAnotherOptimizer) {
  for (const char* name : {"adpsgd", "acid", "easgd", "gosgd", "ps"})
    EXPECT_EQ(rejoin_refusal({.name = name}), "") << name;
  EXPECT_EQ(rejoin_refusal({.name = "ps", .mode = "ssp"}), "");
  EXPECT_EQ(rejoin_refusal({.name = "ps", .servers = 2}, 2), "");
  // A server rank too: its shard moved to a survivor, and the new process serves nothing.
  EXPECT_EQ(rejoin_refusal({.name = "ps", .servers = 2}, 1), "");
  EXPECT_NE(rejoin_refusal({.name = "ps", .dgc = true}, 1).find("dgc = true keeps a residual per server"),
            std::string::npos);
  EXPECT_NE(rejoin_refusal({.name = "ps", .mode = "sync"}).find("strategy 'ps' with mode = sync is synchronous"),
            std::string::npos);
  // The list comes from the registrations' traits.
  EXPECT_NE(rejoin_refusal({.name = "allreduce"})
                .find("rejoining supports ps with mode = async or ssp, easgd, adpsgd, gosgd and acid"),
            std::string::npos)
      << rejoin_refusal({.name = "allreduce"});
  for (const char* name : {"allreduce", "dpsgd", "local-sgd"})
    EXPECT_NE(rejoin_refusal({.name = name}).find("strategy '" + std::string(name) + "' is synchronous"),
              std::string::npos)
        << name;
  EXPECT_NE(rejoin_refusal({.name = "acid", .compress = "int8"}).find("compress = 'int8'"), std::string::npos);
  runtime::threads::World({.size = 1}).run([&](Context& ctx) {
    std::vector<float> x(4, 1.0f), g(4, 0.0f);
    Worker sgd(ctx, {.strategy = {.name = "allreduce"}, .optimizer = {.name = "sgd"}}, {.params = x, .grads = g});
    const Checkpoint plain = sgd.save();
    Worker adam(ctx, {.strategy = {.name = "allreduce"}, .optimizer = {.name = "adam"}}, {.params = x, .grads = g});
    fast::testing::expect_error<core::IoError>([&] { adam.restore(plain, "sgd.ckpt"); },
                                               {"sgd.ckpt", "no array 'optimizer.0'"});
  });
}

// gosgd, acid, easgd, adpsgd and ps (mode async) (taken after finish(), as `fast train` does),
// without and with a codec: 3 workers train 30 steps and finish; a fresh worker restored from each one's checkpoint,
// finished at once, holds the same state: saving it again gives the same checkpoint (gosgd's
// numerator and mass, acid's x~, easgd's centre on worker 0, the parameters, and with a codec
// every window link's residuals, references and codec streams), and the representative model is
// the saved run's.
TEST(WorkerCheckpoint, AsynchronousStrategiesRestoreTheirOwnState) {
  constexpr int n = 3;
  constexpr std::size_t kDim = 9;
  for (const char* compress : {"none", "int8", "topk:ratio=0.3"})
    for (const char* strategy : {"gosgd", "acid", "easgd", "adpsgd", "ps"}) {
      const WorkerOptions options{.strategy = {.name = strategy, .tau = 2, .compress = compress},
                                  .optimizer = {.name = "momentum", .lr = 0.05}};
      std::vector<Checkpoint> saved(n), again(n);
      std::vector<std::vector<float>> before(n), after(n);
      runtime::threads::World({.size = n}).run([&](Context& ctx) {
        std::vector<float> x(kDim, 0.5f), g(kDim);
        Worker worker(ctx, options, {.params = x, .grads = g});
        for (int t = 0; t < 30; ++t) {
          testing::gradient(ctx.rank(), x, g);
          worker.step();
        }
        worker.finish();
        saved[ctx.rank()] = decode_checkpoint(encode_checkpoint(worker.save()), "memory");
        before[ctx.rank()].resize(kDim);
        worker.representative(before[ctx.rank()]);
      });
      runtime::threads::World({.size = n}).run([&](Context& ctx) {
        std::vector<float> y(kDim, 0.0f), h(kDim);
        Worker worker(ctx, options, {.params = y, .grads = h});
        worker.restore(saved[ctx.rank()], "memory");
        worker.communicator().barrier();  // every worker restored
        worker.finish();
        again[ctx.rank()] = worker.save();
        after[ctx.rank()].resize(kDim);
        worker.representative(after[ctx.rank()]);
      });
      for (int r = 0; r < n; ++r) {
        EXPECT_EQ(again[r].arrays, saved[r].arrays) << strategy << " " << compress << " worker " << r;
        EXPECT_EQ(again[r].doubles, saved[r].doubles) << strategy << " " << compress << " worker " << r;
        EXPECT_EQ(again[r].integers, saved[r].integers) << strategy << " " << compress << " worker " << r;
        EXPECT_EQ(after[r], before[r]) << strategy << " " << compress << " worker " << r;
      }
      // What each strategy saved of its own (besides the parameters and the optimizer), and with a
      // codec the links of its window, for its requests or its service's answers (30 steps of
      // exchanges made some on every worker; easgd's worker 0 only answers).
      const std::string name = strategy;
      const std::string own = name == "gosgd"  ? "gosgd.numerator"
                              : name == "acid" ? "acid.x_tilde"
                              : name == "ps"   ? "ps.server.optimizer.0"
                                               : "easgd.centre";
      if (name != "adpsgd") {
        EXPECT_TRUE(saved[0].arrays.contains(own) || saved[0].doubles.contains(own)) << strategy;
      }
      const bool codec = std::string(compress) != "none";
      for (int r = 0; r < n; ++r) {
        std::int64_t links = 0;
        for (const char* side : {".window.requests.links", ".window.service.links"})
          if (const auto it = saved[r].integers.find(name + side); it != saved[r].integers.end()) links += it->second;
        EXPECT_EQ(links > 0, codec) << strategy << " " << compress << " " << r;
        // ps: the error feedback of every push to the one server.
        if (name == "ps" && codec) {
          EXPECT_TRUE(saved[r].doubles.contains("ps.push.0.residual.0")) << compress << " " << r;
        }
      }
    }
  // gosgd's mass is checked: a checkpoint with a mass of 0 is refused, naming it.
  runtime::threads::World({.size = 1}).run([&](Context& ctx) {
    std::vector<float> x(kDim, 0.5f), g(kDim);
    Worker worker(ctx, {.strategy = {.name = "gosgd"}}, {.params = x, .grads = g});
    worker.finish();
    Checkpoint bad = worker.save();
    bad.doubles["gosgd.mass"] = {0.0};
    std::vector<float> y(kDim), h(kDim);
    Worker fresh(ctx, {.strategy = {.name = "gosgd"}}, {.params = y, .grads = h});
    fast::testing::expect_error<core::IoError>([&] { fresh.restore(bad, "m.ckpt"); },
                                               {"m.ckpt", "gosgd.mass is 0, expected a finite number > 0"});
    fresh.finish();
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
// A ps worker's file of 4 parameters 1..4 after 9 steps (its own optimizer's buffer unused by ps).
Checkpoint ps_worker_file() {
  Checkpoint saved;
  saved.arrays.emplace("params", std::vector<float>{1, 2, 3, 4});
  saved.arrays.emplace("optimizer.0", std::vector<float>(4, 0.0f));
  saved.integers = {{"optimizer.steps", 0}, {"steps", 9}, {"skipped_steps", 0}};
  return saved;
}

// `saved` with the one server's optimizer state (a momentum buffer of 0.5 and 9 steps).
Checkpoint saved_with_server(Checkpoint saved) {
  saved.arrays.emplace("ps.server.optimizer.0", std::vector<float>{0.5f, 0.5f, 0.5f, 0.5f});
  saved.integers.emplace("ps.server.optimizer.steps", 9);
  return saved;
}

TEST(WorkerCheckpoint, PsRestoresTheServerShardAndItsOptimizer) {
  constexpr int n = 2;
  runtime::threads::World({.size = n}).run([&](Context& ctx) {
    std::vector<float> x(4, 0.0f), g(4, 0.0f);
    Worker worker(ctx,
                  {.strategy = {.name = "ps", .mode = "async"}, .optimizer = {.name = "momentum", .momentum = 0.9}},
                  {.params = x, .grads = g});
    worker.restore(ctx.rank() == 0 ? saved_with_server(ps_worker_file()) : ps_worker_file(), "mem");
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

// A server rank's file written by a new process after the shard moved to a survivor holds no server
// state, only the mark "ps.server.away" (docs/faults.md, "A lost ps server"): the resume starts
// the shard from that file's parameters with a fresh optimizer. Without the mark the missing
// optimizer state is an error naming the file.
TEST(WorkerCheckpoint, PsServerRankWhoseShardWasAwayStartsItFromItsParametersWithAFreshOptimizer) {
  constexpr int n = 2;
  for (const bool away : {true, false}) {
    runtime::threads::World({.size = n}).run([&](Context& ctx) {
      std::vector<float> x(4, 0.0f), g(4, 0.0f);
      Worker worker(ctx,
                    {.strategy = {.name = "ps", .mode = "async"}, .optimizer = {.name = "momentum", .momentum = 0.9}},
                    {.params = x, .grads = g});
      Checkpoint saved = ps_worker_file();
      if (ctx.rank() == 0 && away) saved.integers.emplace("ps.server.away", 1);
      if (ctx.rank() == 0 && !away) {
        EXPECT_THROW(
            try { worker.restore(saved, "mem"); } catch (const core::IoError& e) {
              EXPECT_NE(std::string(e.what()).find("mem"), std::string::npos) << e.what();
              throw;
            },
            core::IoError);
        worker.restore(saved_with_server(saved), "mem");
      } else {
        worker.restore(saved, "mem");
      }
      worker.communicator().barrier();
      std::vector<float> pulled(4);
      worker.snapshot(pulled);
      EXPECT_EQ(pulled, (std::vector<float>{1, 2, 3, 4}));
      worker.communicator().barrier();
      worker.finish();
      if (ctx.rank() == 0 && away) {
        const Checkpoint after = worker.save();
        EXPECT_EQ(after.arrays.at("ps.server.optimizer.0"), std::vector<float>(4, 0.0f));
        EXPECT_EQ(after.integers.at("ps.server.optimizer.steps"), 0);
        EXPECT_FALSE(after.integers.contains("ps.server.away"));
      }
    });
  }
}

}  // namespace
}  // namespace fast::strategy
