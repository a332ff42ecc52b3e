//===- frontend/Sema.h - names, dims, shapes and annotations ----*- C++ -*-===//
//
// Sema elaborates the model: it resolves every name, folds dims to 64-bit
// integers (with overflow checks), instantiates each layer call with its
// arguments (as a C++ template is instantiated), checks the shape and dtype of
// every operation, and validates annotations against the mesh. A value that
// failed to check is an error value that silences errors about its uses, so
// independent errors are all reported without cascades.
//
// The result is the flat list of parameters and inputs with their layer paths,
// which the summary prints and lowering (frontend -> IR) walks again.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_FRONTEND_SEMA_H
#define PLANC_FRONTEND_SEMA_H

#include "frontend/AST.h"
#include "frontend/Config.h"
#include "support/Diagnostics.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace planc {

using Shape = std::vector<int64_t>;
std::string formatShape(const Shape &shape);

/// `@shard(axis, dim)` on a parameter, input or value.
struct ShardSpec {
  MeshAxis axis;
  int64_t dim;
  llvm::SMRange range;
};

enum class InitKind { Normal, ScaledNormal, Zeros, Ones };

struct ParamInfo {
  std::string path;        // blocks.3.attention.w_qkv
  Shape shape;
  std::string dtype;       // the master dtype unless the plan says otherwise
  std::string layerKind;   // the layer that declares it: "attention", "linear", ...
  InitKind init = InitKind::Normal;
  double initStd = 0.02;   // the effective std (scaled_normal already divided)
  bool frozen = false;
  /// @weight_decay (true) or @no_weight_decay (false), the parameter's own or
  /// its innermost enclosing call's or repeat's; none: the optimizer's rule.
  std::optional<bool> weightDecay;
  std::vector<ShardSpec> shards;
  /// `@columns(heads, 3, d)`: how the last dim is grouped, outermost factor
  /// first (a name map reorders columns by them); empty when not declared.
  std::vector<int64_t> columns;
  llvm::SMRange range;     // the `param` declaration
  llvm::SMRange callRange; // the outermost call in the model that made it
  uint64_t numel() const;
};

struct InputInfo {
  std::string name;
  Shape shape;
  std::string dtype;
  llvm::SMRange range;
};

struct ModelInfo {
  std::string name;
  llvm::SMRange nameRange;
  std::vector<ParamInfo> params;
  std::vector<InputInfo> inputs;
  /// Iterations of the model's top-level `repeat` blocks: the transformer layers.
  int64_t numLayers = 0;
  llvm::SMRange layersRange;
  /// Every `@stage(k)` written, for the pipeline partitioner.
  std::vector<std::pair<int64_t, llvm::SMRange>> stages;
  uint64_t totalParams() const;
  uint64_t trainableParams() const;
};

class Program;

/// Checks every layer body for what can be checked without arguments (names,
/// arity, annotations) and elaborates the model if there is one. Returns false
/// if errors were reported.
bool runSema(const Program &program, const PlanConfig &config, DiagnosticEngine &diags,
             ModelInfo &model);

} // namespace planc

#endif
