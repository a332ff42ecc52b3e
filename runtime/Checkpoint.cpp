//===- runtime/Checkpoint.cpp - a compiled plan's checkpoints -------------===//

#include "runtime/Checkpoint.h"
#include "runtime/AtomicFile.h"
#include "runtime/BlockCopy.h"
#include "runtime/CheckpointIndex.h"
#include "runtime/Crc32c.h"
#include "runtime/Plural.h"
#include "runtime/ElementBits.h"
#include "runtime/NameMap.h"
#include "runtime/ReadFile.h"
#include "runtime/Safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <optional>
#include <set>
#include <system_error>

using namespace planc::runtime;
namespace fs = std::filesystem;

namespace {

constexpr const char *kIndex = "index.json";

std::string shapeText(const std::vector<int64_t> &s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

} // namespace

std::string planc::runtime::checkpointFolder(const std::string &dir, int64_t stepsDone) {
  char name[32];
  std::snprintf(name, sizeof name, "step-%08lld", (long long)stepsDone);
  return (fs::path(dir) / name).string();
}

std::string planc::runtime::rankFileName(int64_t rank) { return "rank-" + std::to_string(rank) + ".safetensors"; }

namespace {

/// The index's entry of every tensor: its global shape, dtype, sharding,
/// and which rank's file holds which block of it (every rank of every
/// program, from the model's description alone).
nlohmann::json tensorIndex(const ExecutableModel &model) {
  nlohmann::json tensors = nlohmann::json::object();
  auto add = [&](const ExecParam &p, int64_t rank, const std::vector<int64_t> &offset) {
    nlohmann::json &t = tensors[p.name];
    if (t.is_null())
      t = {{"dtype", spelling(p.type)}, {"shape", p.globalShape.empty() ? p.shape : p.globalShape},
           {"sharding", p.sharding}, {"files", nlohmann::json::array()}};
    t["files"].push_back({{"file", rankFileName(rank)},
                          {"rank", rank},
                          {"block", p.shape},
                          {"offset", offset.empty() ? std::vector<int64_t>(p.shape.size(), 0) : offset}});
  };
  if (model.programs.empty()) {
    for (const ExecParam &p : model.params) add(p, model.rank, p.blockOffset);
    return tensors;
  }
  for (const ExecProgram &program : model.programs)
    for (size_t r = 0; r < program.ranks.size(); ++r)
      for (const ExecParam &p : program.params)
        add(p, program.ranks[r], r < p.blockOffsets.size() ? p.blockOffsets[r] : std::vector<int64_t>());
  return tensors;
}

} // namespace

namespace {

bool sameFolder(const std::string &a, const std::string &b) {
  std::error_code ec;
  return !a.empty() && !b.empty() && fs::equivalent(a, b, ec);
}

} // namespace

Result<CheckpointSeries> planc::runtime::startCheckpointSeries(const std::string &dir, int64_t keep, int64_t start,
                                                               const Resumed *resumed, int64_t firstWrite,
                                                               int64_t rank, std::vector<std::string> &warnings) {
  const std::string before = " (found before training; nothing was written)";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return errorStatus("cannot create the checkpoint folder '" + dir + "': " + ec.message() + before);
  // Every rank writes its file there: each one tries now, not at the first
  // checkpoint, after hours of training.
  const fs::path probe = fs::path(dir) / (".planc-write-test-" + std::to_string(rank));
  std::FILE *f = std::fopen(probe.c_str(), "w");
  int err = f ? 0 : errno;
  if (f) {
    if (std::fputc('x', f) == EOF) err = errno;
    if (std::fclose(f) != 0 && !err) err = errno;
    fs::remove(probe, ec);
  }
  if (err) return errorStatus("cannot write in the checkpoint folder '" + dir + "': " + std::strerror(err) + before);

  CheckpointListing listing = listCheckpoints(dir);
  warnings = std::move(listing.warnings);
  for (const CheckpointEntry &e : listing.complete)
    if (firstWrite >= 0 && (e.step > start || e.step == firstWrite))
      return errorStatus("the checkpoint folder '" + dir + "' already holds '" + e.folder + "' (step " +
                         std::to_string(e.step) + "), " + (e.step > start ? "past" : "at") + " the step " +
                         std::to_string(start) + " this run starts from: its checkpoints would overwrite or "
                         "interleave with another run's. Resume from '" + dir + "' to continue that run, or write "
                         "into another --checkpoint-dir" + before);
  CheckpointSeries series;
  series.dir = dir;
  series.keep = keep;
  series.lineage = resumed && !resumed->lineage.empty() ? resumed->lineage : newCheckpointLineage();
  series.resumedFrom = resumed ? resumed->folder : "";
  return series;
}

Status planc::runtime::saveCheckpoint(const ExecutableModel &model, const uint8_t *arena,
                                      const CheckpointSeries &series, int64_t stepsDone, uint64_t seed,
                                      const RankSync *sync) {
  const std::string &dir = series.dir;
  const std::string folder = checkpointFolder(dir, stepsDone);
  const std::string keptNote = " (the earlier checkpoints in '" + dir + "' are untouched)";
  const bool lead = model.rank == 0;
  // Every rank learns whether any failed; one that did reports its own error.
  auto agreed = [&](Status s) -> Status {
    const bool any = sync && sync->anyFailed ? sync->anyFailed(!s.ok()) : !s.ok();
    if (!s.ok()) return s;
    if (any) return errorStatus("another rank could not write its part of checkpoint '" + folder + "'" + keptNote);
    return s;
  };
  std::error_code ec;
  fs::create_directories(folder, ec);
  Status made = ec ? errorStatus("cannot create the checkpoint folder '" + folder + "': " + ec.message() + keptNote)
                   : Status::success();
  // A folder left by an interrupted write of the same step loses its index
  // first, so it is never taken for complete while being rewritten.
  if (made.ok() && lead) fs::remove(fs::path(folder) / kIndex, ec);
  if (Status s = agreed(std::move(made)); !s.ok()) return s;

  HostTensorMap tensors;
  for (const ExecParam &p : model.params) {
    HostTensor t{p.type, p.shape, {}};
    t.bytes.assign(arena + p.offset, arena + p.offset + t.byteSize());
    tensors.emplace(p.name, std::move(t));
  }
  // What the file says of itself, checked against the index on loading.
  std::map<std::string, std::string> meta = {{"plan", model.plan},
                                             {"build", model.buildId},
                                             {"step", std::to_string(stepsDone)},
                                             {"seed", std::to_string(seed)},
                                             {"rank", std::to_string(model.rank)},
                                             {"mesh", nlohmann::json(model.mesh).dump()}};
  FileDigest digest;
  Status wrote = writeSafetensors((fs::path(folder) / rankFileName(model.rank)).string(), tensors, meta,
                                  /*checksums=*/true, &digest);
  if (!wrote.ok()) wrote = errorStatus(wrote.message() + keptNote);
  if (Status s = agreed(std::move(wrote)); !s.ok()) return s;

  // Rank 0 learns every rank file's size and CRC-32C for the index.
  const std::string mine = nlohmann::json{{"file", rankFileName(model.rank)},
                                          {"bytes", digest.bytes},
                                          {"crc32c", crc32cText(digest.crc)}}.dump();
  std::vector<std::string> digests{mine};
  if (sync && sync->gather) {
    Result<std::vector<std::string>> all = sync->gather(mine);
    if (!all.ok()) return errorStatus(all.error() + keptNote);
    if (lead) digests = std::move(*all);
  }

  // The index last, once every rank's file is durable (AtomicFile.h syncs).
  Status indexed = Status::success();
  if (lead) {
    nlohmann::json files = nlohmann::json::object();
    for (const std::string &text : digests) {
      nlohmann::json d = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (d.is_discarded() || !d.contains("file") || !d["file"].is_string())
        return errorStatus("internal error: a rank's checkpoint file digest is not one: " + text);
      files[d["file"].get<std::string>()] = {{"bytes", d["bytes"]}, {"crc32c", d["crc32c"]}};
    }
    nlohmann::json index = {{"format", kCheckpointFormatName}, {"plan", model.plan}, {"build", model.buildId},
                            {"step", stepsDone}, {"seed", seed}, {"ranks", model.ranks},
                            {"mesh", model.mesh}, {"lineage", series.lineage}, {"files", files},
                            {"tensors", tensorIndex(model)}};
    // The name map the plan follows: `planc convert --to` writes its names.
    if (!model.nameMap.empty()) index["names"] = nlohmann::json::parse(model.nameMap);
    indexed = writeFileAtomically((fs::path(folder) / kIndex).string(), checkpointIndexText(index));
    if (!indexed.ok()) indexed = errorStatus(indexed.message() + keptNote);
  }
  if (Status s = agreed(std::move(indexed)); !s.ok()) return s;

  // Retention: of this run's lineage only, by the steps the indexes record;
  // never the checkpoint resumed from, never another run's.
  if (series.keep > 0 && lead) {
    std::vector<std::string> ours;
    for (const CheckpointEntry &e : listCheckpoints(dir).complete)
      if (e.lineage == series.lineage) ours.push_back(e.folder);
    // The index goes first: a removal cut short leaves a folder that is not
    // taken for a complete checkpoint.
    for (size_t i = 0; i + size_t(series.keep) < ours.size(); ++i) {
      if (sameFolder(ours[i], series.resumedFrom)) continue;
      fs::remove(fs::path(ours[i]) / kIndex, ec);
      fs::remove_all(ours[i], ec);
    }
  }
  return Status::success();
}

namespace {

/// `t`'s values in `type` (the bytes unchanged when it already is).
HostTensor convertedTo(const HostTensor &t, ElementType type) {
  if (t.type == type) return t;
  std::vector<double> values(size_t(t.numel()));
  decodeBuffer(t.type, t.bytes.data(), values.size(), values.data());
  HostTensor out{type, t.shape, {}};
  out.bytes.resize(size_t(out.byteSize()));
  encodeBuffer(type, values.data(), values.size(), out.bytes.data());
  return out;
}

/// The parameter's block in the global tensor (from 0 when whole).
Block blockOf(const ExecParam &p) {
  Block b;
  b.shape = p.shape;
  b.offset = p.blockOffset.size() == p.shape.size() ? p.blockOffset : std::vector<int64_t>(p.shape.size(), 0);
  return b;
}

/// Copies `t`, the whole tensor, into the buffer of `p`: the rank's block
/// of it, the padding of an uneven split zero; the dtype converted.
Status placeTensor(const ExecParam &p, const HostTensor &t, uint8_t *arena, const std::string &file,
                   const std::string &name) {
  const std::vector<int64_t> &global = p.globalShape.empty() ? p.shape : p.globalShape;
  if (t.shape != global)
    return errorStatus("'" + file + "': tensor '" + name + "' has shape " + shapeText(t.shape) + ", but the plan's '" +
                       p.name + "' is " + shapeText(global));
  if ((!isFloat(t.type) || !isFloat(p.type)) && t.type != p.type)
    return errorStatus("'" + file + "': tensor '" + name + "' is " + spelling(t.type) + ", but the plan's '" + p.name +
                       "' is " + spelling(p.type));
  HostTensor whole = convertedTo(t, p.type);
  uint8_t *dst = arena + p.offset;
  const Block to = blockOf(p);
  if (to.shape == global) {
    std::memcpy(dst, whole.bytes.data(), whole.bytes.size());
    return Status::success();
  }
  HostTensor block = HostTensor::zeros(p.type, p.shape);
  copyOverlap(whole.bytes.data(), Block{std::vector<int64_t>(global.size(), 0), global}, block.bytes.data(), to, global,
              byteSize(p.type));
  std::memcpy(dst, block.bytes.data(), block.bytes.size());
  return Status::success();
}

/// "'a', 'b', 'c' and 4 more": a few names, then a count, so that a file of
/// a much larger model stays a one-line error.
std::string someNames(const std::vector<std::string> &names) {
  constexpr size_t kShown = 3;
  std::string out;
  for (size_t i = 0; i < names.size() && i < kShown; ++i) out += (i ? ", '" : "'") + names[i] + "'";
  if (names.size() > kShown) out += " and " + std::to_string(names.size() - kShown) + " more";
  return out;
}

/// The name of every buffer of the plan a file may hold -- parameters and
/// optimizer states, of every rank -- and those of `file` among none of them.
std::vector<std::string> tensorsThePlanLacks(const ExecutableModel &model, const std::vector<std::string> &file) {
  std::set<std::string> planned;
  for (const ExecProgram &program : model.programs)
    for (const ExecParam &p : program.params) planned.insert(p.name);
  for (const ExecParam &p : model.params) planned.insert(p.name);
  std::vector<std::string> lacking;
  for (const std::string &name : file)
    if (!planned.count(name)) lacking.push_back(name);
  return lacking;
}

/// The error of a file holding tensors the plan lacks, with the way out.
std::string lackingError(const std::string &what, const ExecutableModel &model, const std::vector<std::string> &lacking,
                         const std::string &wayOut) {
  return what + " holds " + (lacking.size() == 1 ? "a tensor" : std::to_string(lacking.size()) + " tensors") +
         " that plan '" + model.plan + "' does not have (" + someNames(lacking) +
         "): a checkpoint of a larger model or of another optimizer? --drop-unused-tensors " + wayOut;
}

} // namespace

std::string planc::runtime::droppedNote(const std::vector<std::string> &dropped) {
  return counted(int64_t(dropped.size()), "tensor") + " the plan lacks dropped: " + someNames(dropped);
}

Result<Resumed> planc::runtime::loadCheckpoint(const ExecutableModel &model, uint8_t *arena, const std::string &path,
                                               bool dropUnused) {
  Result<CheckpointIndex> index = readCheckpointIndex(path);
  if (!index.ok()) return errorStatus("cannot resume: " + index.error());
  if (index->plan != model.plan)
    return errorStatus("cannot resume: '" + index->indexPath + "' is a checkpoint of plan '" + index->plan +
                       "', not of '" + model.plan + "'");
  // Presence both ways: a tensor no rank of the plan has (a layer of a
  // larger model, a state of another optimizer) is not dropped silently.
  Resumed r;
  std::vector<std::string> names;
  for (const auto &[name, t] : index->tensors) names.push_back(name);
  r.dropped = tensorsThePlanLacks(model, names);
  if (!r.dropped.empty() && !dropUnused)
    return errorStatus(lackingError("cannot resume: '" + index->indexPath + "'", model, r.dropped,
                                    "resumes without them"));
  // Every parameter's block from whichever files hold it: the same plan's
  // own file, or the blocks of another split (resharding).
  CheckpointReader reader(*index);
  for (const ExecParam &p : model.params) {
    const std::vector<int64_t> &global = p.globalShape.empty() ? p.shape : p.globalShape;
    auto it = index->tensors.find(p.name);
    if (it == index->tensors.end())
      return errorStatus("cannot resume: '" + index->indexPath + "' has no tensor '" + p.name + "'");
    if (it->second.shape != global)
      return errorStatus("cannot resume: tensor '" + p.name + "' is " + shapeText(it->second.shape) + " in '" +
                         index->indexPath + "', but " + shapeText(global) +
                         " in this plan: a checkpoint loads only into the same model");
    if (Status s = reader.read(p.name, blockOf(p), p.type, model.rank, arena + p.offset); !s.ok())
      return errorStatus("cannot resume: " + s.message());
  }
  r.stepsDone = index->step;
  r.seed = index->seed;
  r.folder = index->folder;
  r.lineage = index->lineage;
  r.warnings = index->warnings;
  return r;
}

namespace {

/// The first of `names` the file holds, or null.
const HostTensor *findAny(const SafetensorsContents &c, const std::vector<std::string> &names, std::string *found) {
  for (const std::string &n : names)
    if (auto it = c.tensors.find(n); it != c.tensors.end()) {
      if (found) *found = n;
      return &it->second;
    }
  return nullptr;
}

/// Loads a file by the plan's name map: each tensor the map names, onto
/// this rank's parameter of that name if it has one.
Status loadByNameMap(const ExecutableModel &model, const NameMap &map, const SafetensorsContents &c,
                     uint8_t *arena, const std::string &file, std::string &summary) {
  const std::string in = "--init-from: '" + file + "': ";
  std::map<std::string, const NamedTensor *> byFile;
  for (const NamedTensor &n : map.tensors)
    for (const std::string &f : n.files) byFile[f] = &n;
  std::map<std::string, const TiedTensor *> tiedByFile;
  for (const TiedTensor &t : map.tied)
    for (const std::string &f : t.files) tiedByFile[f] = &t;
  std::set<std::string> ignored(map.ignored.begin(), map.ignored.end());
  std::map<std::string, const ExecParam *> mine;
  for (const ExecParam &p : model.params)
    if (p.modelParam) mine[p.name] = &p;

  // Names first: a file of another model says so by a name this map does
  // not know, which is a clearer error than the shape it fails on first.
  for (const auto &[name, t] : c.tensors)
    if (!ignored.count(name) && !tiedByFile.count(name) && !byFile.count(name))
      return errorStatus(in + "tensor '" + name + "' has no name in the plan's name map '" + map.name +
                         "' (a tensor the map does not know is an error, not passed over: the file may be of "
                         "another model, one with biases or layers this plan does not have)");

  size_t used = 0, elsewhere = 0, skipped = 0;
  std::string notes;
  std::set<std::string> loaded;
  for (const auto &[name, t] : c.tensors) {
    if (ignored.count(name)) {
      ++skipped;
      continue;
    }
    if (auto tied = tiedByFile.find(name); tied != tiedByFile.end()) {
      // The plan has no parameter of its own for it: it must be the tensor
      // it is tied to, or the plan would silently train another model.
      const NamedTensor *to = nullptr;
      for (const NamedTensor &n : map.tensors)
        if (n.files[0] == tied->second->sameAs) to = &n;
      std::string other;
      const HostTensor *same = to ? findAny(c, to->files, &other) : nullptr;
      if (same && (same->type != t.type || same->shape != t.shape || same->bytes != t.bytes))
        return errorStatus(in + "tensor '" + name + "' differs from '" + other + "', but the plan ties it to '" +
                           to->param + "' (declare a parameter of its own for it, an untied head)");
      ++skipped;
      continue;
    }
    auto named = byFile.find(name);
    auto p = mine.find(named->second->param);
    if (p == mine.end()) {
      ++elsewhere; // a parameter of another pipeline stage
      continue;
    }
    const ExecParam &param = *p->second;
    const std::vector<int64_t> &global = param.globalShape.empty() ? param.shape : param.globalShape;
    Result<HostTensor> ready = fromFileTensor(t, name, *named->second, global, notes);
    if (!ready.ok()) return errorStatus(in + ready.error());
    if (Status s = placeTensor(param, *ready, arena, file, name); !s.ok()) return errorStatus("--init-from: " + s.message());
    loaded.insert(param.name);
    ++used;
  }
  // Every parameter of this rank the map names must have come from the file.
  for (const NamedTensor &n : map.tensors)
    if (mine.count(n.param) && !loaded.count(n.param))
      return errorStatus(in + "no tensor '" + n.files[0] + "' (the plan's '" + n.param + "')");
  std::string kept;
  size_t keptCount = 0;
  for (const auto &[name, p] : mine)
    if (!loaded.count(name) && ++keptCount <= 3) kept += (kept.empty() ? " (" : ", ") + name;
  if (keptCount > 3) kept += ", ...";
  if (keptCount) kept += ")";
  summary = "loaded " + counted(int64_t(used), "tensor") + " of '" + file + "' by the name map '" + map.name + "'" +
            (elsewhere ? ", " + std::to_string(elsewhere) + " for the other pipeline stages" : "") +
            (skipped ? ", " + std::to_string(skipped) + " passed over as tied or ignored" : "") + notes + "; " + counted(int64_t(keptCount), "parameter") +
            (keptCount == 1 ? " keeps its initial values" : " keep their initial values") + kept;
  return Status::success();
}

} // namespace

Status planc::runtime::loadInitialWeights(const ExecutableModel &model, uint8_t *arena, const std::string &file,
                                          std::string &summary, bool dropUnused) {
  Result<SafetensorsContents> contents = readSafetensors(file);
  if (!contents.ok()) return errorStatus("--init-from: " + contents.error());
  // The plan's own names (a file planc convert wrote), or the name map's:
  // whichever names more of the file (GPT-2's wte.weight is both).
  std::optional<NameMap> map;
  if (!model.nameMap.empty()) {
    Result<NameMap> read = nameMapFromJson(nlohmann::json::parse(model.nameMap));
    if (!read.ok()) return errorStatus("--init-from: " + read.error());
    map = std::move(*read);
  }
  // Counted over the whole model, so that every rank decides alike.
  size_t own = 0, mapped = 0;
  std::set<std::string> params;
  for (const ExecProgram &program : model.programs)
    for (const ExecParam &p : program.params)
      if (p.modelParam) params.insert(p.name);
  for (const ExecParam &p : model.params)
    if (p.modelParam) params.insert(p.name);
  for (const std::string &name : params) own += contents->tensors.count(name);
  if (map) {
    std::set<std::string> known(map->ignored.begin(), map->ignored.end());
    for (const NamedTensor &n : map->tensors) known.insert(n.files.begin(), n.files.end());
    for (const TiedTensor &t : map->tied) known.insert(t.files.begin(), t.files.end());
    for (const auto &[name, t] : contents->tensors) mapped += known.count(name);
  }
  if (map && mapped > own) return loadByNameMap(model, *map, *contents, arena, file, summary);
  const bool ownNames = own > 0;
  if (!ownNames) {
    std::string first = contents->tensors.empty() ? "" : contents->tensors.begin()->first;
    return errorStatus("--init-from: '" + file + "' has no tensor named as a parameter of the plan (its first is '" +
                       first + "')" +
                       (model.nameMap.empty() ? "; a file of Hugging Face names loads through a name map the plan "
                                                "follows: add `names = hf_llama` (or hf_qwen2, hf_gpt2, hf_neox) to "
                                                "its train block and import std.hf"
                                              : ""));
  }
  // Presence both ways, as on --resume: a tensor of the file that no buffer
  // of the plan has (a layer of a larger model, a state of another
  // optimizer) is not passed over silently. The plan's optimizer states the
  // file holds (planc convert writes them) are the plan's, left unloaded.
  std::vector<std::string> names;
  for (const auto &[name, t] : contents->tensors) names.push_back(name);
  const std::vector<std::string> lacking = tensorsThePlanLacks(model, names);
  if (!lacking.empty() && !dropUnused)
    return errorStatus(lackingError("--init-from: '" + file + "'", model, lacking, "loads without them"));
  summary = "loaded the parameters of '" + file + "'" + (lacking.empty() ? "" : " (" + droppedNote(lacking) + ")");
  for (const ExecParam &p : model.params) {
    if (!p.modelParam) continue;
    auto it = contents->tensors.find(p.name);
    if (it == contents->tensors.end())
      return errorStatus("--init-from: '" + file + "' has no tensor '" + p.name + "'");
    if (Status s = placeTensor(p, it->second, arena, file, p.name); !s.ok())
      return errorStatus("--init-from: " + s.message());
  }
  return Status::success();
}
