//===- runtime/Checkpoint.cpp - a compiled plan's checkpoints -------------===//

#include "runtime/Checkpoint.h"
#include "runtime/AtomicFile.h"
#include "runtime/BlockCopy.h"
#include "runtime/CheckpointIndex.h"
#include "runtime/Plural.h"
#include "runtime/ElementBits.h"
#include "runtime/ReadFile.h"
#include "runtime/Safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <regex>
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

Status planc::runtime::saveCheckpoint(const ExecutableModel &model, const uint8_t *arena, const std::string &dir,
                                      int64_t stepsDone, uint64_t seed, int64_t keep, const RankSync *sync) {
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
  std::map<std::string, std::string> meta = {{"plan", model.plan},
                                             {"build", model.buildId},
                                             {"step", std::to_string(stepsDone)},
                                             {"seed", std::to_string(seed)},
                                             {"rank", std::to_string(model.rank)}};
  Status wrote = writeSafetensors((fs::path(folder) / rankFileName(model.rank)).string(), tensors, meta);
  if (!wrote.ok()) wrote = errorStatus(wrote.message() + keptNote);
  if (Status s = agreed(std::move(wrote)); !s.ok()) return s;

  // The index last, once every rank's file is durable (AtomicFile.h syncs).
  Status indexed = Status::success();
  if (lead) {
    nlohmann::json index = {{"format", "planc-checkpoint-2"}, {"plan", model.plan}, {"build", model.buildId},
                            {"step", stepsDone}, {"seed", seed}, {"ranks", model.ranks},
                            {"mesh", model.mesh}, {"tensors", tensorIndex(model)}};
    indexed = writeFileAtomically((fs::path(folder) / kIndex).string(), index.dump(2) + "\n");
    if (!indexed.ok()) indexed = errorStatus(indexed.message() + keptNote);
  }
  if (Status s = agreed(std::move(indexed)); !s.ok()) return s;

  if (keep > 0 && lead) {
    std::vector<std::string> all = completeCheckpoints(dir);
    // The index goes first: a removal cut short leaves a folder that is not
    // taken for a complete checkpoint.
    for (size_t i = 0; i + size_t(keep) < all.size(); ++i) {
      fs::remove(fs::path(all[i]) / kIndex, ec);
      fs::remove_all(all[i], ec);
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

/// Copies `t`, the whole tensor (or its transpose, with `transpose`), into
/// the buffer of `p`: the rank's block of it, the padding of an uneven
/// split zero; the dtype converted.
Status placeTensor(const ExecParam &p, const HostTensor &t, uint8_t *arena, const std::string &file,
                   const std::string &name, bool transpose = false) {
  const std::vector<int64_t> &global = p.globalShape.empty() ? p.shape : p.globalShape;
  std::vector<int64_t> want = global;
  if (transpose && want.size() == 2) std::swap(want[0], want[1]);
  if (t.shape != want || (transpose && want.size() != 2))
    return errorStatus("'" + file + "': tensor '" + name + "' has shape " + shapeText(t.shape) + ", but the plan's '" +
                       p.name + "' is " + shapeText(global) + (transpose ? " (transposed: " + shapeText(want) + ")" : ""));
  if ((!isFloat(t.type) || !isFloat(p.type)) && (t.type != p.type || transpose))
    return errorStatus("'" + file + "': tensor '" + name + "' is " + spelling(t.type) + ", but the plan's '" + p.name +
                       "' is " + spelling(p.type));
  HostTensor whole = convertedTo(t, p.type);
  if (transpose) {
    const int64_t rows = t.shape[0], cols = t.shape[1];
    const unsigned w = byteSize(p.type);
    HostTensor turned{p.type, global, std::vector<uint8_t>(whole.bytes.size())};
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        std::memcpy(turned.bytes.data() + size_t(c * rows + r) * w, whole.bytes.data() + size_t(r * cols + c) * w, w);
    whole = std::move(turned);
  }
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

} // namespace

Result<Resumed> planc::runtime::loadCheckpoint(const ExecutableModel &model, uint8_t *arena, const std::string &path) {
  Result<CheckpointIndex> index = readCheckpointIndex(path);
  if (!index.ok()) return errorStatus("cannot resume: " + index.error());
  if (index->plan != model.plan)
    return errorStatus("cannot resume: '" + index->indexPath + "' is a checkpoint of plan '" + index->plan +
                       "', not of '" + model.plan + "'");
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
  Resumed r;
  r.stepsDone = index->step;
  r.seed = index->seed;
  r.folder = index->folder;
  return r;
}

namespace {

/// How a Hugging Face tensor becomes the plan's parameter.
enum class HfTransform {
  None,
  Transpose,  // nn.Linear's [out, in] to the plan's [in, out]
  QkvColumns, // GPT-2's c_attn columns [3, heads, d] to std.gpt's [heads, 3, d]
  CropRows,   // GPT-2's position table [1024, h] to the plan's [seq, h]: its first rows
};

/// A Hugging Face name and the plan's parameters it may be
/// (runtime/Checkpoint.h): `to` is a regular expression formatted with the
/// name's groups ($1: the layer).
struct HfRule {
  const char *from, *to;
  HfTransform transform;
};
const HfRule kLlamaRules[] = {
    {R"(model\.embed_tokens\.weight)", R"((.*\.)?tok_embeddings\.weight)", HfTransform::None},
    {R"(model\.layers\.(\d+)\.input_layernorm\.weight)", R"(blocks\.$1\.(.*\.)?attention_norm\.weight)", HfTransform::None},
    {R"(model\.layers\.(\d+)\.post_attention_layernorm\.weight)", R"(blocks\.$1\.(.*\.)?ffn_norm\.weight)",
     HfTransform::None},
    {R"(model\.layers\.(\d+)\.self_attn\.([qkvo])_proj\.weight)", R"(blocks\.$1\.(.*\.)?w$2(\.weight)?)",
     HfTransform::Transpose},
    {R"(model\.layers\.(\d+)\.mlp\.gate_proj\.weight)", R"(blocks\.$1\.(.*\.)?w1(\.weight)?)", HfTransform::Transpose},
    {R"(model\.layers\.(\d+)\.mlp\.up_proj\.weight)", R"(blocks\.$1\.(.*\.)?w3(\.weight)?)", HfTransform::Transpose},
    {R"(model\.layers\.(\d+)\.mlp\.down_proj\.weight)", R"(blocks\.$1\.(.*\.)?w2(\.weight)?)", HfTransform::Transpose},
    {R"(model\.norm\.weight)", R"(norm\.weight)", HfTransform::None},
    {R"(lm_head\.weight)", R"(output\.weight)", HfTransform::Transpose},
};
// GPT-2 (GPT2LMHeadModel's names, with or without `transformer.`). Its
// Conv1D weights are [in, out] as the plan's; lm_head is the tied wte and
// is skipped, as the causal-mask buffers (attn.bias, attn.masked_bias) are.
const HfRule kGpt2Rules[] = {
    {R"((?:transformer\.)?wte\.weight)", R"((.*\.)?wte\.weight)", HfTransform::None},
    {R"((?:transformer\.)?wpe\.weight)", R"((.*\.)?wpe\.weight)", HfTransform::CropRows},
    {R"((?:transformer\.)?h\.(\d+)\.ln_([12])\.(weight|bias))", R"(blocks\.$1\.(.*\.)?ln_$2\.$3)", HfTransform::None},
    {R"((?:transformer\.)?h\.(\d+)\.attn\.c_attn\.weight)", R"(blocks\.$1\.(.*\.)?w_qkv)", HfTransform::QkvColumns},
    {R"((?:transformer\.)?h\.(\d+)\.attn\.c_attn\.bias)", R"(blocks\.$1\.(.*\.)?b_qkv)", HfTransform::QkvColumns},
    {R"((?:transformer\.)?h\.(\d+)\.attn\.c_proj\.weight)", R"(blocks\.$1\.(.*\.)?w_o)", HfTransform::None},
    {R"((?:transformer\.)?h\.(\d+)\.attn\.c_proj\.bias)", R"(blocks\.$1\.(.*\.)?b_o)", HfTransform::None},
    {R"((?:transformer\.)?h\.(\d+)\.mlp\.c_fc\.weight)", R"(blocks\.$1\.(.*\.)?w_in)", HfTransform::None},
    {R"((?:transformer\.)?h\.(\d+)\.mlp\.c_fc\.bias)", R"(blocks\.$1\.(.*\.)?b_in)", HfTransform::None},
    {R"((?:transformer\.)?h\.(\d+)\.mlp\.c_proj\.weight)", R"(blocks\.$1\.(.*\.)?w_out)", HfTransform::None},
    {R"((?:transformer\.)?h\.(\d+)\.mlp\.c_proj\.bias)", R"(blocks\.$1\.(.*\.)?b_out)", HfTransform::None},
    {R"((?:transformer\.)?ln_f\.(weight|bias))", R"((.*\.)?ln_f\.$1)", HfTransform::None},
};

struct HfFamily {
  const char *name;
  const HfRule *rules;
  size_t count;
};
const HfFamily kLlama{"Hugging Face Llama", kLlamaRules, std::size(kLlamaRules)};
const HfFamily kGpt2{"Hugging Face GPT-2", kGpt2Rules, std::size(kGpt2Rules)};

/// The family whose names the file has: Llama's model.layers.N, GPT-2's
/// h.N (the plan's own names are blocks.N); none for the plan's names.
const HfFamily *huggingFaceFamilyOf(const SafetensorsContents &c) {
  static const std::regex gpt2(R"((transformer\.)?h\.\d+\..*)");
  for (const auto &[name, t] : c.tensors) {
    if (name.rfind("model.layers.", 0) == 0 || name == "model.embed_tokens.weight") return &kLlama;
    if (std::regex_match(name, gpt2)) return &kGpt2;
  }
  return nullptr;
}

/// `t` as the rule makes it for `p` (a transpose is placeTensor's); an
/// error when it cannot be made. `note` says what was cropped.
Result<HostTensor> transformed(const HostTensor &t, const ExecParam &p, HfTransform how, const std::string &file,
                               const std::string &name, std::string &note) {
  const std::vector<int64_t> &global = p.globalShape.empty() ? p.shape : p.globalShape;
  if (how == HfTransform::CropRows && t.shape.size() == 2 && global.size() == 2 && t.shape[1] == global[1] &&
      t.shape[0] > global[0]) {
    // The plan's context is shorter than the checkpoint's: its first rows,
    // as nanoGPT's crop_block_size.
    HostTensor out;
    out.type = t.type;
    out.shape = global;
    out.bytes.assign(t.bytes.begin(), t.bytes.begin() + long(out.numel() * int64_t(byteSize(t.type))));
    note += "; '" + name + "': its first " + std::to_string(global[0]) + " of " + std::to_string(t.shape[0]) + " rows";
    return out;
  }
  if (how != HfTransform::QkvColumns) return t;
  if (p.qkvHeads <= 0)
    return errorStatus("'" + file + "': tensor '" + name + "' is GPT-2's c_attn ([3, heads, d] columns), but the plan's '" +
                       p.name + "' is not std.gpt's attention weight of [heads, 3, d] columns (its head count is unknown)");
  const int64_t cols = t.shape.empty() ? 0 : t.shape.back(), heads = p.qkvHeads;
  if (t.shape != global || cols % (3 * heads) != 0 || !isFloat(t.type))
    return errorStatus("'" + file + "': tensor '" + name + "' has shape " + shapeText(t.shape) + " (" +
                       spelling(t.type) + "), but the plan's '" + p.name + "' is " + shapeText(global) + " with " +
                       std::to_string(heads) + " heads");
  const int64_t d = cols / (3 * heads), rows = t.numel() / std::max<int64_t>(cols, 1);
  std::vector<double> in(size_t(t.numel())), out(in.size());
  decodeBuffer(t.type, t.bytes.data(), in.size(), in.data());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t part = 0; part < 3; ++part)
      for (int64_t n = 0; n < heads; ++n)
        for (int64_t i = 0; i < d; ++i)
          out[size_t(r * cols + (n * 3 + part) * d + i)] = in[size_t(r * cols + (part * heads + n) * d + i)];
  HostTensor result;
  result.type = ElementType::F64;
  result.shape = t.shape;
  result.bytes.resize(out.size() * sizeof(double));
  encodeBuffer(ElementType::F64, out.data(), out.size(), result.bytes.data());
  return result;
}

/// Loads a file of Hugging Face names by the family's map: every tensor the
/// map knows onto the one model parameter it names; the others (rotary
/// tables, mask buffers, a tied head) are skipped. Parameters it does not
/// cover keep their values (LoRA's adapters); the log line says how many.
Status loadHuggingFace(const ExecutableModel &model, const SafetensorsContents &c, const HfFamily &family,
                       uint8_t *arena, const std::string &file, std::string &summary) {
  std::vector<bool> loaded(model.params.size(), false);
  size_t used = 0, skipped = 0;
  std::string notes;
  for (const auto &[name, t] : c.tensors) {
    const HfRule *rule = nullptr;
    std::smatch m;
    for (size_t r = 0; r < family.count; ++r)
      if (std::regex_match(name, m, std::regex(family.rules[r].from))) {
        rule = &family.rules[r];
        break;
      }
    if (!rule) {
      ++skipped;
      continue;
    }
    const std::regex to(m.format(rule->to));
    const ExecParam *target = nullptr;
    size_t index = 0;
    for (size_t i = 0; i < model.params.size(); ++i) {
      const ExecParam &p = model.params[i];
      if (!p.modelParam || !std::regex_match(p.name, to)) continue;
      if (target)
        return errorStatus("--init-from: '" + file + "': tensor '" + name + "' could be '" + target->name + "' or '" +
                           p.name + "' of the plan");
      target = &p;
      index = i;
    }
    if (!target)
      return errorStatus("--init-from: '" + file + "': tensor '" + name + "' (" + family.name +
                         " names) has no parameter of the plan to go to (looked for one named like '" +
                         m.format(rule->to) + "')");
    Result<HostTensor> ready = transformed(t, *target, rule->transform, file, name, notes);
    if (!ready.ok()) return errorStatus("--init-from: " + ready.error());
    if (Status s = placeTensor(*target, *ready, arena, file, name, rule->transform == HfTransform::Transpose); !s.ok())
      return errorStatus("--init-from: " + s.message());
    loaded[index] = true;
    ++used;
  }
  size_t kept = 0;
  for (size_t i = 0; i < model.params.size(); ++i) kept += model.params[i].modelParam && !loaded[i];
  summary = "loaded " + counted(int64_t(used), "tensor") + " of '" + file + "' by " + family.name + " names (" +
            std::to_string(skipped) + " skipped" + notes + "); " + counted(int64_t(kept), "parameter") +
            (kept == 1 ? " keeps its initial value" : " keep their initial values");
  return Status::success();
}

} // namespace

Status planc::runtime::loadInitialWeights(const ExecutableModel &model, uint8_t *arena, const std::string &file,
                                          std::string &summary) {
  Result<SafetensorsContents> contents = readSafetensors(file);
  if (!contents.ok()) return errorStatus("--init-from: " + contents.error());
  if (const HfFamily *family = huggingFaceFamilyOf(*contents))
    return loadHuggingFace(model, *contents, *family, arena, file, summary);
  summary = "loaded the parameters of '" + file + "'";
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
