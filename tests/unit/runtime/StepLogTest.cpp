//===- tests/unit/runtime/StepLogTest.cpp - the per-step line and the trace -===//

#include "runtime/StepLog.h"
#include "runtime/Trace.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <random>

using namespace planc::runtime;

namespace {

TEST(StepLogTest, TheLineOfPlancRunWithTheTokens) {
  EXPECT_EQ(formatStepLine({0, 4.1588830, 6e-4, 0.123, 1024}), "step 0  loss 4.158883  lr 6.0000e-04  0.12 s  1024 tokens");
  EXPECT_EQ(formatStepLine({12, 0.5, std::nullopt, 3.456, 16}), "step 12  loss 0.500000  3.46 s  16 tokens");
  EXPECT_EQ(formatStepLine({1, NAN, 1.25e-2, 0, 0}), "step 1  loss nan  lr 1.2500e-02  0.00 s  0 tokens");
}

TEST(TraceTest, CompleteEventsByRankAndStream) {
  TraceWriter trace;
  trace.nameStream(0, "compute");
  trace.nameStream(1, "communication");
  trace.add({"matmul", 0, 0, 0, 12.5, "forward", {}});
  trace.add({"all_reduce", 1, 1, 3, 4, "", {{"bytes", "64"}}});
  auto doc = nlohmann::json::parse(trace.json());
  EXPECT_EQ(doc["displayTimeUnit"], "ms");
  const auto &events = doc["traceEvents"];
  // Metadata first: each rank's name, then each named stream of each rank.
  ASSERT_EQ(events.size(), 6u);
  EXPECT_EQ(events[0], nlohmann::json::parse(R"({"name":"process_name","ph":"M","pid":0,"tid":0,"args":{"name":"rank 0"}})"));
  EXPECT_EQ(events[1]["args"]["name"], "rank 1");
  EXPECT_EQ(events[2], nlohmann::json::parse(R"({"name":"thread_name","ph":"M","pid":0,"tid":0,"args":{"name":"compute"}})"));
  EXPECT_EQ(events[3]["args"]["name"], "communication");
  EXPECT_EQ(events[3]["pid"], 1);
  EXPECT_EQ(events[4], nlohmann::json::parse(
                           R"({"name":"matmul","ph":"X","pid":0,"tid":0,"ts":0.0,"dur":12.5,"cat":"forward"})"));
  EXPECT_EQ(events[5], nlohmann::json::parse(
                           R"({"name":"all_reduce","ph":"X","pid":1,"tid":1,"ts":3.0,"dur":4.0,"args":{"bytes":"64"}})"));

  std::string dir = (std::filesystem::temp_directory_path() / ("trace-test-" + std::to_string(std::random_device{}()))).string();
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(trace.write(dir + "/trace.json").ok());
  std::ifstream in(dir + "/trace.json");
  EXPECT_EQ(nlohmann::json::parse(in), doc);
  Status bad = trace.write(dir + "/absent/trace.json");
  EXPECT_EQ(bad.message().rfind("cannot write '" + dir + "/absent/trace.json': No such file", 0), 0u) << bad.message();
  std::filesystem::remove_all(dir);
}

} // namespace
