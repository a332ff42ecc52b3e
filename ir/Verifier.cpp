//===- ir/Verifier.cpp - the invariants every module keeps ---------------===//
//
// One walk over the module in execution order, keeping the set of values
// defined so far. Problems are collected, not thrown, so one run reports
// every broken rule; checks that would only repeat an earlier problem (the
// types of an op whose operands are missing) are skipped.
//
//===----------------------------------------------------------------------===//

#include "ir/Verifier.h"
#include "ir/OpDef.h"
#include "ir/Placement.h"
#include "ir/Printer.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"
#include "support/Error.h"
#include "support/Plural.h"

#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

using namespace planc;
using namespace planc::ir;

namespace {

/// How a message names the op being checked, made only when one is.
using Who = llvm::function_ref<std::string()>;


/// `'matmul' defining %y`, `'send'`: how messages name an op.
std::string describe(const Op &op) {
  std::string s = "'" + std::string(spelling(op.kind)) + "'";
  for (size_t i = 0; i < op.results.size(); ++i)
    s += (i ? ", " : " defining ") + (op.results[i] ? valueRef(*op.results[i]) : std::string("%<null>"));
  return s;
}

/// The collectives: their type rule computes the result's sharding from the
/// operand's, and they need the operand split or partial over their axis.
struct CollectiveRule {
  OpKind kind;
  bool needsPartial;   // reduces a partial sum over the axis
  const char *dimAttr; // else the attribute naming the dim split over the axis
};
const CollectiveRule kCollectiveRules[] = {
    {OpKind::AllReduce, true, nullptr},      {OpKind::ReduceScatter, true, nullptr},
    {OpKind::AllGather, false, "dim"},       {OpKind::AllToAll, false, "concat_dim"},
    {OpKind::Broadcast, false, nullptr},     {OpKind::ShardSlice, false, nullptr},
};

const CollectiveRule *collectiveRule(OpKind kind) {
  for (const CollectiveRule &r : kCollectiveRules)
    if (r.kind == kind) return &r;
  return nullptr;
}

/// Equal shardings: the same axes on each dim (major first) and the same
/// set of partial-sum axes, in whatever order.
bool sameLayout(const TensorType &a, const TensorType &b) {
  auto sorted = [](std::vector<MeshAxis> axes) {
    llvm::sort(axes);
    return axes;
  };
  return a.sharding.dims == b.sharding.dims && sorted(a.sharding.partial) == sorted(b.sharding.partial);
}

class Verifier {
public:
  explicit Verifier(const Module &m) : m(m) {}

  std::vector<VerifierProblem> run() {
    for (unsigned a = 0; a < kNumMeshAxes; ++a)
      if (m.mesh[a] < 1)
        problem({}, "mesh axis '" + std::string(spelling(MeshAxis(a))) + "' has size " + std::to_string(m.mesh[a]) +
                        "; every axis has at least one device");
    for (const Value *p : m.params) defineArgument(p, Value::Kind::Param, "param");
    for (const Value *in : m.inputs) defineArgument(in, Value::Kind::Input, "input");
    for (const auto &op : m.ops) {
      if (op) checkOp(*op);
      else problem({}, "the module holds a null op");
    }
    checkOutputs();
    return std::move(problems);
  }

private:
  void problem(const Location &loc, std::string message) { problems.push_back({loc, std::move(message)}); }

  /// Records `v` as defined; false (with a problem) if it cannot be.
  bool define(const Value &v, const Location &loc) {
    if (!defined.insert(&v).second) {
      problem(loc, valueRef(v) + " is defined twice");
      return false;
    }
    auto [it, fresh] = names.emplace(v.name, &v);
    if (!fresh) problem(loc, "two values are named " + valueRef(v));
    else if (m.lookup(v.name) != &v)
      problem(loc, valueRef(v) + " is not known to the module by its name (rename values with Module::rename)");
    checkType(v, loc);
    return true;
  }

  void defineArgument(const Value *v, Value::Kind kind, const char *what) {
    if (!v) return problem({}, std::string("the module holds a null ") + what);
    if (v->kind != kind || v->def)
      problem(v->loc, valueRef(*v) + " is listed as a " + what + " but is not one");
    if (kind == Value::Kind::Param && (v->init == InitKind::Normal || v->init == InitKind::ScaledNormal) &&
        !(v->initStd >= 0 && v->initStd < HUGE_VAL))
      problem(v->loc, "param " + valueRef(*v) + " has init std " + formatFloat(v->initStd) +
                          "; it must be finite and not negative");
    define(*v, v->loc);
  }

  void checkType(const Value &v, const Location &loc) {
    const TensorType &t = v.type;
    const Sharding &s = t.sharding;
    // Named only in a message: most values have none.
    auto who = [&] { return valueRef(v) + " : " + toString(t); };
    for (int64_t d : t.shape)
      if (d < 0) return problem(loc, who() + " has a negative dimension");
    if (s.dims.size() != t.rank())
      return problem(loc, who() + " has a sharding for " + counted(int64_t(s.dims.size()), "dimension") + " but rank " +
                              std::to_string(t.rank()));
    bool used[kNumMeshAxes] = {};
    auto useAxis = [&](MeshAxis a) {
      if (unsigned(a) >= kNumMeshAxes) {
        problem(loc, who() + " names an invalid mesh axis");
        return false;
      }
      if (used[unsigned(a)]) problem(loc, who() + " uses mesh axis '" + spelling(a) + "' twice");
      used[unsigned(a)] = true;
      if (m.mesh[unsigned(a)] == 1)
        problem(loc, who() + " is split over '" + spelling(a) + "', which has size 1 in the mesh");
      return true;
    };
    for (size_t d = 0; d < s.dims.size(); ++d) {
      int64_t devices = 1;
      bool overflow = false;
      for (MeshAxis a : s.dims[d]) {
        if (!useAxis(a)) return;
        overflow |= __builtin_mul_overflow(devices, m.mesh[unsigned(a)], &devices);
      }
      // A dp split minor-most may leave a remainder: ZeRO's padded storage
      // (ir/LocalBlocks.h); the axes outside it must divide exactly.
      int64_t exact = devices;
      if (!overflow && !s.dims[d].empty() && s.dims[d].back() == MeshAxis::DP) exact /= m.mesh[unsigned(MeshAxis::DP)];
      if (overflow || devices < 1 || t.shape[d] % exact != 0) {
        std::string axes;
        for (MeshAxis a : s.dims[d]) axes += (axes.empty() ? "" : "+") + std::string(spelling(a));
        problem(loc, who() + ": dimension " + std::to_string(d) + " (" + std::to_string(t.shape[d]) +
                         ") does not divide evenly over " + axes + " (" +
                         (overflow ? std::string("too many devices") : counted(devices, "device")) + ")");
      }
    }
    for (MeshAxis a : s.partial)
      if (!useAxis(a)) return;
  }

  void checkOp(const Op &op) {
    const Location &loc = op.loc;
    if (op.kind >= OpKind::NumOps) return problem(loc, "an op has the invalid kind " + std::to_string(unsigned(op.kind)));
    auto who = [&] { return describe(op); }; // only for a message

    bool operandsOk = true;
    int wantOperands = operandCount(op.kind);
    if (wantOperands >= 0 && op.operands.size() != size_t(wantOperands)) {
      problem(loc, who() + " has " + counted(int64_t(op.operands.size()), "operand") + "; it takes " + std::to_string(wantOperands));
      operandsOk = false;
    }
    for (size_t i = 0; i < op.operands.size(); ++i) {
      const Value *v = op.operands[i];
      if (!v) {
        problem(loc, "operand " + std::to_string(i) + " of " + who() + " is null");
        operandsOk = false;
      } else if (!defined.count(v)) {
        problem(loc, valueRef(*v) + " is used by " + who() + " before it is defined");
        operandsOk = false;
      }
    }

    bool resultsOk = true;
    unsigned wantResults = resultCount(op.kind);
    if (op.results.size() != wantResults) {
      problem(loc, who() + " has " + counted(int64_t(op.results.size()), "result") + "; it gives " + std::to_string(wantResults));
      resultsOk = false;
    }
    for (size_t i = 0; i < op.results.size(); ++i) {
      const Value *r = op.results[i];
      if (!r) {
        problem(loc, "result " + std::to_string(i) + " of " + who() + " is null");
        resultsOk = false;
        continue;
      }
      if (r->kind != Value::Kind::Result || r->def != &op || r->resultIndex != i) {
        problem(loc, "result " + valueRef(*r) + " of " + who() + " does not point back at its op as result " +
                         std::to_string(i));
        resultsOk = false;
      }
    }

    checkAxisAttr(op, who);
    if (std::string wrong = placementProblem(op, m); !wrong.empty()) problem(loc, who() + ": " + wrong);
    if (operandsOk && resultsOk) checkResultTypes(op, who);
    // Define the results last: an op cannot use its own results.
    for (const Value *r : op.results)
      if (r) define(*r, loc);
  }

  void checkResultTypes(const Op &op, Who who) {
    std::vector<TensorType> inferred;
    std::string error = inferResultTypes(op.kind, op.operands, op.attrs, inferred);
    if (!error.empty()) return problem(op.loc, who() + ": " + error);
    if (inferred.size() != op.results.size())
      return problem(op.loc, who() + ": its type rule gives " + counted(int64_t(inferred.size()), "result") + " for " +
                                 std::to_string(op.results.size()));
    // Shardings are the partitioner's to choose, so only shape and dtype
    // must match the rule (checkType() judges the sharding on its own) --
    // except for the collectives, whose meaning is the change of sharding.
    bool withSharding = collectiveRule(op.kind) != nullptr;
    if (withSharding) checkCollectiveOperand(op, who);
    for (size_t i = 0; i < inferred.size(); ++i) {
      const TensorType &have = op.results[i]->type;
      if (have.shape == inferred[i].shape && have.dtype == inferred[i].dtype &&
          (!withSharding || sameLayout(have, inferred[i])))
        continue;
      TensorType want = inferred[i], declared = have;
      if (!withSharding) {
        want = TensorType(want.shape, want.dtype);
        declared = TensorType(declared.shape, declared.dtype);
      }
      problem(op.loc, "result " + valueRef(*op.results[i]) + " of " + who() + " is declared " + toString(declared) +
                          " but the op gives " + toString(want));
    }
  }

  /// Collectives communicate over a mesh axis of more than one device. (The
  /// op's type rule has already checked that `axis` names a mesh axis.)
  void checkAxisAttr(const Op &op, Who who) {
    auto it = op.attrs.find("axis");
    if (it == op.attrs.end()) return;
    const std::string *axisName = std::get_if<std::string>(&it->second);
    std::optional<MeshAxis> axis = axisName ? parseMeshAxis(*axisName) : std::nullopt;
    if (axis && m.mesh[unsigned(*axis)] == 1)
      problem(op.loc, who() + " communicates over '" + *axisName + "', which has size 1 in the mesh");
  }

  /// What a collective needs of its operand's sharding: a partial sum over
  /// the axis to reduce, or the axis on the dim to gather or exchange.
  void checkCollectiveOperand(const Op &op, Who who) {
    const CollectiveRule *rule = collectiveRule(op.kind);
    if (!rule || op.operands.empty()) return;
    std::optional<MeshAxis> axis = parseMeshAxis(op.getString("axis"));
    if (!axis) return;
    const Value &x = *op.operands[0];
    const Sharding &s = x.type.sharding;
    std::string operand = "operand " + valueRef(x) + " : " + toString(x.type);
    if (rule->needsPartial) {
      if (!llvm::is_contained(s.partial, *axis))
        problem(op.loc, who() + ": " + operand + " is not a partial sum over '" + spelling(*axis) + "'");
      return;
    }
    if (!rule->dimAttr) return;
    int64_t dim = op.getInt(rule->dimAttr);
    if (dim < 0) dim += int64_t(x.type.rank());
    if (dim < 0 || size_t(dim) >= s.dims.size() || !llvm::is_contained(s.dims[dim], *axis))
      problem(op.loc, who() + ": " + operand + " is not split over '" + spelling(*axis) + "' along dimension " +
                          std::to_string(op.getInt(rule->dimAttr)) + " (" + rule->dimAttr + ")");
  }

  void checkOutputs() {
    // Names are unique, except that an update made on several pipeline
    // stages (a tied embedding's) is an output of each, under one name.
    std::map<std::string, const Output *> outputNames;
    for (const Output &out : m.outputs) {
      const std::string &name = out.name;
      const Value *v = out.value;
      auto [first, fresh] = outputNames.emplace(name, &out);
      if (name.empty()) problem({}, "an output has an empty name");
      else if (!fresh && !(out.isUpdate() && first->second->role == out.role && first->second->path == out.path))
        problem({}, "two outputs are named '" + name + "'");
      if (!v) problem({}, "output '" + name + "' is null");
      else if (!defined.count(v)) problem({}, "output '" + name + "' is " + valueRef(*v) + ", which is not defined");
    }
  }

  const Module &m;
  std::vector<VerifierProblem> problems;
  std::unordered_set<const Value *> defined;
  std::unordered_map<std::string, const Value *> names;
};

} // namespace

std::string VerifierProblem::render() const {
  if (!loc.isKnown()) return "error: " + message;
  return loc.text() + ": error: " + message;
}

std::vector<VerifierProblem> ir::findProblems(const Module &m) { return Verifier(m).run(); }

llvm::Error ir::verify(const Module &m) {
  std::vector<VerifierProblem> problems = findProblems(m);
  if (problems.empty()) return llvm::Error::success();
  constexpr size_t kShown = 20;
  std::string text;
  for (size_t i = 0; i < problems.size() && i < kShown; ++i) text += (i ? "\n" : "") + problems[i].render();
  if (problems.size() > kShown) text += "\n(" + counted(int64_t(problems.size() - kShown), "more problem") + ")";
  return makeError(text);
}
