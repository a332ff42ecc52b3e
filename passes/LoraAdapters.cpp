//===- passes/LoraAdapters.cpp - LoRA fine-tuning of an unchanged model ---===//
//
// `adapters lora(rank = r, alpha = a)` in the train block: LoRA (Hu et al.
// 2021) applied to every linear layer of the model as written, as PEFT's
// LoraConfig(target_modules = "all-linear") does, without rewriting the model
// with std.lora's lora_linear. Each adapted product is computed exactly as
// lora_linear computes it, so a plan with adapters on a plain model trains the
// same step as the hand-written version (same ops, same order, same inits).
//
// Needs: a forward module (no backward or optimizer ops), before
// mixed-precision: the weights are still read directly by their matmuls.
// Options (LoraOptions): rank (0: the pass changes nothing) and alpha (> 0;
// none: 2 x rank).
//
// A linear weight is a float, 2-D parameter that the plan does not mark
// @frozen and that every op reading it reads as the right-hand operand of a
// `matmul` with transpose_b = false. So embeddings (gather), norms and biases
// (elementwise), and a head tied to the embedding table (a transposed copy of
// it) get no adapter; neither does a weight the plan froze itself.
//
// Guarantees after, for rank r and scale s = alpha / r:
//  - every parameter is frozen, the adapters below excepted: autodiff then
//    makes gradients for the adapters only, and the optimizer keeps state for
//    them only;
//  - each linear weight W : [in, out] (path P) has two new trainable
//    parameters right after it, P.lora_a : [in, r] init normal(0.02) and
//    P.lora_b : [r, out] init zeros (std.lora's inits, so training starts from
//    the base model's output exactly), replicated, at W's location, with
//    W's own weight-decay choice (@weight_decay, @no_weight_decay), if any;
//  - each matmul y = x @ W becomes, right where it was,
//        y0 = x @ W;  u = x @ P.lora_a;  v = u @ P.lora_b;
//        w = scale(v, s);  y = add(y0, w)
//    with the matmul's location, layer path, transpose_a and its `precision`,
//    `recompute` and `stage` attributes on every new op; every later reader
//    of y reads the sum;
//  - a rank above min(in, out) of some linear weight is an error (the product
//    A B cannot have a rank above min(in, out): the extra columns are
//    parameters that buy nothing), naming the weight; so is a model with no
//    linear weight at all, naming the model.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "ir/Builder.h"
#include "ir/OpDef.h"
#include "ir/Placement.h"
#include "ir/PlanError.h"
#include "ir/Printer.h"

#include "llvm/ADT/StringExtras.h"
#include "support/Error.h"

#include <algorithm>
#include <map>
#include <set>

using namespace planc;
using namespace planc::ir;

namespace {

struct Adapter {
  Value *a = nullptr; // [in, rank]
  Value *b = nullptr; // [rank, out]
};

class LoraAdaptersPass : public Pass {
public:
  explicit LoraAdaptersPass(const LoraOptions &options) : options(options) {}
  llvm::Error run(Module &m) override;

private:
  LoraOptions options;
};

bool readsAsWeight(const Op &op, unsigned operand) {
  return op.kind == OpKind::MatMul && operand == 1 && !op.getBool("transpose_b");
}

llvm::Error LoraAdaptersPass::run(Module &m) {
  const int64_t rank = options.rank;
  if (rank == 0) return llvm::Error::success();
  const double alpha = options.alpha ? *options.alpha : 2.0 * double(rank);

  for (const auto &op : m.ops)
    if (phaseOf(*op) != Phase::Forward)
      return makeError("lora runs on the forward graph, before autodiff; the module has " + toText(*op));

  std::vector<Value *> weights = loraTargets(m);
  if (llvm::Error e = checkLoraTargets(m, rank)) return e;

  // Everything is frozen; the adapters are the only trainable parameters.
  for (Value *p : m.params) p->frozen = true;
  std::map<const Value *, Adapter> adapters;
  std::vector<Value *> original = m.params, params; // addParam appends to m.params
  for (Value *p : original) {
    params.push_back(p);
    if (!std::count(weights.begin(), weights.end(), p)) continue;
    std::string path = p->path.empty() ? p->name : p->path;
    auto make = [&](const char *suffix, Shape shape, InitKind init) {
      Value *v = m.addParam(p->name + suffix, TensorType(std::move(shape), p->type.dtype));
      m.params.pop_back(); // placed right after its weight below
      v->init = init;
      v->initStd = 0.02;
      v->path = path + suffix;
      v->loc = p->loc;
      v->weightDecay = p->weightDecay; // the weight's own choice goes to the adapters that train in its place
      params.push_back(v);
      return v;
    };
    Adapter &a = adapters[p];
    a.a = make(".lora_a", {p->type.shape[0], rank}, InitKind::Normal);
    a.b = make(".lora_b", {rank, p->type.shape[1]}, InitKind::Zeros);
    // Under tensor parallelism the adapter is split as Megatron's LoRA
    // splits it: a weight split on its output dim (column-parallel) splits
    // B's, A whole; one split on its input dim (row-parallel) splits A's, B
    // whole. x A B is then sharded exactly as x W is (a partial sum where x W
    // is one), and nothing is resharded between them.
    const Sharding &ws = p->type.sharding;
    if (ws.dims.size() == 2) {
      a.a->type.sharding.dims[0] = ws.dims[0];
      a.b->type.sharding.dims[1] = ws.dims[1];
    }
  }
  m.params = std::move(params);

  // The ops are re-emitted in order; each adapted matmul is followed by its
  // low-rank update and the sum, which later readers read instead.
  std::vector<std::unique_ptr<Op>> old = std::move(m.ops);
  m.ops.clear();
  Builder b(m);
  std::map<Value *, Value *> replaced;
  auto remap = [&](Value *v) {
    auto it = replaced.find(v);
    return it == replaced.end() ? v : it->second;
  };
  for (std::unique_ptr<Op> &owned : old) {
    Op *op = owned.get();
    for (Value *&v : op->operands) v = remap(v);
    m.ops.push_back(std::move(owned));
    if (op->kind != OpKind::MatMul) continue;
    auto it = adapters.find(op->operands[1]);
    if (it == adapters.end()) continue;
    BuilderScope scope(b, *op);
    AttrMap kept;
    for (const char *name : {"precision", "recompute", "stage"})
      if (auto at = op->attrs.find(name); at != op->attrs.end()) kept[name] = at->second;
    auto with = [&](AttrMap attrs) {
      attrs.insert(kept.begin(), kept.end());
      return attrs;
    };
    Value *x = op->operands[0];
    Value *u = b.value(OpKind::MatMul, {x, it->second.a},
                       with({{"transpose_a", op->getBool("transpose_a")}, {"transpose_b", false}}));
    Value *v = b.value(OpKind::MatMul, {u, it->second.b}, with({{"transpose_a", false}, {"transpose_b", false}}));
    Value *s = b.value(OpKind::Scale, {v}, with({{"factor", alpha / double(rank)}}));
    Value *y = b.value(OpKind::Add, {op->results[0], s}, with({}));
    replaced[op->results[0]] = y;
  }
  for (Output &out : m.outputs) out.value = remap(out.value);
  return llvm::Error::success();
}

} // namespace

std::vector<Value *> planc::loraTargets(const Module &m) {
  // Trainable 2-D float parameters read only as a matmul's (untransposed)
  // right-hand operand.
  std::set<const Value *> candidates;
  for (Value *p : m.params)
    if (!p->frozen && isFloat(p->type.dtype) && p->type.rank() == 2) candidates.insert(p);
  std::set<const Value *> used;
  for (const auto &op : m.ops)
    for (unsigned i = 0; i < op->operands.size(); ++i) {
      const Value *v = op->operands[i];
      if (!candidates.count(v)) continue;
      if (readsAsWeight(*op, i))
        used.insert(v);
      else
        candidates.erase(v);
    }
  for (const Output &out : m.outputs) candidates.erase(out.value);
  std::vector<Value *> weights;
  for (Value *p : m.params)
    if (candidates.count(p) && used.count(p)) weights.push_back(p);
  return weights;
}

llvm::Error planc::checkLoraTargets(const Module &m, int64_t rank) {
  std::vector<Value *> weights = loraTargets(m);
  if (weights.empty())
    return makePlanError(DiagID::err_lora_no_targets, Location(), {std::to_string(rank), m.name});
  for (Value *w : weights) {
    int64_t in = w->type.shape[0], out = w->type.shape[1];
    if (rank > std::min(in, out))
      return makePlanError(DiagID::err_lora_rank_too_large, Location(),
                           {std::to_string(rank), std::to_string(std::min(in, out)), w->path.empty() ? w->name : w->path,
                            std::to_string(in), std::to_string(out)});
  }
  return llvm::Error::success();
}

std::unique_ptr<Pass> planc::createLoraAdaptersPass(const LoraOptions &options) {
  return std::make_unique<LoraAdaptersPass>(options);
}
