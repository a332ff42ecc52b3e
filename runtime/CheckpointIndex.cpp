//===- runtime/CheckpointIndex.cpp - reading a checkpoint by its index ----===//

#include "runtime/CheckpointIndex.h"
#include "runtime/ReadFile.h"
#include "runtime/Plural.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
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

std::vector<std::string> planc::runtime::completeCheckpoints(const std::string &dir) {
  std::vector<std::string> found;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.rfind("step-", 0) == 0 && fs::is_regular_file(it->path() / kIndex, ec)) found.push_back(it->path().string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

Result<CheckpointIndex> planc::runtime::readCheckpointIndex(const std::string &path) {
  std::error_code ec;
  fs::path folder = path;
  if (!fs::exists(folder, ec)) return errorStatus("'" + path + "' does not exist");
  if (!fs::is_regular_file(folder / kIndex, ec)) {
    std::vector<std::string> all = completeCheckpoints(folder.string());
    if (all.empty())
      return errorStatus("'" + path + "' holds no complete checkpoint (a step-<N> folder with " + kIndex + ")");
    folder = all.back();
  }
  CheckpointIndex index;
  index.folder = folder.string();
  index.indexPath = (folder / kIndex).string();
  Result<std::string> text = readWholeFile(index.indexPath);
  if (!text.ok()) return errorStatus(text.error());
  const nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  auto bad = [&](const std::string &why) { return errorStatus("'" + index.indexPath + "' is not a checkpoint index: " + why); };
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  if (!j.contains("step") || !j["step"].is_number_integer() || !j.contains("seed") || !j["seed"].is_number_unsigned() ||
      !j.contains("plan") || !j["plan"].is_string())
    return bad("no plan, step or seed");
  index.plan = j["plan"].get<std::string>();
  index.build = j.value("build", std::string());
  index.step = j["step"].get<int64_t>();
  index.seed = j["seed"].get<uint64_t>();
  if (!j.contains("tensors") || !j["tensors"].is_object()) return bad("no tensors");
  if (j.contains("names")) {
    Result<NameMap> names = nameMapFromJson(j["names"]);
    if (!names.ok()) return bad(names.error());
    index.names = std::move(*names);
  }
  static const std::regex kFileName(R"(rank-[0-9]{1,9}\.safetensors)");
  for (const auto &[name, t] : j["tensors"].items()) {
    CheckpointIndex::Tensor tensor;
    std::optional<ElementType> type = t.contains("dtype") && t["dtype"].is_string()
                                          ? parseElementType(t["dtype"].get<std::string>())
                                          : std::nullopt;
    if (!type || !t.contains("shape") || !intList(t["shape"], tensor.shape) || !t.contains("files") ||
        !t["files"].is_array())
      return bad("tensor '" + name + "' has no dtype, shape or files");
    tensor.type = *type;
    tensor.sharding = t.value("sharding", std::string());
    for (const auto &f : t["files"]) {
      CheckpointIndex::FileBlock b;
      if (!f.is_object() || !f.contains("file") || !f["file"].is_string() || !f.contains("block") ||
          !intList(f["block"], b.block.shape))
        return bad("a file of tensor '" + name + "' has no name or block");
      b.file = f["file"].get<std::string>();
      if (!std::regex_match(b.file, kFileName)) return bad("tensor '" + name + "' names a file '" + b.file + "'");
      b.rank = f.contains("rank") && f["rank"].is_number_integer() ? f["rank"].get<int64_t>() : 0;
      // Format 1 (one rank) had no offsets: its blocks start at 0.
      if (!f.contains("offset")) b.block.offset.assign(b.block.shape.size(), 0);
      else if (!intList(f["offset"], b.block.offset)) return bad("a block of tensor '" + name + "' has no offset");
      if (b.block.shape.size() != tensor.shape.size() || b.block.offset.size() != tensor.shape.size())
        return bad("a block of tensor '" + name + "' has another rank than its shape " + shapeText(tensor.shape));
      tensor.files.push_back(std::move(b));
    }
    index.tensors.emplace(name, std::move(tensor));
  }
  return index;
}

Result<const SafetensorsContents *> CheckpointReader::open(const std::string &file) {
  auto it = opened.find(file);
  if (it == opened.end()) {
    Result<SafetensorsContents> c = readSafetensors((fs::path(index.folder) / file).string());
    if (!c.ok()) return errorStatus(c.error());
    it = opened.emplace(file, std::move(*c)).first;
  }
  return &it->second;
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
    Result<const SafetensorsContents *> contents = open(f->file);
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
