#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "common/test_dir.hpp"
#include "fast/core/error.hpp"
#include "fast/metrics/jsonl_writer.hpp"

namespace fast::metrics {
namespace {

std::filesystem::path temp_path(const std::string& name) {
  return fast::testing::test_dir("fast_metrics_test", "files") / name;
}

TEST(JsonlWriter, ConcurrentWritersProduceWholeLines) {
  const auto path = temp_path("m.jsonl");
  {
    JsonlWriter writer(path);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        for (int i = 0; i < 250; ++i) writer.write({{"worker", t}, {"step", i}, {"pad", std::string(100, 'x')}});
      });
    for (auto& th : threads) th.join();
  }
  std::ifstream in(path);
  std::string line;
  int lines = 0;
  std::vector<int> per_worker(4, 0);
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);  // throws if a line was torn
    ++per_worker[j["worker"].get<int>()];
    ++lines;
  }
  EXPECT_EQ(lines, 1000);
  for (int c : per_worker) EXPECT_EQ(c, 250);
  std::filesystem::remove_all(path.parent_path());
}

TEST(JsonlWriter, DisabledWriterDropsRecords) {
  JsonlWriter writer;
  EXPECT_FALSE(writer.enabled());
  EXPECT_NO_THROW(writer.write({{"a", 1}}));
}

TEST(JsonlWriter, UnwritablePathIsIoErrorNamingIt) {
  try {
    JsonlWriter writer("/proc/definitely/not/here.jsonl");
    FAIL() << "no throw";
  } catch (const core::IoError& e) {
    EXPECT_NE(std::string(e.what()).find("/proc/definitely/not/here.jsonl"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fast::metrics
