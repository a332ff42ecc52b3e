//===- runtime/CheckpointConvert.cpp - checkpoints to one file and back ---===//

#include "runtime/CheckpointConvert.h"
#include "runtime/AtomicFile.h"
#include "runtime/Checkpoint.h"
#include "runtime/CheckpointIndex.h"
#include "runtime/Crc32c.h"
#include "runtime/ReadFile.h"
#include "runtime/Safetensors.h"
#include "runtime/Plural.h"

#include <nlohmann/json.hpp>

#include <filesystem>

using namespace planc::runtime;
namespace fs = std::filesystem;

namespace {
constexpr const char *kFormat = "planc-unsharded-1";

/// The folders passed over while looking for the newest checkpoint.
std::string warningLines(const CheckpointIndex &index) {
  std::string out;
  for (const std::string &w : index.warnings) out += "\nwarning: " + w;
  return out;
}

/// Each tensor is assembled whole: its size, from the index, must be no
/// more than the files that hold it, or a damaged index would have the
/// converter allocate what no file backs.
Status fitsItsFiles(const CheckpointIndex &index) {
  std::map<std::string, uint64_t> sizes;
  for (const auto &[name, t] : index.tensors) {
    uint64_t held = 0, bytes = byteSize(t.type);
    for (const CheckpointIndex::FileBlock &f : t.files) {
      auto it = sizes.find(f.file);
      if (it == sizes.end()) {
        std::error_code ec;
        uint64_t size = fs::file_size(fs::path(index.folder) / f.file, ec);
        it = sizes.emplace(f.file, ec ? 0 : size).first;
      }
      held += it->second;
    }
    for (int64_t d : t.shape) bytes *= uint64_t(d); // no overflow: the index reader checked
    if (bytes > held)
      return errorStatus("'" + index.indexPath + "': tensor '" + name + "' would take " + counted(int64_t(bytes), "byte") +
                         ", more than the " + counted(int64_t(held), "byte") + " of the files that hold it");
  }
  return Status::success();
}
} // namespace

Status planc::runtime::exportCheckpoint(const std::string &checkpoint, const std::string &file, std::string &summary) {
  Result<CheckpointIndex> index = readCheckpointIndex(checkpoint);
  if (!index.ok()) return errorStatus(index.error());
  if (Status s = fitsItsFiles(*index); !s.ok()) return s;
  CheckpointReader reader(*index);
  HostTensorMap tensors;
  for (const auto &[name, t] : index->tensors) {
    HostTensor whole = HostTensor::zeros(t.type, t.shape);
    Block all{std::vector<int64_t>(t.shape.size(), 0), t.shape};
    if (Status s = reader.read(name, all, t.type, 0, whole.bytes.data()); !s.ok()) return s;
    tensors.emplace(name, std::move(whole));
  }
  std::map<std::string, std::string> meta = {{"format", kFormat},
                                             {"plan", index->plan},
                                             {"build", index->build},
                                             {"step", std::to_string(index->step)},
                                             {"seed", std::to_string(index->seed)}};
  if (!index->names.empty()) meta["names"] = nameMapJson(index->names).dump();
  if (Status s = writeSafetensors(file, tensors, meta, /*checksums=*/true); !s.ok()) return s;
  summary = "wrote " + file + ": " + counted(int64_t(tensors.size()), "tensor") + " of plan '" + index->plan +
            "' after " + counted(index->step, "step") + ", from " + index->folder + warningLines(*index);
  return Status::success();
}

Status planc::runtime::importCheckpoint(const std::string &file, const std::string &dir, std::string &summary) {
  Result<SafetensorsContents> contents = readSafetensors(file);
  if (!contents.ok()) return errorStatus(contents.error());
  const auto &meta = contents->metadata;
  auto field = [&](const char *key) { auto it = meta.find(key); return it == meta.end() ? std::string() : it->second; };
  if (field("format") != kFormat || field("plan").empty())
    return errorStatus("'" + file + "' is not a checkpoint written by planc convert (its metadata has no format '" +
                       kFormat + "' and plan); to start a plan from plain weights use the executable's --init-from");
  // Step and seed are numbers of their type, the whole text of the field.
  int64_t step = -1;
  uint64_t seed = 0;
  const std::string stepText = field("step"), seedText = field("seed");
  bool numbers = !stepText.empty() && !seedText.empty() &&
                 stepText.find_first_not_of("0123456789") == std::string::npos &&
                 seedText.find_first_not_of("0123456789") == std::string::npos;
  try {
    if (numbers) {
      step = std::stoll(stepText);
      seed = std::stoull(seedText);
    }
  } catch (const std::exception &) {
    numbers = false;
  }
  if (!numbers)
    return errorStatus("'" + file + "': its metadata's step '" + stepText + "' or seed '" + seedText +
                       "' is not a non-negative integer");
  const std::string folder = checkpointFolder(dir, step);
  std::error_code ec;
  if (fs::exists(fs::path(folder) / "index.json", ec))
    return errorStatus("'" + folder + "' already holds a checkpoint; convert into another folder");
  fs::create_directories(folder, ec);
  if (ec) return errorStatus("cannot create the checkpoint folder '" + folder + "': " + ec.message());
  nlohmann::json tensors = nlohmann::json::object();
  for (const auto &[name, t] : contents->tensors)
    tensors[name] = {{"dtype", spelling(t.type)},
                     {"shape", t.shape},
                     {"sharding", ""},
                     {"files", {{{"file", rankFileName(0)}, {"rank", 0}, {"block", t.shape},
                                 {"offset", std::vector<int64_t>(t.shape.size(), 0)}}}}};
  const std::vector<int64_t> mesh = {1, 1, 1, 1, 1};
  std::map<std::string, std::string> rankMeta = {{"plan", field("plan")},
                                                 {"build", field("build")},
                                                 {"step", std::to_string(step)},
                                                 {"seed", std::to_string(seed)},
                                                 {"rank", "0"},
                                                 {"mesh", nlohmann::json(mesh).dump()}};
  FileDigest digest;
  if (Status s = writeSafetensors((fs::path(folder) / rankFileName(0)).string(), contents->tensors, rankMeta,
                                  /*checksums=*/true, &digest);
      !s.ok())
    return s;
  nlohmann::json files = {{rankFileName(0), {{"bytes", digest.bytes}, {"crc32c", crc32cText(digest.crc)}}}};
  nlohmann::json index = {{"format", kCheckpointFormatName}, {"plan", field("plan")}, {"build", field("build")},
                          {"step", step}, {"seed", seed}, {"ranks", 1}, {"mesh", mesh},
                          {"lineage", newCheckpointLineage()}, {"files", files}, {"tensors", tensors}};
  if (!field("names").empty()) {
    nlohmann::json names = nlohmann::json::parse(field("names"), nullptr, /*allow_exceptions=*/false);
    Result<NameMap> map = names.is_discarded() ? Result<NameMap>(errorStatus("not JSON")) : nameMapFromJson(names);
    if (!map.ok()) return errorStatus("'" + file + "': its metadata's name map: " + map.error());
    index["names"] = names;
  }
  if (Status s = writeFileAtomically((fs::path(folder) / "index.json").string(), checkpointIndexText(index)); !s.ok())
    return s;
  summary = "wrote " + folder + ": " + counted(int64_t(contents->tensors.size()), "tensor") + " of plan '" +
            field("plan") + "' after " + counted(step, "step") + ", as one rank's checkpoint";
  return Status::success();
}

Status planc::runtime::exportNamed(const std::string &checkpoint, const std::string &mapName, const std::string &file,
                                   std::string &summary) {
  Result<CheckpointIndex> index = readCheckpointIndex(checkpoint);
  if (!index.ok()) return errorStatus(index.error());
  if (Status s = fitsItsFiles(*index); !s.ok()) return s;
  const NameMap &map = index->names;
  if (map.empty())
    return errorStatus("'" + index->indexPath + "': plan '" + index->plan +
                       "' follows no name map, so its checkpoints have no other names; add `names = " + mapName +
                       "` to its train block (import std.hf), build it again and resume from this checkpoint");
  if (!sameMapName(map.name, mapName))
    return errorStatus("'" + index->indexPath + "': plan '" + index->plan + "' follows the name map '" + map.name +
                       "', not '" + mapName + "'");
  // config.json goes beside the file; one there already must be the same.
  const fs::path config = fs::path(file).parent_path() / "config.json";
  std::error_code ec;
  if (!map.config.empty() && fs::exists(config, ec)) {
    Result<std::string> old = readWholeFile(config.string());
    if (!old.ok() || *old != map.config)
      return errorStatus("'" + config.string() + "' exists and is another model's config; write into another folder");
  }
  CheckpointReader reader(*index);
  HostTensorMap tensors;
  for (const NamedTensor &n : map.tensors) {
    auto t = index->tensors.find(n.param);
    if (t == index->tensors.end())
      return errorStatus("'" + index->indexPath + "' has no tensor '" + n.param + "' the name map names");
    HostTensor whole = HostTensor::zeros(t->second.type, t->second.shape);
    Block all{std::vector<int64_t>(t->second.shape.size(), 0), t->second.shape};
    if (Status s = reader.read(n.param, all, t->second.type, 0, whole.bytes.data()); !s.ok()) return s;
    Result<HostTensor> out = toFileTensor(whole, n);
    if (!out.ok()) return errorStatus(out.error());
    tensors.emplace(n.files[0], std::move(*out));
  }
  // transformers reads safetensors files whose metadata says "pt".
  std::map<std::string, std::string> meta = {{"format", "pt"}, {"planc.plan", index->plan},
                                             {"planc.step", std::to_string(index->step)}};
  if (Status s = writeSafetensors(file, tensors, meta); !s.ok()) return s;
  if (!map.config.empty())
    if (Status s = writeFileAtomically(config.string(), map.config); !s.ok()) return s;
  summary = "wrote " + file + ": " + std::to_string(tensors.size()) + " tensors of plan '" + index->plan + "' after " +
            std::to_string(index->step) + " steps by the name map '" + map.name + "'" +
            (map.config.empty() ? " (it declares no config family: no config.json)" : ", and " + config.string());
  return Status::success();
}
