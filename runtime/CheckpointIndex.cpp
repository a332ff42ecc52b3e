//===- runtime/CheckpointIndex.cpp - reading a checkpoint by its index ----===//

#include "runtime/CheckpointIndex.h"
#include "runtime/Checkpoint.h"
#include "runtime/Crc32c.h"
#include "runtime/ReadFile.h"
#include "runtime/Plural.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <unistd.h>
#include <filesystem>
#include <regex>

using namespace planc::runtime;
namespace fs = std::filesystem;

namespace {

constexpr const char *kIndex = "index.json";

std::string shapeText(const std::vector<int64_t> &s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

bool intList(const nlohmann::json &j, std::vector<int64_t> &out) {
  if (!j.is_array()) return false;
  out.clear();
  for (const auto &d : j) {
    if (!d.is_number_integer()) return false;
    out.push_back(d.get<int64_t>());
  }
  return true;
}

} // namespace

namespace {

/// The index of a checkpoint format (1 to kCheckpointFormat), or 0.
int formatNumber(const std::string &name) {
  for (int f = 1; f <= kCheckpointFormat; ++f)
    if (name == "planc-checkpoint-" + std::to_string(f)) return f;
  return 0;
}

/// Reads and checks `folder`/index.json; nothing of it is taken as written.
Result<CheckpointIndex> readIndexFile(const fs::path &folder) {
  CheckpointIndex index;
  index.folder = folder.string();
  index.indexPath = (folder / kIndex).string();
  Result<std::string> text = readWholeFile(index.indexPath);
  if (!text.ok()) return errorStatus(text.error());
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  auto bad = [&](const std::string &why) { return errorStatus("'" + index.indexPath + "' is not a checkpoint index: " + why); };
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  if (!j.contains("format") || !j["format"].is_string()) return bad("no format");
  index.format = formatNumber(j["format"].get<std::string>());
  if (!index.format)
    return bad("its format '" + j["format"].get<std::string>() + "' is not one this build reads (planc-checkpoint-1 to " +
               kCheckpointFormatName + "; a newer planc wrote it?)");
  if (!j.contains("step") || !j["step"].is_number_integer() || !j.contains("seed") || !j["seed"].is_number_integer() ||
      !j.contains("plan") || !j["plan"].is_string())
    return bad("no plan, step or seed");
  if (j["step"].is_number_unsigned() ? j["step"].get<uint64_t>() > uint64_t(INT64_MAX) : j["step"].get<int64_t>() < 0)
    return bad("its step " + j["step"].dump() + " is not a number of steps done");
  if (!j["seed"].is_number_unsigned()) return bad("its seed " + j["seed"].dump() + " is negative");
  index.plan = j["plan"].get<std::string>();
  index.build = j.contains("build") && j["build"].is_string() ? j["build"].get<std::string>() : std::string();
  index.step = j["step"].get<int64_t>();
  index.seed = j["seed"].get<uint64_t>();
  if (index.format >= 2) {
    if (!j.contains("ranks") || !j["ranks"].is_number_unsigned() || j["ranks"].get<uint64_t>() < 1 ||
        j["ranks"].get<uint64_t>() > (1u << 24))
      return bad("its ranks are not a positive number");
    index.ranks = j["ranks"].get<int64_t>();
    int64_t product = 1;
    if (!j.contains("mesh") || !intList(j["mesh"], index.mesh) || index.mesh.size() != 5 ||
        std::any_of(index.mesh.begin(), index.mesh.end(), [](int64_t a) { return a < 1 || a > (1 << 24); }))
      return bad("its mesh is not five positive axis sizes");
    for (int64_t a : index.mesh)
      if (__builtin_mul_overflow(product, a, &product)) return bad("its mesh overflows");
    if (product != index.ranks)
      return bad("its mesh " + shapeText(index.mesh) + " has " + std::to_string(product) + " ranks, not its " +
                 std::to_string(index.ranks));
  }
  if (index.format >= 3) {
    if (!j.contains("lineage") || !j["lineage"].is_string() || j["lineage"].get<std::string>().empty())
      return bad("no lineage");
    index.lineage = j["lineage"].get<std::string>();
    if (!j.contains("files") || !j["files"].is_object()) return bad("no files' checksums");
    for (const auto &[file, f] : j["files"].items()) {
      FileDigest d;
      if (!f.is_object() || !f.contains("bytes") || !f["bytes"].is_number_unsigned() || !f.contains("crc32c") ||
          !f["crc32c"].is_string() || !parseCrc32cText(f["crc32c"].get<std::string>()))
        return bad("file '" + file + "' has no size and CRC-32C");
      d.bytes = f["bytes"].get<uint64_t>();
      d.crc = *parseCrc32cText(f["crc32c"].get<std::string>());
      index.files[file] = d;
    }
  }
  if (!j.contains("tensors") || !j["tensors"].is_object()) return bad("no tensors");
  if (j.contains("names")) {
    Result<NameMap> names = nameMapFromJson(j["names"]);
    if (!names.ok()) return bad(names.error());
    index.names = std::move(*names);
  }
  static const std::regex kFileName(R"(rank-(0|[1-9][0-9]{0,8})\.safetensors)");
  for (const auto &[name, t] : j["tensors"].items()) {
    CheckpointIndex::Tensor tensor;
    std::optional<ElementType> type = t.contains("dtype") && t["dtype"].is_string()
                                          ? parseElementType(t["dtype"].get<std::string>())
                                          : std::nullopt;
    if (!type || !t.contains("shape") || !intList(t["shape"], tensor.shape) || !t.contains("files") ||
        !t["files"].is_array())
      return bad("tensor '" + name + "' has no dtype, shape or files");
    tensor.type = *type;
    tensor.sharding = t.contains("sharding") && t["sharding"].is_string() ? t["sharding"].get<std::string>() : "";
    // Sizes without overflow: a reader allocates blocks of these shapes.
    int64_t bytes = int64_t(byteSize(tensor.type));
    for (int64_t d : tensor.shape)
      if (d < 0 || __builtin_mul_overflow(bytes, d, &bytes))
        return bad("tensor '" + name + "' has the shape " + shapeText(tensor.shape) +
                   (d < 0 ? ", with a negative size" : ", whose size overflows"));
    for (const auto &f : t["files"]) {
      CheckpointIndex::FileBlock b;
      if (!f.is_object() || !f.contains("file") || !f["file"].is_string() || !f.contains("block") ||
          !intList(f["block"], b.block.shape))
        return bad("a file of tensor '" + name + "' has no name or block");
      b.file = f["file"].get<std::string>();
      std::smatch m;
      if (!std::regex_match(b.file, m, kFileName)) return bad("tensor '" + name + "' names a file '" + b.file + "'");
      b.rank = f.contains("rank") && f["rank"].is_number_integer() ? f["rank"].get<int64_t>() : 0;
      if (index.format >= 2 && (b.rank != std::stoll(m[1].str()) || b.rank >= index.ranks))
        return bad("tensor '" + name + "' says '" + b.file + "' is of rank " + std::to_string(b.rank) + " (of " +
                   std::to_string(index.ranks) + ")");
      if (index.format >= 3 && !index.files.count(b.file))
        return bad("tensor '" + name + "' is in '" + b.file + "', which has no checksum");
      // Format 1 (one rank) had no offsets: its blocks start at 0.
      if (!f.contains("offset")) b.block.offset.assign(b.block.shape.size(), 0);
      else if (!intList(f["offset"], b.block.offset)) return bad("a block of tensor '" + name + "' has no offset");
      if (b.block.shape.size() != tensor.shape.size() || b.block.offset.size() != tensor.shape.size())
        return bad("a block of tensor '" + name + "' has another rank than its shape " + shapeText(tensor.shape));
      // A block is no larger than the global shape; it may start past it
      // (all padding: an uneven split's last ranks), but never so far that
      // its end overflows.
      for (size_t d = 0; d < tensor.shape.size(); ++d)
        if (b.block.shape[d] < 0 || b.block.shape[d] > tensor.shape[d] || b.block.offset[d] < 0 ||
            b.block.offset[d] > (int64_t(1) << 62))
          return bad("the block of tensor '" + name + "' in '" + b.file + "' (" + shapeText(b.block.shape) + " at " +
                     shapeText(b.block.offset) + ") is not within its shape " + shapeText(tensor.shape));
      tensor.files.push_back(std::move(b));
    }
    index.tensors.emplace(name, std::move(tensor));
  }
  // Last, the index's own checksum, of the compact JSON of every other
  // field (after the checks above, whose errors say more): required from
  // format 3 on, and checked wherever there is one (a damaged format field
  // does not pass the index off as an older one).
  if (index.format >= 3 || j.contains("checksum")) {
    if (!j.contains("checksum") || !j["checksum"].is_string() ||
        !parseCrc32cText(j["checksum"].get<std::string>()))
      return bad("no checksum");
    const uint32_t recorded = *parseCrc32cText(j["checksum"].get<std::string>());
    nlohmann::json rest = j;
    rest.erase("checksum");
    const uint32_t actual = crc32c(rest.dump());
    if (actual != recorded)
      return errorStatus("'" + index.indexPath + "' does not match its checksum (CRC-32C " + crc32cText(recorded) +
                         " when written, " + crc32cText(actual) +
                         " now): the index is corrupt or was edited, and no field of it is trusted");
  }
  return index;
}

} // namespace

std::string planc::runtime::checkpointIndexText(const nlohmann::json &index) {
  // Of the other fields' compact JSON: the text readIndexFile checks.
  nlohmann::json out = index;
  out.erase("checksum");
  const std::string checksum = crc32cText(crc32c(out.dump()));
  out["checksum"] = checksum;
  return out.dump(2) + "\n";
}

std::string planc::runtime::newCheckpointLineage() {
  std::random_device device;
  uint64_t bits = (uint64_t(device()) << 32) ^ device();
  bits ^= uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()) * 0x9e3779b97f4a7c15ull;
  bits ^= uint64_t(::getpid()) << 17;
  return crc32cText(uint32_t(bits >> 32)) + crc32cText(uint32_t(bits));
}

CheckpointListing planc::runtime::listCheckpoints(const std::string &dir) {
  CheckpointListing out;
  std::error_code ec;
  static const std::regex kStepFolder(R"(step-[0-9]{8,})");
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code ignored;
    if (!it->is_directory(ignored)) continue;
    const std::string name = it->path().filename().string(), path = it->path().string();
    if (!std::regex_match(name, kStepFolder)) {
      out.warnings.push_back("'" + path + "' is not a checkpoint (a step-<N> folder, N of eight digits); ignored");
      continue;
    }
    if (!fs::exists(it->path() / kIndex, ignored)) continue; // an interrupted checkpoint
    Result<CheckpointIndex> index = readIndexFile(it->path());
    if (!index.ok()) {
      out.warnings.push_back(index.error() + "; '" + path + "' ignored");
      continue;
    }
    if (fs::path(checkpointFolder(dir, index->step)).filename() != name) {
      out.warnings.push_back("'" + index->indexPath + "' is of step " + std::to_string(index->step) +
                             ", not of its folder's; ignored");
      continue;
    }
    out.complete.push_back({path, index->step, index->lineage});
  }
  std::sort(out.complete.begin(), out.complete.end(),
            [](const CheckpointEntry &a, const CheckpointEntry &b) { return a.step < b.step; });
  std::sort(out.warnings.begin(), out.warnings.end());
  return out;
}

Result<CheckpointIndex> planc::runtime::readCheckpointIndex(const std::string &path) {
  std::error_code ec;
  fs::path folder = path;
  if (!fs::exists(folder, ec)) return errorStatus("'" + path + "' does not exist");
  std::vector<std::string> warnings;
  if (!fs::exists(folder / kIndex, ec)) {
    CheckpointListing listing = listCheckpoints(folder.string());
    if (listing.complete.empty()) {
      std::string why = listing.warnings.empty() ? "" : " (" + listing.warnings.front() + ")";
      return errorStatus("'" + path + "' holds no complete checkpoint (a step-<N> folder with " + kIndex + ")" + why);
    }
    folder = listing.complete.back().folder;
    warnings = std::move(listing.warnings);
  }
  Result<CheckpointIndex> index = readIndexFile(folder);
  if (index.ok()) index->warnings = std::move(warnings);
  return index;
}

Result<const SafetensorsContents *> CheckpointReader::open(const std::string &file, int64_t rank) {
  auto it = opened.find(file);
  if (it != opened.end()) return &it->second;
  const std::string path = (fs::path(index.folder) / file).string();
  Result<std::string> bytes = readWholeFile(path);
  if (!bytes.ok()) return errorStatus(bytes.error());
  // The tensors' own checksums first: their error names the tensor.
  Result<SafetensorsContents> c = parseSafetensors(*bytes, path);
  if (!c.ok()) return errorStatus(c.error());
  if (index.format >= 3 && !c->checksummed)
    return errorStatus("'" + path + "' records no checksums, but its index '" + index.indexPath + "' is of format 3");
  // Then what the file says of itself against what the index says: a
  // whole, valid file of another step, run or rank is not this one's.
  std::string mesh;
  if (!index.mesh.empty()) mesh = nlohmann::json(index.mesh).dump();
  const std::pair<const char *, std::string> expected[] = {
      {"plan", index.plan},
      {"build", index.build},
      {"step", std::to_string(index.step)},
      {"seed", std::to_string(index.seed)},
      {"rank", std::to_string(rank)},
      {"mesh", mesh}};
  for (const auto &[key, want] : expected) {
    auto m = c->metadata.find(key);
    if (m == c->metadata.end()) {
      // Format 3 files record every one; earlier ones had no mesh.
      if (index.format >= 3) return errorStatus("'" + path + "': its metadata has no " + key);
      continue;
    }
    if (m->second != want)
      return errorStatus("'" + path + "': its metadata says " + key + " " + m->second + ", but '" + index.indexPath +
                         "' says " + want + ": the file is of another checkpoint");
  }
  // Last, every byte of the file against the size and CRC-32C the index recorded.
  if (index.format >= 3) {
    const FileDigest &want = index.files.at(file);
    const uint32_t crc = crc32c(*bytes);
    if (bytes->size() != want.bytes || crc != want.crc)
      return errorStatus("'" + path + "' is not the file its index recorded (" + counted(int64_t(want.bytes), "byte") +
                         ", CRC-32C " + crc32cText(want.crc) + " when written; " +
                         counted(int64_t(bytes->size()), "byte") + ", " + crc32cText(crc) +
                         " now): it is corrupt or was replaced");
  }
  return &opened.emplace(file, std::move(*c)).first->second;
}

Status CheckpointReader::read(const std::string &name, const Block &to, ElementType type, int64_t preferRank,
                              uint8_t *out) {
  auto found = index.tensors.find(name);
  if (found == index.tensors.end()) return errorStatus("'" + index.indexPath + "' has no tensor '" + name + "'");
  const CheckpointIndex::Tensor &t = found->second;
  if (t.type != type)
    return errorStatus("tensor '" + name + "' is " + spelling(t.type) + " in '" + index.indexPath + "', but " +
                       spelling(type) + " here");
  const std::vector<int64_t> &global = t.shape;
  int64_t n = 1;
  for (int64_t d : to.shape) n *= d;
  std::memset(out, 0, size_t(n) * byteSize(type));
  // Which elements a file gave, so replicas are read once.
  std::vector<uint8_t> covered(size_t(n), 0), mask(size_t(n), 0);
  const int64_t need = elementsInside(to, global);
  int64_t have = 0;
  std::vector<const CheckpointIndex::FileBlock *> order;
  for (const auto &f : t.files)
    if (f.rank == preferRank) order.insert(order.begin(), &f);
    else order.push_back(&f);
  for (const CheckpointIndex::FileBlock *f : order) {
    if (have >= need) break;
    int64_t m = 1;
    for (int64_t d : f->block.shape) m *= d;
    std::vector<uint8_t> ones(size_t(m), 1);
    std::fill(mask.begin(), mask.end(), 0);
    if (!copyOverlap(ones.data(), f->block, mask.data(), to, global, 1)) continue;
    bool adds = false;
    for (size_t i = 0; i < mask.size() && !adds; ++i) adds = mask[i] && !covered[i];
    if (!adds) continue;
    Result<const SafetensorsContents *> contents = open(f->file, f->rank);
    if (!contents.ok()) return errorStatus(contents.error());
    const std::string file = (fs::path(index.folder) / f->file).string();
    auto it = (*contents)->tensors.find(name);
    if (it == (*contents)->tensors.end()) return errorStatus("'" + file + "' has no tensor '" + name + "'");
    if (it->second.type != type)
      return errorStatus("'" + file + "': tensor '" + name + "' is " + spelling(it->second.type) + ", but the index says " +
                         spelling(type));
    if (it->second.shape != f->block.shape)
      return errorStatus("'" + file + "': tensor '" + name + "' is " + shapeText(it->second.shape) +
                         ", but the index says " + shapeText(f->block.shape));
    copyOverlap(it->second.bytes.data(), f->block, out, to, global, byteSize(type));
    for (size_t i = 0; i < mask.size(); ++i)
      if (mask[i] && !covered[i]) {
        covered[i] = 1;
        ++have;
      }
  }
  if (have < need)
    return errorStatus("the files of '" + index.folder + "' hold " + std::to_string(have) + " of the " +
                       counted(int64_t(need), "element") + " of tensor '" + name + "' needed");
  return Status::success();
}
