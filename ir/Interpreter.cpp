//===- ir/Interpreter.cpp - the reference interpreter --------------------===//
//
// Deliberately plain: one tensor per live value, the ops in module order, each
// through its OpDef's kernel, every result rounded to its dtype. A value's
// tensor is dropped after its last use, so a training step of a real model
// fits in memory.
//
//===----------------------------------------------------------------------===//

#include "ir/Interpreter.h"
#include "ir/LocalBlocks.h"
#include "ir/OpDef.h"
#include "numerics/InitialValues.h"
#include "numerics/Philox.h"
#include "support/Error.h"

#include <cmath>
#include <unordered_map>

using namespace planc;
using namespace planc::ir;

// Philox4x32-10 is numerics/Philox.h's, the executables' own generator.
std::array<uint32_t, 4> EvalContext::philox4x32(std::array<uint32_t, 4> c, uint64_t key) {
  return numerics::philox4x32(c, key);
}

double EvalContext::philoxUniform(uint64_t key, uint64_t counter) { return numerics::philoxUniform(key, counter); }

//===----------------------------------------------------------------------===//
// interpret
//===----------------------------------------------------------------------===//

std::string ir::describeOp(const Op &op) {
  std::string s = "'" + std::string(spelling(op.kind)) + "'";
  if (!op.results.empty()) s += " defining %" + op.results[0]->name;
  if (op.loc.isKnown())
    s += " at " + op.loc.text();
  return s;
}

llvm::Expected<TensorMap> ir::interpret(const Module &m, const TensorMap &feeds, uint64_t seed) {
  std::unordered_map<const Value *, Tensor> live;

  auto feed = [&](const Value *v, const char *what) -> llvm::Error {
    auto it = feeds.find(v->name);
    if (it == feeds.end())
      return makeError("no value fed for " + llvm::Twine(what) + " '%" + v->name + "'");
    if (it->second.shape != v->type.shape)
      return makeError(llvm::Twine(what) + " '%" + v->name + "' is " + toString(v->type) +
                       ", but the value fed has shape " + toString(it->second.shape));
    // A feed takes the value's dtype, as if it had been stored in it.
    Tensor t = it->second;
    t.dtype = v->type.dtype;
    roundToDType(t);
    live[v] = std::move(t);
    return llvm::Error::success();
  };
  for (const Value *p : m.params)
    if (llvm::Error e = feed(p, "parameter")) return e;
  for (const Value *i : m.inputs)
    if (llvm::Error e = feed(i, "input")) return e;

  // The last op reading each value; outputs are kept to the end.
  std::unordered_map<const Value *, size_t> lastUse;
  for (size_t i = 0; i < m.ops.size(); ++i)
    for (const Value *v : m.ops[i]->operands) lastUse[v] = i;
  for (const Output &out : m.outputs) lastUse[out.value] = m.ops.size();

  EvalContext ctx;
  ctx.seed = seed;
  for (size_t i = 0; i < m.ops.size(); ++i) {
    const Op &op = *m.ops[i];
    const OpDef &def = opDef(op.kind);
    if (!def.eval)
      return makeError("op " + describeOp(op) + " has no reference kernel");
    std::vector<const Tensor *> in;
    for (const Value *v : op.operands) {
      auto it = live.find(v);
      if (it == live.end())
        return makeError("op " + describeOp(op) + " reads %" + (v ? v->name : std::string("<null>")) +
                         " before it is defined");
      in.push_back(&it->second);
    }
    std::vector<Tensor> out;
    for (const Value *r : op.results) out.emplace_back(r->type.shape, r->type.dtype);
    def.eval(ctx, op, in, out);
    if (!ctx.error.empty())
      return makeError("op " + describeOp(op) + ": " + ctx.error);
    for (size_t r = 0; r < out.size(); ++r) {
      if (!lastUse.count(op.results[r])) continue; // never read: nothing to keep
      roundToDType(out[r]);
      live[op.results[r]] = std::move(out[r]);
    }
    for (const Value *v : op.operands)
      if (lastUse[v] == i) live.erase(v);
  }

  TensorMap outputs;
  for (const Output &out : m.outputs) {
    auto it = live.find(out.value);
    if (it == live.end())
      return makeError("output '" + out.name + "' (%" + out.value->name + ") is never computed");
    outputs[out.name] = it->second;
  }
  return outputs;
}

//===----------------------------------------------------------------------===//
// initialParams
//===----------------------------------------------------------------------===//

TensorMap ir::initialParams(const Module &m, uint64_t seed) {
  TensorMap params;
  for (const Value *p : m.params) {
    Tensor t(p->type.shape, p->type.dtype);
    switch (p->init) {
    case InitKind::Zeros:
      break;
    case InitKind::Ones:
      std::fill(t.data.begin(), t.data.end(), 1.0);
      break;
    case InitKind::Normal:
    case InitKind::ScaledNormal: {
      // Element i of a parameter depends only on (path, seed, i), as in the
      // executables: numerics/InitialValues.h.
      const std::string &path = p->path.empty() ? p->name : p->path;
      uint64_t key = numerics::initKey(path, seed);
      for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = p->initStd * numerics::initialNormal(key, uint64_t(i));
      break;
    }
    }
    roundToDType(t);
    params[p->name] = std::move(t);
  }
  return params;
}

int64_t EvalContext::blockOffset(const TensorType &t, size_t dim) const {
  if (!mesh || dim >= t.rank()) return 0;
  return blockOffsets(t, *mesh, rank)[dim];
}

std::vector<int64_t> EvalContext::globalIndices(const TensorType &t) const {
  if (mesh) return ir::globalIndices(t, *mesh, rank);
  std::vector<int64_t> out(size_t(t.numel()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = int64_t(i);
  return out;
}
