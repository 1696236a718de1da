// The metrics records' schema, the per-process metrics file rule and the parameter hash.

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

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

TEST(ProcessMetricsPath, NoMetricsFileStaysNone) {
  EXPECT_TRUE(process_metrics_path("", 2, false).empty());
  EXPECT_TRUE(process_metrics_path("", 0, true).empty());
}

// Reference values: FNV-1a 64 over the little-endian bytes, computed independently (Python).
TEST(ParameterHash, IsFnv1a64OfTheParameterBytesAsSixteenHexDigits) {
  EXPECT_EQ(parameter_hash({}), "cbf29ce484222325");  // the offset basis
  const std::vector<float> one{1.0f};
  EXPECT_EQ(parameter_hash(one), "4b72477f9c5c2f98");
  const std::vector<float> two{1.0f, -2.5f};
  EXPECT_EQ(parameter_hash(two), "09e629ee2dfdb3f8");
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
