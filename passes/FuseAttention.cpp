//===- passes/FuseAttention.cpp - attention into one flash_attention op ---===//
//
// Matches, from each softmax of the forward graph outwards:
//
//   y = matmul(q, transpose(k))  or  matmul(q, k) {transpose_b}
//   [scale {factor}] [causal_mask] (either order, each at most once)
//   p = softmax(., dim = last)
//   [dropout {p, seed, stream}]
//   out = matmul(p, v)
//
// and replaces it by `out, lse = flash_attention(q, k, v)`. Every value
// between the two matmuls must be read by the next op of the chain alone and
// be no output of the step, or fusing would drop a value someone reads; a
// match that fails says why (findAttentionFusions, for --emit=fusion).
//
// Why before autodiff and not, as the pipeline sketch in the design has it,
// after the partitioner: fused before differentiation, backward is the
// fused op's own gradient rule (flash_attention_grad), the recompute pass
// sees no s x t activation to save, and the partitioner splits the fused op
// by its dim labels like any op. Matching the unfused backward graph instead
// would have to find softmax_grad, causal_mask_grad and four matmuls of
// gradients and prove they belong together.
//
//===----------------------------------------------------------------------===//

#include "passes/FuseAttention.h"
#include "passes/Passes.h"

#include "ir/Builder.h"
#include "ir/OpDef.h"
#include "ir/TransposeFacts.h"
#include "support/Error.h"

#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

using namespace planc;
using namespace planc::ir;

namespace {

/// Attributes an op of the chain has for its own kind; the rest (the
/// annotations: recompute, stage, precision) must agree along the chain.
bool isOwnAttr(OpKind kind, const std::string &name) {
  switch (kind) {
  case OpKind::MatMul: return name == "transpose_a" || name == "transpose_b";
  case OpKind::Scale: return name == "factor";
  case OpKind::Softmax: return name == "dim";
  case OpKind::Dropout: return name == "p" || name == "seed" || name == "stream";
  default: return false;
  }
}

AttrMap annotationsOf(const Op &op) {
  AttrMap a;
  for (const auto &[name, value] : op.attrs)
    if (!isOwnAttr(op.kind, name)) a[name] = value;
  return a;
}

class Matcher {
public:
  explicit Matcher(const Module &m) {
    for (const auto &op : m.ops)
      for (const Value *o : op->operands) users[o].push_back(op.get());
    for (const Output &o : m.outputs) outputs.insert(o.value);
  }

  AttentionFusion match(const Op &softmax) const {
    AttentionFusion f;
    f.ops = {&softmax};
    auto refuse = [&](std::string why) {
      AttentionFusion r;
      r.ops = {&softmax};
      r.refused = std::move(why);
      return r;
    };
    const Value *x = softmax.operands[0];
    const size_t rank = x->type.rank();
    if (rank < 2) return refuse("the softmax is of a value of rank below 2");
    int64_t dim = softmax.getInt("dim");
    if (dim != -1 && dim != int64_t(rank) - 1) return refuse("the softmax is not over the last dim (the keys)");

    // Forward from the softmax: an optional dropout, then the matmul with v.
    std::vector<const Op *> after;
    const Value *probs = softmax.results[0];
    std::string why;
    const Op *next = soleUser(probs, "the probabilities", why);
    if (!next) return refuse(why);
    if (next->kind == OpKind::Dropout) {
      after.push_back(next);
      f.dropout = next->getFloat("p");
      probs = next->results[0];
      next = soleUser(probs, "the dropped probabilities", why);
      if (!next) return refuse(why);
    }
    if (next->kind != OpKind::MatMul || next->operands[0] != probs)
      return refuse(std::string("the probabilities are not multiplied by v (their reader is '") + spelling(next->kind) +
                    "')");
    if (next->getBool("transpose_a") || next->getBool("transpose_b"))
      return refuse("the matmul with v transposes an operand");
    after.push_back(next);
    f.v = next->operands[1];

    // Back from the softmax: at most one scale and one causal mask, then the
    // matmul of q and k^T.
    std::vector<const Op *> before;
    bool sawScale = false, sawMask = false;
    const Value *scores = x;
    for (;;) {
      const Op *def = scores->def;
      if (!def) return refuse("the scores are not computed by the step (an input or parameter)");
      if (!soleUser(scores, "the scores", why)) return refuse(why);
      if (def->kind == OpKind::Scale && !sawScale) {
        sawScale = true;
        f.scale = def->getFloat("factor");
        // scale after the mask: -inf * factor must stay -inf.
        if (sawMask && !(f.scale > 0)) return refuse("a non-positive scale after the causal mask");
      } else if (def->kind == OpKind::CausalMask && !sawMask) {
        sawMask = true;
        f.causal = true;
      } else {
        break;
      }
      before.insert(before.begin(), def);
      scores = def->operands[0];
    }
    const Op *qk = scores->def;
    if (qk->kind != OpKind::MatMul)
      return refuse(std::string("the scores are not a matmul of q and k^T (they come from '") + spelling(qk->kind) + "')");
    if (qk->getBool("transpose_a")) return refuse("the scores' matmul transposes q");
    f.q = qk->operands[0];
    if (qk->getBool("transpose_b")) {
      f.k = qk->operands[1];
    } else {
      const Op *t = qk->operands[1]->def;
      if (!t || !swapsLastTwoDims(*t))
        return refuse("the scores' matmul reads k^T not as a transpose of the last two dims");
      f.k = t->operands[0];
    }
    before.insert(before.begin(), qk);

    f.ops = before;
    f.ops.push_back(&softmax);
    f.ops.insert(f.ops.end(), after.begin(), after.end());

    // The fused op's own checks: one batch, no broadcasting, one dtype.
    const TensorType &q = f.q->type, &k = f.k->type, &v = f.v->type;
    if (q.rank() != k.rank() || q.rank() != v.rank() ||
        Shape(q.shape.begin(), q.shape.end() - 2) != Shape(k.shape.begin(), k.shape.end() - 2) ||
        Shape(q.shape.begin(), q.shape.end() - 2) != Shape(v.shape.begin(), v.shape.end() - 2))
      return refuse("q, k and v do not share their batch dims (one is broadcast)");
    if (q.dtype != k.dtype || q.dtype != v.dtype) return refuse("q, k and v differ in dtype");
    AttrMap notes = annotationsOf(softmax);
    for (const Op *op : f.ops)
      if (annotationsOf(*op) != notes)
        return refuse(std::string("the '") + spelling(op->kind) + "' of the chain carries other annotations (" +
                      "@recompute, @stage or @precision) than its softmax");

    for (size_t i = 0; i + 1 < f.ops.size(); ++i)
      f.intermediateBytes += double(f.ops[i]->results[0]->type.numel()) * double(byteSize(f.ops[i]->results[0]->type.dtype));
    return f;
  }

private:
  /// The one op reading `v`, or null with `why` saying what else does.
  const Op *soleUser(const Value *v, const char *what, std::string &why) const {
    if (outputs.count(v)) {
      why = std::string(what) + " are an output of the step";
      return nullptr;
    }
    auto it = users.find(v);
    if (it == users.end() || it->second.empty()) {
      why = std::string(what) + " are read by nothing";
      return nullptr;
    }
    if (it->second.size() > 1) {
      why = std::string(what) + " are read by " + std::to_string(it->second.size()) + " ops";
      return nullptr;
    }
    return it->second[0];
  }

  std::unordered_map<const Value *, std::vector<const Op *>> users;
  std::unordered_set<const Value *> outputs;
};

class FuseAttentionPass : public Pass {
public:
  explicit FuseAttentionPass(FusionOptions o) : options(o) {}

  llvm::Error run(Module &m) override {
    if (options.policy != FusionPolicy::Aggressive) return llvm::Error::success();
    std::vector<AttentionFusion> groups = findAttentionFusions(m);
    // The fused op takes the place of the chain's last matmul and keeps its
    // result value, so every reader of the attention's output is unchanged.
    std::map<const Op *, std::unique_ptr<Op>> replacement;
    std::unordered_set<const Op *> removed;
    for (const AttentionFusion &f : groups) {
      if (!f.refused.empty()) continue;
      const Op &softmax = **std::find_if(f.ops.begin(), f.ops.end(), [](const Op *op) {
        return op->kind == OpKind::Softmax;
      });
      const Op *last = f.ops.back();
      AttrMap attrs = annotationsOf(softmax);
      attrs["scale"] = f.scale;
      attrs["causal"] = f.causal;
      if (f.dropout > 0) {
        const Op *drop = *std::find_if(f.ops.begin(), f.ops.end(), [](const Op *op) { return op->kind == OpKind::Dropout; });
        attrs["p"] = f.dropout;
        attrs["seed"] = drop->getInt("seed");
        attrs["stream"] = drop->getInt("stream");
      }
      std::vector<Value *> operands{const_cast<Value *>(f.q), const_cast<Value *>(f.k), const_cast<Value *>(f.v)};
      std::vector<TensorType> types;
      if (std::string e = inferResultTypes(OpKind::FlashAttention, operands, attrs, types); !e.empty())
        return makeError("fuse-attention: the attention at path \"" + softmax.path + "\": " + e);
      // Appended with the statistic alone; the first result is the last
      // matmul's own value.
      Op *fused = m.append(OpKind::FlashAttention, operands, {types[1]}, attrs, last->results[0]->name + ".lse");
      std::unique_ptr<Op> owned = std::move(m.ops.back());
      m.ops.pop_back();
      Value *out = last->results[0], *stats = fused->results[0];
      out->def = fused;
      out->resultIndex = 0;
      stats->resultIndex = 1;
      fused->results = {out, stats};
      fused->loc = f.ops.front()->loc;
      fused->path = softmax.path;
      for (const Op *op : f.ops) removed.insert(op);
      replacement[last] = std::move(owned);
    }
    if (replacement.empty()) return llvm::Error::success();

    // k's transpose, read by the scores' matmul alone, goes with it.
    std::unordered_map<const Value *, size_t> readers;
    for (const auto &op : m.ops)
      if (!removed.count(op.get()))
        for (const Value *o : op->operands) ++readers[o];
    for (const auto &[last, fused] : replacement)
      for (const Value *o : fused->operands) ++readers[o];
    for (const Output &o : m.outputs) ++readers[o.value];

    std::vector<std::unique_ptr<Op>> kept;
    kept.reserve(m.ops.size());
    for (std::unique_ptr<Op> &op : m.ops) {
      auto r = replacement.find(op.get());
      if (r != replacement.end()) {
        kept.push_back(std::move(r->second));
        continue;
      }
      if (removed.count(op.get())) continue;
      bool deadTranspose = op->kind == OpKind::Transpose && !readers.count(op->results[0]);
      if (deadTranspose) continue;
      kept.push_back(std::move(op));
    }
    m.ops = std::move(kept);
    return llvm::Error::success();
  }

private:
  FusionOptions options;
};

} // namespace

std::vector<AttentionFusion> planc::findAttentionFusions(const Module &m) {
  Matcher matcher(m);
  std::vector<AttentionFusion> found;
  for (const auto &op : m.ops)
    if (op->kind == OpKind::Softmax) found.push_back(matcher.match(*op));
  return found;
}

std::unique_ptr<Pass> planc::createFuseAttentionPass(const FusionOptions &options) {
  return std::make_unique<FuseAttentionPass>(options);
}
