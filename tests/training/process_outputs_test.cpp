// ProcessOutputs' summary file (src/training/process_outputs.hpp): the leading process writes it
// once, before the end's barrier (publish_summary) or after the run (write_summary_file); a summary
// gathered again replaces the file's; a process that does not lead writes nothing; a write that
// fails before the barrier is left to the one after the run, which names the file.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "fast/core/error.hpp"
#include "process_outputs.hpp"

namespace fast::training {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("fast_process_outputs_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

nlohmann::json read_json(const fs::path& file) {
  std::ifstream in(file);
  return nlohmann::json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
}

// Opens `outputs` as the process of ranks 0.. (leads) or 2.. of a world of several processes.
void open(ProcessOutputs& outputs, const fs::path& dir, bool leads) {
  outputs.open(dir / "m.jsonl", leads ? 0 : 2, false, leads, metrics::StartRecord{});
}

TEST(ProcessOutputsSummary, PublishedOnceAndNotWrittenAgainAfterTheRun) {
  const fs::path dir = fresh_dir("once");
  ProcessOutputs outputs(nullptr, nullptr);
  open(outputs, dir, true);
  outputs.publish_summary(dir / "s.json", {{"steps", 1}});
  EXPECT_EQ(read_json(dir / "s.json")["steps"], 1);
  // A summary gathered again (a loss after the first gathering) replaces the file's.
  outputs.publish_summary(dir / "s.json", {{"steps", 2}});
  EXPECT_EQ(read_json(dir / "s.json")["steps"], 2);
  EXPECT_EQ(outputs.summary().value()["steps"], 2);
  // After the run: written already, so left as it is (the argument would differ only in a bug).
  EXPECT_FALSE(outputs.write_summary_file(dir / "s.json", {{"steps", 3}}));
  EXPECT_EQ(read_json(dir / "s.json")["steps"], 2);
  fs::remove_all(dir);
}

TEST(ProcessOutputsSummary, WrittenAfterTheRunWhenNotPublished) {
  const fs::path dir = fresh_dir("after");
  ProcessOutputs outputs(nullptr, nullptr);
  open(outputs, dir, true);
  EXPECT_TRUE(outputs.write_summary_file(dir / "s.json", {{"steps", 5}}));
  EXPECT_EQ(read_json(dir / "s.json")["steps"], 5);
  EXPECT_FALSE(outputs.write_summary_file("", {{"steps", 5}}));  // no --summary
  fs::remove_all(dir);
}

TEST(ProcessOutputsSummary, AProcessThatDoesNotLeadWritesNothing) {
  const fs::path dir = fresh_dir("follower");
  ProcessOutputs outputs(nullptr, nullptr);
  open(outputs, dir, false);
  outputs.publish_summary(dir / "s.json", {{"steps", 1}});
  EXPECT_FALSE(outputs.write_summary_file(dir / "s.json", {{"steps", 1}}));
  EXPECT_FALSE(fs::exists(dir / "s.json"));
  // It leads from now on (an elastic group lost worker 0): the write after the run is its own.
  outputs.set_lead(true);
  EXPECT_TRUE(outputs.write_summary_file(dir / "s.json", {{"steps", 1}}));
  EXPECT_EQ(read_json(dir / "s.json")["steps"], 1);
  fs::remove_all(dir);
}

TEST(ProcessOutputsSummary, AFailedPublishIsLeftToTheWriteAfterTheRunWhichNamesTheFile) {
  const fs::path dir = fresh_dir("failed");
  ProcessOutputs outputs(nullptr, nullptr);
  open(outputs, dir, true);
  std::ofstream(dir / "taken") << "a file where the summary's folder should be\n";
  const fs::path file = dir / "taken" / "s.json";
  outputs.publish_summary(file, {{"steps", 1}});  // logged at debug level, not thrown
  try {
    outputs.write_summary_file(file, {{"steps", 1}});
    ADD_FAILURE() << "expected an IoError";
  } catch (const core::IoError& e) {
    EXPECT_NE(std::string(e.what()).find("s.json"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fast::training
