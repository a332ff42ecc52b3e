//===- tests/unit/runtime/CheckpointTest.cpp - what a checkpoint proves -----===//
//
// docs/checkpoints.md, "What is verified" and "Retention": a checkpoint
// round-trips; every one-byte change of a rank file and of index.json is an
// error, never a silent load; a damaged index (a negative or huge block
// shape, an unknown format, a negative step) is an error, never a crash; a
// rank file of another step is refused; a tensor the plan lacks is an error
// unless dropped, on --resume and on --init-from; the newest checkpoint is
// the highest step of a complete index, not the last folder name; `keep`
// removes only its own lineage's older checkpoints, never the one resumed
// from; a run that would write over another run's later checkpoints stops
// before training.
//
//===----------------------------------------------------------------------===//

#include "runtime/Checkpoint.h"
#include "runtime/CheckpointConvert.h"
#include "runtime/CheckpointIndex.h"
#include "runtime/Safetensors.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <unistd.h>

using namespace planc::runtime;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("planc-checkpoint-test-" + std::to_string(::getpid()) + "-" +
                                        std::to_string(std::random_device()()));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string &name) const { return (path / name).string(); }
};

std::string readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void writeAll(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

/// A model of f32 parameters of these names and shapes, one rank.
ExecutableModel modelOf(const std::vector<std::pair<std::string, std::vector<int64_t>>> &params) {
  ExecutableModel m;
  m.plan = "tiny";
  m.buildId = "build-1";
  uint64_t offset = 0;
  for (const auto &[name, shape] : params) {
    ExecParam p;
    p.name = name;
    p.shape = shape;
    p.offset = offset;
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    offset += (uint64_t(n) * 4 + 63) / 64 * 64;
    m.params.push_back(p);
  }
  m.arenaBytes = offset;
  return m;
}

ExecutableModel tiny() { return modelOf({{"w", {4, 3}}, {"b", {3}}}); }

std::vector<uint8_t> arenaOf(const ExecutableModel &m, uint8_t salt) {
  std::vector<uint8_t> a(m.arenaBytes);
  for (size_t i = 0; i < a.size(); ++i) a[i] = uint8_t(i * 7 + salt);
  return a;
}

CheckpointSeries seriesOf(const std::string &dir, std::string lineage = "lineage-a", int64_t keep = 0,
                          std::string resumedFrom = "") {
  CheckpointSeries s;
  s.dir = dir;
  s.keep = keep;
  s.lineage = std::move(lineage);
  s.resumedFrom = std::move(resumedFrom);
  return s;
}

void save(const ExecutableModel &m, const CheckpointSeries &s, int64_t step, uint8_t salt = 1) {
  std::vector<uint8_t> a = arenaOf(m, salt);
  Status st = saveCheckpoint(m, a.data(), s, step, 1234);
  ASSERT_TRUE(st.ok()) << st.message();
}

/// The error of loading `path` into `m`, or "" when it loads.
std::string loadError(const ExecutableModel &m, const std::string &path, bool drop = false) {
  std::vector<uint8_t> a(m.arenaBytes);
  Result<Resumed> r = loadCheckpoint(m, a.data(), path, drop);
  return r.ok() ? "" : r.error();
}

std::vector<std::string> stepsIn(const std::string &dir) {
  std::vector<std::string> names;
  for (const CheckpointEntry &e : listCheckpoints(dir).complete) names.push_back(fs::path(e.folder).filename().string());
  return names;
}

TEST(CheckpointTest, RoundTripsWithEveryChecksum) {
  TempDir dir;
  const ExecutableModel m = tiny();
  save(m, seriesOf(dir.path.string()), 4);
  std::vector<uint8_t> out(m.arenaBytes, 0);
  Result<Resumed> r = loadCheckpoint(m, out.data(), dir.path.string());
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->stepsDone, 4);
  EXPECT_EQ(r->seed, 1234u);
  EXPECT_EQ(r->lineage, "lineage-a");
  const std::vector<uint8_t> in = arenaOf(m, 1);
  for (const ExecParam &p : m.params)
    EXPECT_TRUE(std::equal(in.begin() + long(p.offset), in.begin() + long(p.offset + 4 * (p.shape.size() == 2 ? 12 : 3)),
                           out.begin() + long(p.offset)))
        << p.name;
  const nlohmann::json index = nlohmann::json::parse(readAll(dir / "step-00000004/index.json"));
  EXPECT_EQ(index["format"], "planc-checkpoint-3");
  EXPECT_EQ(index["files"]["rank-0.safetensors"]["bytes"], fs::file_size(dir / "step-00000004/rank-0.safetensors"));
  EXPECT_TRUE(index.contains("checksum"));
}

TEST(CheckpointTest, EveryChangedByteOfARankFileIsAnError) {
  TempDir dir;
  const ExecutableModel m = tiny();
  save(m, seriesOf(dir.path.string()), 4);
  const std::string file = dir / "step-00000004/rank-0.safetensors";
  const std::string bytes = readAll(file);
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string changed = bytes;
    changed[i] = char(changed[i] ^ 0x01);
    writeAll(file, changed);
    std::string err = loadError(m, dir / "step-00000004");
    ASSERT_FALSE(err.empty()) << "byte " << i << " of " << bytes.size() << " changed, and the checkpoint loaded";
    EXPECT_NE(err.find("rank-0.safetensors"), std::string::npos) << err;
  }
  // A data byte: the error names the file and the tensor. Tensors are laid
  // out in name order: the last byte is the last one of 'w'.
  std::string changed = bytes;
  changed[bytes.size() - 1] = char(changed.back() ^ 0x10);
  writeAll(file, changed);
  const std::string err = loadError(m, dir / "step-00000004");
  EXPECT_NE(err.find("rank-0.safetensors': tensor 'w' does not match its checksum"), std::string::npos) << err;
}

TEST(CheckpointTest, EveryChangedByteOfTheIndexIsAnError) {
  TempDir dir;
  const ExecutableModel m = tiny();
  save(m, seriesOf(dir.path.string()), 4);
  const std::string file = dir / "step-00000004/index.json";
  const std::string bytes = readAll(file);
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string changed = bytes;
    changed[i] = char(changed[i] ^ 0x01);
    writeAll(file, changed);
    ASSERT_FALSE(loadError(m, dir / "step-00000004").empty()) << "byte " << i << " ('" << bytes[i] << "') changed";
  }
  // An edited field that still parses: the index's checksum refuses it.
  nlohmann::json index = nlohmann::json::parse(bytes);
  index["seed"] = 99;
  writeAll(file, index.dump(2));
  const std::string err = loadError(m, dir / "step-00000004");
  EXPECT_NE(err.find("index.json' does not match its checksum"), std::string::npos) << err;
}

/// A format-2 index (no checksums) of one tensor 'w' of shape [4, 3] in
/// rank-0.safetensors, with `edit` applied.
std::string damagedIndex(const TempDir &dir, const std::function<void(nlohmann::json &)> &edit) {
  const ExecutableModel m = tiny();
  save(m, seriesOf(dir.path.string()), 4);
  const std::string file = dir / "step-00000004/index.json";
  nlohmann::json index = nlohmann::json::parse(readAll(file));
  index.erase("checksum");
  index.erase("files");
  index.erase("lineage");
  index["format"] = "planc-checkpoint-2";
  edit(index);
  writeAll(file, index.dump(2));
  return loadError(m, dir / "step-00000004");
}

TEST(CheckpointTest, ADamagedIndexIsAnErrorNotACrash) {
  {
    TempDir dir; // the format of an earlier build still loads
    EXPECT_EQ(damagedIndex(dir, [](nlohmann::json &) {}), "");
  }
  struct Case {
    std::function<void(nlohmann::json &)> edit;
    std::string error;
  } cases[] = {
      {[](nlohmann::json &j) { j["tensors"]["w"]["files"][0]["block"] = {-4, 3}; }, "is not within its shape [4, 3]"},
      {[](nlohmann::json &j) { j["tensors"]["w"]["files"][0]["block"] = {40000000000LL, 3}; },
       "is not within its shape [4, 3]"},
      {[](nlohmann::json &j) {
         j["tensors"]["w"]["shape"] = {int64_t(1) << 40, int64_t(1) << 40};
       },
       "whose size overflows"},
      {[](nlohmann::json &j) { j["tensors"]["w"]["shape"] = {-4, 3}; }, "with a negative size"},
      {[](nlohmann::json &j) { j["tensors"]["w"]["files"][0]["offset"] = {-1, 0}; }, "is not within its shape"},
      {[](nlohmann::json &j) { j["step"] = -3; }, "its step -3 is not a number of steps done"},
      {[](nlohmann::json &j) { j["seed"] = -1; }, "its seed -1 is negative"},
      {[](nlohmann::json &j) { j["format"] = "planc-checkpoint-9"; }, "its format 'planc-checkpoint-9' is not one"},
      {[](nlohmann::json &j) { j["mesh"] = {1, 1, 2, 1, 1}; }, "has 2 ranks, not its 1"},
      {[](nlohmann::json &j) { j["tensors"]["w"]["files"][0]["rank"] = 1; }, "is of rank 1 (of 1)"},
  };
  for (const Case &c : cases) {
    TempDir dir;
    const std::string err = damagedIndex(dir, c.edit);
    EXPECT_NE(err.find(c.error), std::string::npos) << "expected '" << c.error << "', got: " << err;
  }
}

TEST(CheckpointTest, ARankFileOfAnotherStepIsRefused) {
  TempDir dir;
  const ExecutableModel m = tiny();
  save(m, seriesOf(dir.path.string()), 39, 1);
  save(m, seriesOf(dir.path.string()), 40, 2);
  fs::copy_file(dir / "step-00000039/rank-0.safetensors", dir / "step-00000040/rank-0.safetensors",
                fs::copy_options::overwrite_existing);
  const std::string err = loadError(m, dir / "step-00000040");
  EXPECT_NE(err.find("its metadata says step 39, but '" + (dir / "step-00000040/index.json") + "' says 40"),
            std::string::npos)
      << err;
}

TEST(CheckpointTest, ATensorThePlanLacksIsAnErrorUnlessDropped) {
  TempDir dir;
  save(modelOf({{"w", {4, 3}}, {"b", {3}}, {"layers.2.w", {3, 3}}}), seriesOf(dir.path.string()), 4);
  const ExecutableModel smaller = tiny();
  const std::string err = loadError(smaller, dir.path.string());
  EXPECT_NE(err.find("holds a tensor that plan 'tiny' does not have ('layers.2.w')"), std::string::npos) << err;
  EXPECT_NE(err.find("--drop-unused-tensors"), std::string::npos) << err;
  std::vector<uint8_t> a(smaller.arenaBytes);
  Result<Resumed> r = loadCheckpoint(smaller, a.data(), dir.path.string(), /*dropUnused=*/true);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->dropped, std::vector<std::string>{"layers.2.w"});
  // And the other way: a tensor the checkpoint lacks.
  const std::string missing =
      loadError(modelOf({{"w", {4, 3}}, {"b", {3}}, {"layers.2.w", {3, 3}}, {"c", {3}}}), dir.path.string());
  EXPECT_NE(missing.find("has no tensor 'c'"), std::string::npos) << missing;
}

TEST(CheckpointTest, TheNewestIsTheHighestStepOfACompleteIndex) {
  TempDir dir;
  const ExecutableModel m = tiny();
  save(m, seriesOf(dir.path.string()), 5);
  save(m, seriesOf(dir.path.string()), 9);
  fs::rename(dir / "step-00000009", dir / "step-9");               // not a checkpoint folder's name
  fs::create_directories(dir / "step-abc");                        // not one either
  fs::create_directories(dir / "step-00000012");                   // interrupted: no index
  save(m, seriesOf(dir.path.string()), 7);
  fs::rename(dir / "step-00000007", dir / "step-00000070");        // an index of another step
  CheckpointListing listing = listCheckpoints(dir.path.string());
  ASSERT_EQ(listing.complete.size(), 1u);
  EXPECT_EQ(listing.complete[0].step, 5);
  ASSERT_EQ(listing.warnings.size(), 3u);
  EXPECT_NE(listing.warnings[0].find("step-00000070/index.json' is of step 7"), std::string::npos) << listing.warnings[0];
  EXPECT_NE(listing.warnings[1].find("step-9' is not a checkpoint"), std::string::npos) << listing.warnings[1];
  EXPECT_NE(listing.warnings[2].find("step-abc' is not a checkpoint"), std::string::npos) << listing.warnings[2];
  std::vector<uint8_t> a(m.arenaBytes);
  Result<Resumed> r = loadCheckpoint(m, a.data(), dir.path.string());
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->stepsDone, 5);
  EXPECT_EQ(r->warnings.size(), 3u);
}

TEST(CheckpointTest, KeepRemovesOnlyItsOwnLineageAndNeverTheResumedOne) {
  TempDir dir;
  const ExecutableModel m = tiny();
  const std::string d = dir.path.string();
  for (int64_t step : {2, 4, 6}) save(m, seriesOf(d, "run-a", 2), step);
  EXPECT_EQ(stepsIn(d), (std::vector<std::string>{"step-00000004", "step-00000006"}));
  // Another run's checkpoints, of higher steps, in the same folder: its
  // keep = 1 leaves run-a's alone.
  for (int64_t step : {8, 10}) save(m, seriesOf(d, "run-b", 1), step);
  EXPECT_EQ(stepsIn(d), (std::vector<std::string>{"step-00000004", "step-00000006", "step-00000010"}));
  // run-a resumed from its step 4 (elsewhere it would be an error: see
  // below) with keep = 1: step 6 goes, step 4 stays.
  save(m, seriesOf(d, "run-a", 1, dir / "step-00000004"), 12);
  EXPECT_EQ(stepsIn(d), (std::vector<std::string>{"step-00000004", "step-00000010", "step-00000012"}));
}

TEST(CheckpointTest, ARunThatWouldOverwriteAnotherRunsCheckpointsStopsFirst) {
  TempDir dir;
  const ExecutableModel m = tiny();
  const std::string d = dir.path.string();
  for (int64_t step : {5, 10}) save(m, seriesOf(d, "run-a"), step);
  std::vector<uint8_t> a(m.arenaBytes);
  Result<Resumed> five = loadCheckpoint(m, a.data(), dir / "step-00000005");
  ASSERT_TRUE(five.ok()) << five.error();
  std::vector<std::string> warnings;
  // A rollback to step 5 writing into the same folder.
  Result<CheckpointSeries> s = startCheckpointSeries(d, 2, 5, &*five, 6, 0, warnings);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("already holds '" + (dir / "step-00000010") + "' (step 10), past the step 5"),
            std::string::npos)
      << s.error();
  // A fresh run, checkpointing from step 1 on, or writing its step 0.
  s = startCheckpointSeries(d, 2, 0, nullptr, 1, 0, warnings);
  EXPECT_FALSE(s.ok());
  TempDir zero;
  save(m, seriesOf(zero.path.string(), "run-z"), 0);
  s = startCheckpointSeries(zero.path.string(), 0, 0, nullptr, 0, 0, warnings);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("(step 0), at the step 0 this run starts from"), std::string::npos) << s.error();
  // A run that writes no checkpoint overwrites nothing: only the folder is checked.
  s = startCheckpointSeries(d, 2, 0, nullptr, -1, 0, warnings);
  EXPECT_TRUE(s.ok()) << s.error();
  // Resuming the newest continues its lineage and protects it.
  Result<Resumed> ten = loadCheckpoint(m, a.data(), d);
  ASSERT_TRUE(ten.ok()) << ten.error();
  s = startCheckpointSeries(d, 2, 10, &*ten, 11, 0, warnings);
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(s->lineage, "run-a");
  EXPECT_EQ(s->resumedFrom, ten->folder);
  // A fresh run into an empty folder gets a lineage of its own.
  TempDir other;
  s = startCheckpointSeries(other.path.string(), 0, 0, nullptr, 0, 0, warnings);
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(s->lineage.size(), 16u);
  // A folder that cannot be made is found before training.
  writeAll(other / "file", "x");
  s = startCheckpointSeries(other / "file/ck", 0, 0, nullptr, -1, 0, warnings);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("cannot create the checkpoint folder '" + (other / "file/ck") + "'"), std::string::npos)
      << s.error();
}

TEST(CheckpointTest, ConvertVerifiesBothWays) {
  TempDir dir;
  const ExecutableModel m = tiny();
  save(m, seriesOf(dir / "ck"), 4);
  std::string summary;
  Status s = exportCheckpoint(dir / "ck", dir / "whole.safetensors", summary);
  ASSERT_TRUE(s.ok()) << s.message();
  // Back into a checkpoint, which loads.
  s = importCheckpoint(dir / "whole.safetensors", dir / "back", summary);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(loadError(m, dir / "back"), "");
  // A flipped data byte in the file, and in the checkpoint: errors naming the tensor.
  std::string bytes = readAll(dir / "whole.safetensors");
  bytes[bytes.size() - 2] = char(bytes[bytes.size() - 2] ^ 0x04);
  writeAll(dir / "whole.safetensors", bytes);
  s = importCheckpoint(dir / "whole.safetensors", dir / "back2", summary);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("tensor 'w' does not match its checksum"), std::string::npos) << s.message();
  bytes = readAll(dir / "ck/step-00000004/rank-0.safetensors");
  bytes[bytes.size() - 2] = char(bytes[bytes.size() - 2] ^ 0x04);
  writeAll(dir / "ck/step-00000004/rank-0.safetensors", bytes);
  s = exportCheckpoint(dir / "ck", dir / "whole2.safetensors", summary);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("tensor 'w' does not match its checksum"), std::string::npos) << s.message();
}

TEST(CheckpointTest, InitFromAFileOfTensorsThePlanLacksIsAnErrorUnlessDropped) {
  // The file of a larger model, of the plan's own names (planc convert's):
  // its extra tensors are named, a few and then a count, with the way out.
  TempDir dir;
  const ExecutableModel m = tiny();
  HostTensorMap tensors;
  tensors["w"] = HostTensor::zeros(ElementType::F32, {4, 3});
  tensors["b"] = HostTensor::zeros(ElementType::F32, {3});
  const std::vector<std::string> extras = {"layers.2.a", "layers.2.b", "layers.2.c", "layers.2.d", "layers.2.e"};
  for (const std::string &extra : extras) tensors[extra] = HostTensor::zeros(ElementType::F32, {3});
  ASSERT_TRUE(writeSafetensors(dir / "larger.safetensors", tensors).ok());
  std::vector<uint8_t> a(m.arenaBytes);
  std::string summary;
  Status s = loadInitialWeights(m, a.data(), dir / "larger.safetensors", summary);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("holds 5 tensors that plan 'tiny' does not have ('layers.2.a', 'layers.2.b', "
                             "'layers.2.c' and 2 more)"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("--drop-unused-tensors loads without them"), std::string::npos) << s.message();
  s = loadInitialWeights(m, a.data(), dir / "larger.safetensors", summary, /*dropUnused=*/true);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_NE(summary.find("(5 tensors the plan lacks dropped: 'layers.2.a', 'layers.2.b', 'layers.2.c' and 2 more)"),
            std::string::npos)
      << summary;
  // The plan's own optimizer states in the file are the plan's: no error.
  ExecutableModel withState = modelOf({{"w", {4, 3}}, {"b", {3}}, {"w.adam_m", {4, 3}}});
  withState.params.back().modelParam = false;
  for (const std::string &extra : extras) tensors.erase(extra);
  tensors["w.adam_m"] = HostTensor::zeros(ElementType::F32, {4, 3});
  ASSERT_TRUE(writeSafetensors(dir / "states.safetensors", tensors).ok());
  std::vector<uint8_t> b(withState.arenaBytes);
  s = loadInitialWeights(withState, b.data(), dir / "states.safetensors", summary);
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(CheckpointTest, ConvertRefusesATensorNoFileBacks) {
  TempDir dir;
  const std::string err = damagedIndex(dir, [](nlohmann::json &j) {
    j["tensors"]["w"]["shape"] = {int64_t(1) << 20, int64_t(1) << 20};
    j["tensors"]["w"]["files"][0]["block"] = {4, 3};
  });
  EXPECT_FALSE(err.empty());
  std::string summary;
  Status s = exportCheckpoint(dir / "step-00000004", dir / "whole.safetensors", summary);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("tensor 'w' would take 4398046511104 bytes, more than the"), std::string::npos)
      << s.message();
}

} // namespace
