//===- ir/IR.h - Module, Op, Value ------------------------------*- C++ -*-===//
//
// A Module is one SSA graph: parameters and inputs (values with no defining
// op), a list of ops in execution order, and named outputs. Every op and
// parameter keeps the .plan location and the layer path (blocks.3.attention)
// that made it, so errors of later passes point back at the user's line.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_IR_IR_H
#define PLANC_IR_IR_H

#include "ir/TrainingKinds.h"
#include "ir/Type.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <string>
#include <variant>
#include <vector>

namespace planc::ir {

enum class OpKind : uint16_t {
#define OP(KIND, NAME, OPERANDS, RESULTS) KIND,
#include "ir/Ops.def"
#undef OP
  NumOps
};

/// Where an op or parameter came from in the .plan text.
struct Location {
  std::string file;
  unsigned line = 0, column = 0;
  bool isKnown() const { return line != 0; }
  /// "file:line:column", as diagnostics and error messages name a place.
  std::string text() const { return file + ":" + std::to_string(line) + ":" + std::to_string(column); }
  bool operator==(const Location &o) const { return file == o.file && line == o.line && column == o.column; }
};

/// Attribute values: integers, floats, booleans, strings and integer lists.
using Attr = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>>;
/// Sorted by name, so printing is stable.
using AttrMap = std::map<std::string, Attr>;

class Op;

enum class InitKind { Normal, ScaledNormal, Zeros, Ones };

class Value {
public:
  enum class Kind { Param, Input, Result };
  Kind kind = Kind::Result;
  std::string name;        // printed as %name; unique in the module
  TensorType type;
  Op *def = nullptr;       // the defining op for results
  unsigned resultIndex = 0;

  // Parameters only.
  InitKind init = InitKind::Normal;
  double initStd = 0.02;   // the effective std of Normal and ScaledNormal
  bool frozen = false;
  /// The plan's @weight_decay (true) or @no_weight_decay (false); none: the
  /// optimizer's rule (OptimizerOptions::weightDecayParams) decides.
  std::optional<bool> weightDecay;
  std::string path;        // blocks.3.attention.w_qkv (also for inputs: their name)
  Location loc;
};

class Op {
public:
  OpKind kind;
  std::vector<Value *> operands;
  std::vector<Value *> results;
  AttrMap attrs;
  Location loc;
  std::string path; // the layer instance that made it: blocks.3.attention

  bool has(llvm::StringRef name) const { return attrs.count(name.str()); }
  int64_t getInt(llvm::StringRef name, int64_t otherwise = 0) const;
  double getFloat(llvm::StringRef name, double otherwise = 0) const;
  bool getBool(llvm::StringRef name, bool otherwise = false) const;
  std::string getString(llvm::StringRef name, llvm::StringRef otherwise = "") const;
  std::vector<int64_t> getInts(llvm::StringRef name) const;
  Value *result(unsigned i = 0) const { return results[i]; }
};

const char *spelling(OpKind kind);
/// From Ops.def: the operand count (-1 for a variadic op) and the result count.
int operandCount(OpKind kind);
unsigned resultCount(OpKind kind);
/// The ops that move data between ranks or pick a rank's block: the
/// collectives, send, recv, broadcast and shard_slice. Answered from the op
/// table (ir/OpDef.h), as the other facts about op kinds are.
bool isCommunication(OpKind kind);
/// The optimizer's parameter updates (SGD, Adam, 8-bit Adam): ops whose
/// operand roles (ir/OpDef.h) start with the parameter.
bool isOptimizerUpdate(OpKind kind);
std::optional<OpKind> parseOpKind(llvm::StringRef name);

/// Something a pass finds about the plan itself, at the .plan place of the
/// op that caused it: a diagnostic of support/Diagnostics.def and its
/// arguments. Warnings are kept in the module's `remarks` (not part of the
/// textual IR); an error is returned as a PlanError (ir/PlanError.h). The
/// driver renders both with the line (compiler/PlanDiagnostics.h).
struct Finding {
  DiagID id;
  Location loc; // unknown: the driver picks the place, or prints none
  std::vector<std::string> args;
  /// The text after "error: " or "warning: ".
  std::string message() const;
};

/// What an output of the training step is to the loop around it (passes
/// and the driver ask this, never the output's name).
enum class OutputRole {
  Other,         // anything else the step reports: lr, grad_norm, found_inf ...
  Loss,          // the scalar loss the step minimises
  ParamGradient, // the gradient of a trainable parameter
  ParamUpdate,   // a trainable parameter's value for the next step
  StateUpdate,   // optimizer (or loss-scaling) state's value for the next step
};

/// One named output of a module. The textual IR prints only the name; the
/// parser derives the role from it (ir/StepOutputs.h).
struct Output {
  Output() = default;
  Output(std::string name, Value *value, OutputRole role = OutputRole::Other, std::string path = {},
         std::string owner = {})
      : name(std::move(name)), value(value), role(role), path(std::move(path)), owner(std::move(owner)) {}

  std::string name;
  Value *value = nullptr;
  OutputRole role = OutputRole::Other;
  /// ParamGradient, ParamUpdate: the parameter's path; StateUpdate: the
  /// path of the state (the frozen parameter the next step reads it from).
  std::string path;
  /// StateUpdate of an optimizer state: the path of the parameter it is
  /// kept for ("" for state of the whole step, as loss scaling's).
  std::string owner;

  bool isUpdate() const { return role == OutputRole::ParamUpdate || role == OutputRole::StateUpdate; }
};

/// Every field of a Module is copied by Module::clone (ir/IR.cpp); a field
/// added here must be added there too.
class Module {
public:
  std::string name;
  std::vector<Finding> remarks;
  /// The mesh the shardings refer to (size per axis, 1 where absent).
  std::array<int64_t, kNumMeshAxes> mesh{1, 1, 1, 1, 1};
  /// The pipeline schedule the `pipeline` pass cut the step for; what the
  /// deadlock check, the memory planner and the execution plan follow. Kept in
  /// memory only: the textual form does not carry it (printing it would change
  /// every printed module), so a module read from text has none and its
  /// readers take the schedule their options name.
  std::optional<ScheduleOptions> schedule;

  std::vector<Value *> params;
  std::vector<Value *> inputs;
  std::vector<std::unique_ptr<Op>> ops;              // in execution order
  std::vector<Output> outputs;

  Value *addParam(const std::string &name, TensorType type);
  Value *addInput(const std::string &name, TensorType type);
  /// Appends an op whose result types are given; names are made unique.
  Op *append(OpKind kind, std::vector<Value *> operands, std::vector<TensorType> resultTypes,
             AttrMap attrs = {}, const std::string &resultName = "");
  /// A fresh name based on `hint` ("x" -> "x", then "x.1", "x.2", ...).
  std::string uniqueName(const std::string &hint);
  /// Gives `v` the name `name` if no other value has it; false otherwise.
  bool rename(Value *v, const std::string &name);
  Value *lookup(const std::string &name) const;
  Value *output(llvm::StringRef name) const;
  /// A deep copy that prints the same text (names, types, shardings,
  /// attributes, locations, order) and names new values as this module
  /// would; nothing in it points into this module.
  std::unique_ptr<Module> clone() const;
  /// The output of that role for the parameter (or state) at `path`.
  const Output *outputFor(OutputRole role, llvm::StringRef path) const;
  /// The output of that role (the loss), if any.
  const Output *outputFor(OutputRole role) const;

  std::vector<std::unique_ptr<Value>> &allValues() { return values; }
  /// Room for that many more ops and values (a pass that clones a lot).
  void reserve(size_t moreOps, size_t moreValues);
  /// Moves the ops of `before[i]` in front of the op now at index i (in
  /// their order), as passes that clone ops into backward need.
  void insertBefore(std::map<size_t, std::vector<std::unique_ptr<Op>>> before);

private:
  Value *newValue(const std::string &name);
  std::vector<std::unique_ptr<Value>> values;
  std::unordered_map<std::string, Value *> byName; // hashed: modules reach a million values
  std::unordered_map<std::string, unsigned> nextSuffix;
};

/// Master weights under mixed precision: parameters that every op outside
/// the optimizer reads only through a cast to a narrower dtype. They are
/// optimizer state (ZeRO's K = 12 counts the f32 copy there); the narrow copy
/// is what the model reads.
std::unordered_set<const Value *> masterWeights(const Module &m);

} // namespace planc::ir

#endif
