// The metrics records' schema, the per-process metrics file rule and the parameter hash.

#include <gtest/gtest.h>

#define XXH_INLINE_ALL
#define XXH_VECTOR XXH_SCALAR  // the reference: no vector unit
#include <xxhash.h>

#include <cmath>
#include <vector>

#include <unistd.h>

#include "fast/metrics/records.hpp"

namespace fast::metrics {
namespace {

TEST(ProcessMetricsPath, WholeWorldInOneProcessWritesTheGivenPath) {
  EXPECT_EQ(process_metrics_path("out/m.jsonl", 0, true), std::filesystem::path("out/m.jsonl"));
  EXPECT_EQ(process_metrics_path("m.jsonl", 0, true), std::filesystem::path("m.jsonl"));
}

TEST(ProcessMetricsPath, EachProcessOfSeveralWritesStemRankOfItsFirstWorker) {
  EXPECT_EQ(process_metrics_path("out/m.jsonl", 0, false), std::filesystem::path("out/m.rank0.jsonl"));
  EXPECT_EQ(process_metrics_path("out/m.jsonl", 4, false), std::filesystem::path("out/m.rank4.jsonl"));
  EXPECT_EQ(process_metrics_path("/tmp/run.v2.jsonl", 12, false), std::filesystem::path("/tmp/run.v2.rank12.jsonl"));
  EXPECT_EQ(process_metrics_path("metrics", 3, false), std::filesystem::path("metrics.rank3"));
}

TEST(ProcessMetricsPath, ADeviceOrPipeIsWrittenAsGivenByEveryProcess) {
  EXPECT_EQ(process_metrics_path("/dev/null", 2, false), std::filesystem::path("/dev/null"));
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const std::string pipe_end = "/proc/self/fd/" + std::to_string(fds[1]);  // what /dev/stdout names on a pipe
  EXPECT_EQ(process_metrics_path(pipe_end, 1, false), std::filesystem::path(pipe_end));
  ::close(fds[0]);
  ::close(fds[1]);
  // A folder is not a file to write: the suffix stays (and the check of the outputs refuses it).
  EXPECT_EQ(process_metrics_path("/tmp", 1, false), std::filesystem::path("/tmp.rank1"));
}

TEST(ProcessMetricsPath, RunMetricsStemUndoesTheRankSuffix) {
  for (int rank : {0, 4, 12})
    for (const char* metrics : {"out/m.jsonl", "/tmp/run.v2.jsonl"})
      EXPECT_EQ(run_metrics_stem(process_metrics_path(metrics, rank, false)),
                std::filesystem::path(metrics).stem().string());
  EXPECT_EQ(run_metrics_stem("out/m.jsonl"), "m");
  EXPECT_EQ(run_metrics_stem("out/m.ranking.jsonl"), "m.ranking");  // not a rank suffix
  EXPECT_EQ(run_metrics_stem("out/m.rank.jsonl"), "m.rank");
}

TEST(ProcessMetricsPath, NoMetricsFileStaysNone) {
  EXPECT_TRUE(process_metrics_path("", 2, false).empty());
  EXPECT_TRUE(process_metrics_path("", 0, true).empty());
}

// Reference values: xxHash's portable scalar code, compiled here on its own, over the
// little-endian bytes; the empty input's hash as xxHash publishes it.
TEST(ParameterHash, IsXxh3Of64BitsOfTheParameterBytesAsSixteenHexDigits) {
  EXPECT_EQ(parameter_hash({}), "2d06800538d394c2");
  const std::vector<float> one{1.0f};
  const unsigned char one_bytes[] = {0x00, 0x00, 0x80, 0x3f};  // 1.0f, little-endian
  EXPECT_EQ(parameter_hash64(one), XXH3_64bits(one_bytes, sizeof one_bytes));
  EXPECT_EQ(parameter_hash(one), hex64(XXH3_64bits(one_bytes, sizeof one_bytes)));
  const unsigned char two_bytes[] = {0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x20, 0xc0};  // 1.0f, -2.5f
  const std::vector<float> two{1.0f, -2.5f};
  EXPECT_EQ(parameter_hash64(two), XXH3_64bits(two_bytes, sizeof two_bytes));
  std::vector<float> many(100003);  // past XXH3's 240-byte short path and its 1 KiB blocks
  for (std::size_t i = 0; i < many.size(); ++i) many[i] = static_cast<float>(i) * 0.37f - 11.0f;
  EXPECT_EQ(parameter_hash64(many), XXH3_64bits(many.data(), many.size() * sizeof(float)));
  EXPECT_EQ(hex64(0x1f), "000000000000001f");
}

TEST(ParameterHash, ChangesWithOneBitOfOneParameter) {
  std::vector<float> a{0.5f, 0.25f, 3.0f};
  const std::string before = parameter_hash(a);
  a[1] = std::nextafter(a[1], 1.0f);
  EXPECT_NE(parameter_hash(a), before);
  const std::vector<float> zero{0.0f}, negative_zero{-0.0f};
  EXPECT_NE(parameter_hash(zero), parameter_hash(negative_zero));  // bits, not values
}

TEST(Records, EvalRecordHasReplicaFieldsOnlyWhenMeasured) {
  EvalRecord r{.time = 1.5, .epoch = 0.5, .step = 10, .worker = 2, .accuracy = 0.8, .loss = 0.6, .samples = 10000};
  nlohmann::json j = to_json(r);
  EXPECT_EQ(j["event"], "eval");
  EXPECT_EQ(j["worker"], 2);
  EXPECT_EQ(j["step"], 10);
  EXPECT_FALSE(j.contains("replica_accuracy_min"));
  r.replica_accuracy_min = 0.7;
  r.replica_accuracy_max = 0.9;
  r.representative_rank = 1;
  j = to_json(r);
  EXPECT_EQ(j["replica_accuracy_min"], 0.7);
  EXPECT_EQ(j["replica_accuracy_max"], 0.9);
  EXPECT_EQ(j["representative_rank"], 1);
}

TEST(Records, TrainAndStartRecordsNameTheirEvent) {
  EXPECT_EQ(to_json(TrainRecord{.worker = 1, .step = 50, .samples = 3200})["event"], "train");
  EXPECT_EQ(to_json(TrainRecord{.worker = 1, .step = 50, .samples = 3200})["samples"], 3200);
  const nlohmann::json start = to_json(StartRecord{.strategy = "allreduce", .workers = 4});
  EXPECT_EQ(start["event"], "start");
  EXPECT_EQ(start["time"], 0.0);
  EXPECT_EQ(start["workers"], 4);
  const nlohmann::json end = end_record(2.5, {{"final_accuracy", 0.8}});
  EXPECT_EQ(end["event"], "end");
  EXPECT_EQ(end["time"], 2.5);
  EXPECT_EQ(end["final_accuracy"], 0.8);
}

}  // namespace
}  // namespace fast::metrics
