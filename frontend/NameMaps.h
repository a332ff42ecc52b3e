//===- frontend/NameMaps.h - `names` declarations against the model -*- C++ -*-===//
//
// A name map says how the tensors of a file of other names (Hugging Face's
// `model.layers.3.self_attn.q_proj.weight`) are the plan's parameters
// (`blocks.3.attention.wq`). It is declared in .plan text -- std.hf holds
// the maps of Llama, Qwen2, GPT-2 and GPT-NeoX -- and a plan follows one
// with `names = hf_llama` in its train block (docs/checkpoints.md):
//
//   names hf_llama {
//     config = "llama"
//     "model.embed_tokens.weight" = "tok_embeddings.weight"
//     "model.layers.{i}.self_attn.q_proj.weight" = transpose("blocks.{i}.*.wq")
//     "lm_head.weight" = transpose("output.weight")
//     "lm_head.weight" = tied("model.embed_tokens.weight")
//     "model.layers.{i}.self_attn.rotary_emb.inv_freq" = ignored
//   }
//
// A rule is `"file pattern" = value`. Patterns: `{i}` is a placeholder for
// a layer index (digits), bound by the parameter's path and written into the
// file's name; in the parameter pattern `*` is one path segment; in the file
// pattern `[transformer.]` is text a file may or may not have (written
// without it). The value is a parameter pattern, or one wrapped in what the
// file's tensor is of the parameter: `transpose(p)` (nn.Linear's [out, in]),
// `columns(p, 1, 0, 2)` (the parameter's `@columns` factors in another
// order), `crop(p)` (a file with more rows, of which the plan takes the
// first); `tied("file name")` (the tensor equals that one when the plan has
// no parameter of its own for it: a tied head), `ignored` (buffers).
//
// resolveNameMap() checks the map the plan follows against the model and
// lists, for every parameter it names, its file name and the steps from the
// parameter to the file's tensor; the compiler hands that table to the
// executable, which loads and writes by it without patterns.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_FRONTEND_NAMEMAPS_H
#define PLANC_FRONTEND_NAMEMAPS_H

#include "frontend/Program.h"
#include "frontend/Sema.h"
#include "support/Diagnostics.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace planc {

/// One step from a parameter to the file's tensor, applied in order when a
/// file is written and undone in reverse when one is read.
struct NameMapStep {
  enum class Kind { Transpose, Columns, Crop };
  Kind kind = Kind::Transpose;
  std::vector<int64_t> factors; // Columns: the parameter's @columns factors
  std::vector<int64_t> order;   // Columns: the file's factor order (indices into factors)
};

/// A parameter of the plan and its name in the file.
struct NamedParam {
  std::string param;              // the parameter's path
  std::vector<std::string> files; // its file name, then the spellings with optional text
  std::vector<NameMapStep> steps;
  llvm::SMRange rule;
};

/// A file tensor the plan has no parameter for, which must equal another.
struct TiedName {
  std::vector<std::string> files;
  std::string sameAs; // the file name of the tensor it equals
};

/// A name map checked against the model: everything the executable needs.
struct ResolvedNameMap {
  std::string name;                    // "hf_llama"
  std::string family;                  // config = "llama": the config.json written with it; "" none
  std::map<std::string, std::string> configOverrides; // field -> JSON value
  std::vector<NamedParam> params;      // in the model's parameter order
  std::vector<TiedName> tied;
  std::vector<std::string> ignored;    // every spelling, placeholders filled
  llvm::SMRange setting;               // `names = ...` in the train block
  bool empty() const { return name.empty(); }
};

/// The config families a map may declare (`config = "llama"`), as
/// Hugging Face's `model_type`.
const std::vector<std::string> &nameMapFamilies();

/// Checks every `names` declaration of the program (patterns, values,
/// settings) and, when the plan follows one (`names = ...`), resolves it
/// against `model`. False after an error.
bool checkNameMaps(const Program &program, const PlanConfig &config, const ModelInfo &model,
                   DiagnosticEngine &diags, ResolvedNameMap &resolved);

} // namespace planc

#endif
