//===- ir/IR.cpp - Module, Op, Value -------------------------------------===//

#include "ir/IR.h"
#include "ir/Placement.h"

#include <cassert>
#include <iterator>

using namespace planc;
using namespace planc::ir;

//===----------------------------------------------------------------------===//
// Op attributes
//===----------------------------------------------------------------------===//

// The getters are lenient only where no information is lost (an integer read
// as a float); any other kind mismatch gives `otherwise`, and the op's
// OpDef::infer is where a wrong attribute kind is reported.

int64_t Op::getInt(llvm::StringRef name, int64_t otherwise) const {
  auto it = attrs.find(name.str());
  if (it == attrs.end()) return otherwise;
  if (auto *i = std::get_if<int64_t>(&it->second)) return *i;
  return otherwise;
}

double Op::getFloat(llvm::StringRef name, double otherwise) const {
  auto it = attrs.find(name.str());
  if (it == attrs.end()) return otherwise;
  if (auto *d = std::get_if<double>(&it->second)) return *d;
  if (auto *i = std::get_if<int64_t>(&it->second)) return double(*i);
  return otherwise;
}

bool Op::getBool(llvm::StringRef name, bool otherwise) const {
  auto it = attrs.find(name.str());
  if (it == attrs.end()) return otherwise;
  if (auto *b = std::get_if<bool>(&it->second)) return *b;
  return otherwise;
}

std::string Op::getString(llvm::StringRef name, llvm::StringRef otherwise) const {
  auto it = attrs.find(name.str());
  if (it == attrs.end()) return otherwise.str();
  if (auto *s = std::get_if<std::string>(&it->second)) return *s;
  return otherwise.str();
}

std::vector<int64_t> Op::getInts(llvm::StringRef name) const {
  auto it = attrs.find(name.str());
  if (it == attrs.end()) return {};
  if (auto *v = std::get_if<std::vector<int64_t>>(&it->second)) return *v;
  return {};
}

//===----------------------------------------------------------------------===//
// Op kinds
//===----------------------------------------------------------------------===//

namespace {
const char *const opNames[] = {
#define OP(KIND, NAME, OPERANDS, RESULTS) NAME,
#include "ir/Ops.def"
#undef OP
};
static_assert(std::size(opNames) == unsigned(OpKind::NumOps), "one name per op kind");
} // namespace

const char *ir::spelling(OpKind kind) {
  return kind < OpKind::NumOps ? opNames[unsigned(kind)] : "<invalid op>";
}

std::optional<OpKind> ir::parseOpKind(llvm::StringRef name) {
  for (unsigned i = 0; i < unsigned(OpKind::NumOps); ++i)
    if (name == opNames[i]) return OpKind(i);
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Module
//===----------------------------------------------------------------------===//

void Module::reserve(size_t moreOps, size_t moreValues) {
  ops.reserve(ops.size() + moreOps);
  values.reserve(values.size() + moreValues);
  byName.reserve(byName.size() + moreValues);
}

void Module::insertBefore(std::map<size_t, std::vector<std::unique_ptr<Op>>> before) {
  if (before.empty()) return;
  size_t added = 0;
  for (const auto &entry : before) added += entry.second.size();
  std::vector<std::unique_ptr<Op>> merged;
  merged.reserve(ops.size() + added);
  for (size_t i = 0; i < ops.size(); ++i) {
    if (auto it = before.find(i); it != before.end())
      for (auto &op : it->second) merged.push_back(std::move(op));
    merged.push_back(std::move(ops[i]));
  }
  ops = std::move(merged);
}

Value *Module::newValue(const std::string &name) {
  values.push_back(std::make_unique<Value>());
  Value *v = values.back().get();
  v->name = name;
  byName[name] = v;
  return v;
}

Value *Module::addParam(const std::string &name, TensorType type) {
  Value *v = newValue(uniqueName(name));
  v->kind = Value::Kind::Param;
  v->type = std::move(type);
  params.push_back(v);
  return v;
}

Value *Module::addInput(const std::string &name, TensorType type) {
  Value *v = newValue(uniqueName(name));
  v->kind = Value::Kind::Input;
  v->type = std::move(type);
  inputs.push_back(v);
  return v;
}

Op *Module::append(OpKind kind, std::vector<Value *> operands, std::vector<TensorType> resultTypes,
                   AttrMap attrs, const std::string &resultName) {
  ops.push_back(std::make_unique<Op>());
  Op *op = ops.back().get();
  op->kind = kind;
  op->operands = std::move(operands);
  op->attrs = std::move(attrs);
  for (unsigned i = 0; i < resultTypes.size(); ++i) {
    Value *v = newValue(uniqueName(resultName));
    v->kind = Value::Kind::Result;
    v->type = std::move(resultTypes[i]);
    v->def = op;
    v->resultIndex = i;
    op->results.push_back(v);
  }
  return op;
}

std::string Module::uniqueName(const std::string &hint) {
  // The counter per hint only skips suffixes known to be taken; asking for a
  // name reserves nothing, so asking twice gives the same answer.
  // A free hint needs no counter (most are: a counter per name would double
  // the bookkeeping of large modules).
  if (!hint.empty() && !byName.count(hint)) return hint;
  unsigned &next = nextSuffix[hint];
  // Unnamed values are numbered %0, %1, ... in creation order.
  if (hint.empty()) {
    while (byName.count(std::to_string(next))) ++next;
    return std::to_string(next);
  }
  if (next == 0) next = 1;
  while (byName.count(hint + "." + std::to_string(next))) ++next;
  return hint + "." + std::to_string(next);
}

bool Module::rename(Value *v, const std::string &name) {
  if (v->name == name) return true;
  if (name.empty() || byName.count(name)) return false;
  byName.erase(v->name);
  v->name = name;
  byName[name] = v;
  return true;
}

Value *Module::lookup(const std::string &name) const {
  auto it = byName.find(name);
  return it == byName.end() ? nullptr : it->second;
}

Value *Module::output(llvm::StringRef name) const {
  for (const Output &out : outputs)
    if (out.name == name) return out.value;
  return nullptr;
}

const Output *Module::outputFor(OutputRole role, llvm::StringRef path) const {
  for (const Output &out : outputs)
    if (out.role == role && out.path == path) return &out;
  return nullptr;
}

const Output *Module::outputFor(OutputRole role) const {
  for (const Output &out : outputs)
    if (out.role == role) return &out;
  return nullptr;
}

std::unique_ptr<Module> Module::clone() const {
  auto copy = std::make_unique<Module>();
  // Every field of Module is copied here. Values and ops are copied whole
  // (a field added to them comes along); only their pointers into the module
  // are redirected to the copy below.
  copy->name = name;
  copy->remarks = remarks;
  copy->mesh = mesh;
  copy->schedule = schedule;
  copy->nextSuffix = nextSuffix;

  std::unordered_map<const Value *, Value *> valueCopy;
  std::unordered_map<const Op *, Op *> opCopy;
  valueCopy.reserve(values.size());
  opCopy.reserve(ops.size());
  copy->values.reserve(values.size());
  for (const auto &v : values) {
    copy->values.push_back(std::make_unique<Value>(*v));
    valueCopy[v.get()] = copy->values.back().get();
  }
  copy->ops.reserve(ops.size());
  for (const auto &op : ops) {
    copy->ops.push_back(std::make_unique<Op>(*op));
    opCopy[op.get()] = copy->ops.back().get();
  }
  // Every value a module refers to is one it made; null operands stay null.
  auto mapValue = [&](Value *v) -> Value * {
    if (!v) return nullptr;
    auto it = valueCopy.find(v);
    assert(it != valueCopy.end() && "a module refers to a value it does not own");
    return it->second;
  };
  for (auto &v : copy->values) {
    // The op of a value whose op a pass erased is gone: no def in the copy.
    auto it = v->def ? opCopy.find(v->def) : opCopy.end();
    v->def = it == opCopy.end() ? nullptr : it->second;
  }
  for (auto &op : copy->ops) {
    for (Value *&v : op->operands) v = mapValue(v);
    for (Value *&v : op->results) v = mapValue(v);
  }
  for (Value *v : params) copy->params.push_back(mapValue(v));
  for (Value *v : inputs) copy->inputs.push_back(mapValue(v));
  copy->outputs.reserve(outputs.size());
  for (const Output &out : outputs) {
    copy->outputs.push_back(out);
    copy->outputs.back().value = mapValue(out.value);
  }
  copy->byName.reserve(byName.size());
  for (const auto &[valueName, v] : byName) copy->byName.emplace(valueName, mapValue(v));
  return copy;
}

int ir::operandCount(OpKind kind) {
  static const int counts[] = {
#define OP(KIND, NAME, OPERANDS, RESULTS) OPERANDS,
#include "ir/Ops.def"
#undef OP
  };
  return counts[size_t(kind)];
}

unsigned ir::resultCount(OpKind kind) {
  static const unsigned counts[] = {
#define OP(KIND, NAME, OPERANDS, RESULTS) RESULTS,
#include "ir/Ops.def"
#undef OP
  };
  return counts[size_t(kind)];
}

std::unordered_set<const Value *> ir::masterWeights(const Module &m) {
  std::unordered_map<const Value *, bool> onlyNarrowed;
  for (const auto &op : m.ops) {
    if (phaseOf(*op) == Phase::Optimizer) continue;
    for (const Value *v : op->operands) {
      if (v->kind != Value::Kind::Param) continue;
      bool narrowing = op->kind == OpKind::Cast && byteSize(op->results[0]->type.dtype) < byteSize(v->type.dtype);
      auto [it, fresh] = onlyNarrowed.emplace(v, narrowing);
      if (!fresh) it->second = it->second && narrowing;
    }
  }
  std::unordered_set<const Value *> masters;
  for (const auto &[v, narrowed] : onlyNarrowed)
    if (narrowed) masters.insert(v);
  return masters;
}
