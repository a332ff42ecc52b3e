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
#include "support/Error.h"

#include <cmath>
#include <unordered_map>

using namespace planc;
using namespace planc::ir;

//===----------------------------------------------------------------------===//
// Philox4x32-10 (Salmon et al., "Parallel Random Numbers: As Easy as 1, 2, 3",
// SC11), the counter-based generator of cuRAND and PyTorch's CUDA RNG. The
// 64-bit key is the two key words (low word first); the 64-bit counter fills
// counter words 0 and 1 (low first), words 2 and 3 are zero. Ten rounds; the
// key is bumped by the Weyl constants between rounds.
//===----------------------------------------------------------------------===//

std::array<uint32_t, 4> EvalContext::philox4x32(std::array<uint32_t, 4> c, uint64_t key) {
  constexpr uint32_t kMul0 = 0xD2511F53, kMul1 = 0xCD9E8D57;
  constexpr uint32_t kWeyl0 = 0x9E3779B9, kWeyl1 = 0xBB67AE85;
  uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = uint64_t(kMul0) * c[0], p1 = uint64_t(kMul1) * c[2];
    uint32_t hi0 = uint32_t(p0 >> 32), lo0 = uint32_t(p0);
    uint32_t hi1 = uint32_t(p1 >> 32), lo1 = uint32_t(p1);
    c = {hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0};
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return c;
}

double EvalContext::philoxUniform(uint64_t key, uint64_t counter) {
  std::array<uint32_t, 4> r = philox4x32({uint32_t(counter), uint32_t(counter >> 32), 0, 0}, key);
  // The top 53 bits of words 0 (low) and 1 (high): every double in [0, 1)
  // with spacing 2^-53, so 1 - u is never 0.
  uint64_t bits = (uint64_t(r[1]) << 32) | r[0];
  return double(bits >> 11) * 0x1.0p-53;
}

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

namespace {

/// FNV-1a: a stable 64-bit hash of the parameter path (std::hash is not
/// stable across library versions).
uint64_t fnv1a(llvm::StringRef s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

/// SplitMix64's finaliser: spreads the seed's bits over the whole key.
uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

} // namespace

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
      // Element i of a parameter depends only on (path, seed, i): the key is
      // the path's hash mixed with the seed, the counters 2i and 2i + 1 give
      // the two uniforms of one Box-Muller draw (the cosine half).
      uint64_t key = fnv1a(p->path.empty() ? p->name : p->path) ^ mix64(seed);
      for (size_t i = 0; i < t.data.size(); ++i) {
        double u1 = EvalContext::philoxUniform(key, 2 * uint64_t(i));
        double u2 = EvalContext::philoxUniform(key, 2 * uint64_t(i) + 1);
        double z = std::sqrt(-2.0 * std::log(1.0 - u1)) * std::cos(2.0 * M_PI * u2);
        t.data[i] = p->initStd * z;
      }
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
