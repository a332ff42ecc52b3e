//===- frontend/ConfigReader.h - reading train/cluster/parallel settings -*- C++ -*-===//
//
// Private to Config*.cpp. Config.cpp turns a block and the --set overrides
// aimed at it into one Entry per key (reporting unknown and duplicate keys);
// the block files (ConfigTrain.cpp, ConfigCluster.cpp, ConfigParallel.cpp) read
// each entry with a Reader, which reports a bad value and returns nothing, so
// the caller keeps its default and goes on to the next setting.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_FRONTEND_CONFIGREADER_H
#define PLANC_FRONTEND_CONFIGREADER_H

#include "frontend/AST.h"
#include "frontend/Config.h"
#include "support/Diagnostics.h"
#include "support/Units.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace planc {
/// `80 GiB` as a plan writes it -> {85899345920, Bytes}; none if the unit is
/// unknown (support/Units.h, which knows nothing of the syntax tree).
inline std::optional<Quantity> toBaseUnits(const ast::QuantityExpr &q) { return toBaseUnits(q.number, q.unit); }
} // namespace planc

namespace planc::config {

using llvm::ArrayRef;
using llvm::SMRange;
using llvm::StringRef;

/// Counts (nodes, mesh axes, pipeline chunks) stay far below this, so products
/// of a few of them cannot overflow 64 bits.
constexpr int64_t kMaxCount = int64_t(1) << 20;
/// Batch sizes and micro-batch counts.
constexpr int64_t kMaxBatch = int64_t(1) << 40;
/// Micro-batches in one optimizer step (global_batch / (micro_batch x dp)):
/// published runs use a few hundred; the memory check follows each one.
constexpr int64_t kMaxMicroBatchesPerStep = 2048;
constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();

/// A key of a block and how it is written, for "'mesh' is written ..." messages.
struct KeySpec {
  const char *name;
  const char *example; // quoted: "'mesh(dp = 2, tp = 4)'"
};

/// A `--set block.key.name=value` aimed at one argument of a setting.
struct ArgOverride {
  std::string name;
  SMRange nameRange;
  const ast::Expr *value = nullptr;
  SMRange range; // the whole option
};

/// One key of a block after the --set overrides.
struct Entry {
  std::string key;
  /// The file's setting, or the --set that replaced it; null when only argument
  /// overrides (`--set train.optimizer.lr=1e-4`) name the key.
  const ast::Setting *setting = nullptr;
  std::vector<ArgOverride> argOverrides;
  SMRange keyRange;
  /// Where later diagnostics point: the setting, or the last --set that touched it.
  SMRange source;
};

struct Block {
  ast::ConfigBlock::Kind kind = ast::ConfigBlock::Kind::Train;
  std::vector<Entry> entries;
  const Entry *find(StringRef key) const {
    for (const Entry &e : entries)
      if (e.key == key) return &e;
    return nullptr;
  }
};

/// One `name = value` of a call, an args setting or a nested block.
struct Field {
  std::string name; // empty for a positional argument
  SMRange nameRange;
  const ast::Expr *value = nullptr;
  SMRange range;
  bool fromOverride = false;
};

/// A value that names a kind and its arguments, whichever way it was written:
/// `adamw(lr = 3e-4)`, `adamw`, `mesh(dp = 2)`, `a100_80gb { memory = 70 GiB }`.
struct Structured {
  std::string head; // empty: no kind written
  SMRange headRange;
  std::vector<Field> fields;
  std::vector<ArgOverride> overrides;
  const ast::Expr *scalar = nullptr; // the value is neither a name nor a call
  bool written = false;              // false: only --set arguments name the setting
};

/// Fields bound to parameter names, positional ones included.
using Bound = std::map<std::string, Field>;

struct NumberRange {
  double min, max;
  bool minOpen, maxOpen;
  const char *what;
};
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr NumberRange kNonNegative{0, kInf, false, false, "a non-negative number"};
constexpr NumberRange kPositive{0, kInf, true, false, "a positive number"};
constexpr NumberRange kFraction{0, 1, false, true, "a number in [0, 1)"};

class Reader {
public:
  explicit Reader(DiagnosticEngine &diags) : diags(diags) {}

  /// Runs `read` on the entry for `key` if there is one, and remembers the
  /// setting as invalid if it reported an error (checkConfig then skips the
  /// cross-checks that would only repeat it).
  template <typename F> void with(const Block &block, StringRef key, F &&read) {
    const Entry *e = block.find(key);
    if (!e) return;
    unsigned before = diags.getNumErrors();
    read(*e);
    if (diags.getNumErrors() != before)
      invalid.push_back((ast::spelling(block.kind) + llvm::Twine('.') + key).str());
  }

  /// The value of a `key = value` or `key value` setting; other forms are reported.
  const ast::Expr *scalar(const Entry &e, const KeySpec &spec);
  /// The kind and arguments of a setting; null after reporting a form error.
  std::optional<Structured> structured(const Entry &e, const KeySpec &spec);
  /// The kind and arguments of a value inside a call (`loss_scale = static(1024)`).
  Structured structured(const ast::Expr &value);

  /// Binds fields to `params`: up to `maxPositional` positional fields in order,
  /// then named ones, then the --set overrides replace what they name. Unknown
  /// names go to `onUnknown` (default: "'owner' has no parameter named ...").
  Bound bind(StringRef owner, const Structured &s, ArrayRef<StringRef> params,
             unsigned maxPositional, StringRef example,
             llvm::function_ref<void(StringRef name, SMRange range)> onUnknown = nullptr);

  std::optional<int64_t> integer(const ast::Expr *e, StringRef key, int64_t min, int64_t max);
  std::optional<double> number(const ast::Expr *e, StringRef key, const NumberRange &range);
  std::optional<bool> boolean(const ast::Expr *e, StringRef key);
  std::optional<std::string> string(const ast::Expr *e, StringRef key);
  /// A quantity of dimension `dim` in base units, positive (or zero if allowed).
  std::optional<double> quantity(const ast::Expr *e, StringRef key, UnitDim dim, bool allowZero = false);
  /// `value` among `choices` ("unknown optimizer 'adamww'" with did-you-mean).
  std::optional<unsigned> choice(StringRef what, StringRef value, SMRange range,
                                 ArrayRef<StringRef> choices);
  /// A name among `choices` written as the value of `key`.
  std::optional<unsigned> choiceOf(const ast::Expr *e, StringRef key, StringRef what,
                                   ArrayRef<StringRef> choices);

  /// `key = <integer>` from the entry of `key`, if there is one, into `value`.
  void readInteger(const Block &block, const KeySpec &spec, int64_t &value, SettingSource &source,
                   int64_t min, int64_t max);
  void readBool(const Block &block, const KeySpec &spec, bool &value, SettingSource &source);

  void formError(StringRef key, SMRange at, StringRef example);
  /// Adds "did you mean" with a fix-it when a candidate is close to `name`.
  static void suggest(DiagBuilder &diag, StringRef name, SMRange range,
                      ArrayRef<StringRef> candidates);
  /// The value as written (`-1e-3`, `'300 GB/s'`, `'adamw(lr = 3e-4)'`), for messages.
  static std::string describe(const ast::Expr *e);

  DiagnosticEngine &diags;
  std::vector<std::string> invalid; // "parallel.mesh", ...
};

std::string joinChoices(ArrayRef<StringRef> choices);
/// The spec of `key`, which must be in `keys`.
const KeySpec &keySpec(ArrayRef<KeySpec> keys, StringRef key);
/// The range of a setting or argument that was given as a named field.
SMRange fieldRange(const Field &f);

// The block interpreters.
ArrayRef<KeySpec> trainKeys();
ArrayRef<KeySpec> clusterKeys();
ArrayRef<KeySpec> parallelKeys();
void interpretTrain(const Block &block, TrainConfig &train, Reader &reader);
/// What interpretConfig needs to finish the cluster once the mesh is known.
struct ClusterFacts {
  bool sizesWritten = false;      // nodes or gpus_per_node was written
  bool interNodeWritten = false;  // inter_node holds the node's total bandwidth
};
ClusterFacts interpretCluster(const Block &block, ClusterConfig &cluster, Reader &reader);
/// Reads the settings; the mesh's dp is 0 when it was not written.
void interpretParallel(const Block &block, ParallelConfig &parallel, Reader &reader);

} // namespace planc::config

#endif
