//===- tests/unit/backend/LibraryKernelsTest.cpp - library kernels, compiled, compared -===//
//
// The hand-written kernels of the library class (backend/c/LibraryKernels.h
// renders a wrapper per step that calls runtime/kernels/cpu/): every op's
// wrapper rendered for a tiny execution plan of one step, all of them
// compiled into one program (with the source tree's include path and the
// runtime's sources it calls), run on random inputs, and compared with the
// interpreter's reference kernel of the op, in f32 and f64. The library
// computes in f64 and rounds once, as the reference does: copies, masks and
// dropout are bit-exact; the rest within 1e-6 relative in f32 (a few ulps;
// global_norm adds its operands' sums in another association) and 1e-12
// in f64. Fused attention and cross-entropy of f32 buffers compute in f32
// (runtime/kernels/cpu/): within 1e-5 of the output's largest element.
// Output buffers hold random bytes before the call, so a result not
// written whole is seen; an accumulating step adds to them.
//
// In-process: an out-of-range index is a kernel error, and the renderer
// says why it renders nothing for a bf16 buffer or the CUDA flavour.
//
//===----------------------------------------------------------------------===//

#include "backend/c/LibraryKernels.h"
#include "runtime/kernels/cpu/Attention.h"
#include "runtime/kernels/cpu/CrossEntropy.h"
#include "runtime/kernels/cpu/Dropout.h"
#include "runtime/kernels/cpu/Indexing.h"
#include "runtime/kernels/cpu/Norms.h"
#include "runtime/kernels/cpu/Optimizer.h"
#include "runtime/kernels/cpu/Position.h"

#include "CompiledProgram.h"
#include "OpTestHelpers.h"
#include "RandomTensors.h"

#include <cmath>
#include <cstdlib>
#include <memory>

using namespace planc;
using namespace planc::backend;
using namespace planc::ir;

namespace {

/// One step of one op: its operands, the interpreter's results, what the
/// output buffers hold before the call and what the compiled wrapper left.
struct LibraryCase {
  std::string group, label, name;
  OpKind kind = OpKind::NumOps;
  AttrMap attrs;
  std::vector<Tensor> inputs;
  std::vector<Tensor> want, before, got;
  std::vector<bool> accumulate;
  std::vector<int> inPlaceOf; // per output: the input whose bytes it is written into, or -1
  uint64_t seed = 0;          // the run's draw seed (the interpreter's EvalContext::seed)
  bool exact = false;
};

std::string sourceDir() {
  if (const char *root = std::getenv("PLANC_SOURCE_DIR")) return root;
  return PLANC_TEST_SOURCE_DIR;
}

class LibraryKernelsTest : public ::testing::Test {
protected:
  static void SetUpTestSuite();
  static void TearDownTestSuite() { cases().clear(); }

  static std::vector<LibraryCase> &cases() {
    static std::vector<LibraryCase> all;
    return all;
  }
  static bool &ran() {
    static bool r = false;
    return r;
  }

  /// Compares every element of every output of the cases of `group`.
  static void checkGroup(const std::string &group);
};

planc::testing::RandomTensors gen(17);
using planc::testing::scalarTensor;

struct Options {
  std::vector<bool> accumulate;
  std::vector<int> inPlaceOf;
  uint64_t seed = 0;
  bool exact = false;
};

/// Runs the interpreter on one op of `kind` and keeps the case.
void addCase(std::vector<LibraryCase> &cases, const std::string &group, const std::string &label, OpKind kind,
             std::vector<Tensor> inputs, AttrMap attrs, Options o = {}) {
  LibraryCase c;
  c.group = group;
  c.label = label;
  c.kind = kind;
  c.attrs = attrs;
  c.inputs = std::move(inputs);
  c.seed = o.seed;
  c.exact = o.exact;
  ir::testing::OpModule om;
  std::vector<Value *> operands;
  for (size_t i = 0; i < c.inputs.size(); ++i) operands.push_back(om.input("x" + std::to_string(i), c.inputs[i]));
  Op *op = om.b.create(kind, operands, attrs);
  for (size_t k = 0; k < op->results.size(); ++k) om.m.outputs.push_back(Output("out" + std::to_string(k), op->results[k]));
  llvm::Expected<TensorMap> out = interpret(om.m, om.feeds, c.seed);
  if (!out) {
    ADD_FAILURE() << label << ": " << llvm::toString(out.takeError());
    return;
  }
  for (size_t k = 0; k < op->results.size(); ++k) {
    c.want.push_back(out->at("out" + std::to_string(k)));
    // Random bytes where the result goes: a kernel must write it whole, or
    // add to them when it accumulates.
    c.before.push_back(gen.uniform(c.want[k].shape, c.want[k].dtype));
  }
  c.accumulate = o.accumulate;
  c.accumulate.resize(c.want.size(), false);
  c.inPlaceOf = o.inPlaceOf;
  c.inPlaceOf.resize(c.want.size(), -1);
  for (size_t k = 0; k < c.want.size(); ++k)
    if (c.inPlaceOf[k] >= 0) c.before[k] = c.inputs[size_t(c.inPlaceOf[k])];
  c.name = "k" + std::to_string(cases.size()) + "_" + cIdentifier(spelling(kind));
  cases.push_back(std::move(c));
}

/// The plan of one step: a buffer per operand and result, as BuildPlan makes them.
std::string renderCase(const LibraryCase &c, const CLanguage &lang, llvm::raw_ostream &os) {
  exec::RankProgram p;
  auto buffer = [&](const std::string &name, const Tensor &t) {
    exec::Buffer b;
    b.name = name;
    b.setValue(exec::BufferValue{name, TensorType(t.shape, t.dtype), t.shape});
    p.buffers.push_back(b);
    return int64_t(p.buffers.size() - 1);
  };
  exec::Step s;
  s.kind = c.kind;
  s.attrs = exec::StepAttrs(c.attrs);
  for (size_t i = 0; i < c.inputs.size(); ++i) s.inputs.push_back(buffer("x" + std::to_string(i), c.inputs[i]));
  for (size_t k = 0; k < c.want.size(); ++k) s.outputs.push_back(buffer("y" + std::to_string(k), c.want[k]));
  s.accumulate = c.accumulate;
  p.steps.push_back(s);
  return renderLibraryKernel(p, p.steps[0], c.name, c.label, lang, os);
}

std::vector<LibraryCase> makeCases() {
  std::vector<LibraryCase> cases;
  auto add = [&](const std::string &group, const std::string &label, OpKind kind, std::vector<Tensor> inputs,
                 AttrMap attrs, Options o = {}) {
    addCase(cases, group, label, kind, std::move(inputs), std::move(attrs), std::move(o));
  };
  Options exact;
  exact.exact = true;
  const DType f32 = DType::F32, f64 = DType::F64;

  // causal_mask, causal_mask_grad: square and non-square last dims.
  for (DType t : {f32, f64})
    for (Shape shape : {Shape{2, 3, 5, 5}, Shape{2, 4, 6}}) {
      std::string dims = toString(shape) + " " + spelling(t);
      add("masks", "causal_mask " + dims, OpKind::CausalMask, {gen.uniform(shape, t)}, {}, exact);
      add("masks", "causal_mask_grad " + dims, OpKind::MaskGrad, {gen.uniform(shape, t)}, {}, exact);
    }
  add("masks", "causal_mask [6, 4] (more rows than columns)", OpKind::CausalMask, {gen.uniform({6, 4}, f32)}, {},
      exact);

  // rope
  for (DType t : {f32, f64})
    for (bool inverse : {false, true})
      add("rope", std::string("rope ") + spelling(t) + (inverse ? " inverse" : ""), OpKind::Rope,
          {gen.uniform({2, 3, 2, 8}, t)}, {{"theta", 10000.0}, {"inverse", inverse}});
  add("rope", "rope theta 500", OpKind::Rope, {gen.uniform({1, 5, 3, 4}, f32)}, {{"theta", 500.0}});

  // dropout: the draw seed of the run, and a micro-batch's rows of the batch.
  {
    Options o = exact;
    add("dropout", "dropout f32 draw seed 0", OpKind::Dropout, {gen.awayFromZero({8, 6}, f32)},
        {{"p", 0.25}, {"seed", int64_t(7)}, {"stream", int64_t(3)}}, o);
    o.seed = 12345;
    add("dropout", "dropout f32 draw seed 12345", OpKind::Dropout, {gen.awayFromZero({8, 6}, f32)},
        {{"p", 0.25}, {"seed", int64_t(7)}, {"stream", int64_t(3)}}, o);
    add("dropout", "dropout f32 batch_split [2, 3, 1]", OpKind::Dropout, {gen.awayFromZero({8, 6}, f32)},
        {{"p", 0.25}, {"seed", int64_t(7)}, {"stream", int64_t(3)}, {"batch_split", std::vector<int64_t>{2, 3, 1}}},
        o);
    add("dropout", "dropout f32 [4, 2, 5] batch_split [1, 4, 3]", OpKind::Dropout, {gen.awayFromZero({4, 2, 5}, f32)},
        {{"p", 0.25}, {"seed", int64_t(1)}, {"stream", int64_t(9)}, {"batch_split", std::vector<int64_t>{1, 4, 3}}},
        o);
    o.seed = 99;
    add("dropout", "dropout f64 batch_split [2, 2, 0]", OpKind::Dropout, {gen.awayFromZero({4, 3, 5}, f64)},
        {{"p", 0.25}, {"seed", int64_t(2)}, {"stream", int64_t(0)}, {"batch_split", std::vector<int64_t>{2, 2, 0}}},
        o);
    add("dropout", "dropout f32 p 0", OpKind::Dropout, {gen.awayFromZero({3, 4}, f32)},
        {{"p", 0.0}, {"seed", int64_t(2)}, {"stream", int64_t(0)}}, o);
  }

  // gather, scatter_add
  for (DType t : {f32, f64}) {
    add("gather", std::string("gather ") + spelling(t), OpKind::Gather,
        {gen.uniform({11, 6}, t), gen.indices({3, 4}, 11)}, {}, exact);
    add("gather", std::string("scatter_add ") + spelling(t), OpKind::ScatterAdd,
        {gen.indices({3, 4}, 11), gen.uniform({3, 4, 6}, t)}, {{"rows", int64_t(11)}});
  }
  add("gather", "gather of a rank-3 table, i64 indices", OpKind::Gather,
      {gen.uniform({5, 2, 3}, f32), gen.indices({7}, 5, DType::I64)}, {}, exact);
  // Every index the same row: the sum of 12 rows.
  {
    Tensor same({12}, DType::I32);
    for (double &v : same.data) v = 4;
    add("gather", "scatter_add of one row 12 times", OpKind::ScatterAdd, {same, gen.uniform({12, 5}, f32)},
        {{"rows", int64_t(6)}});
  }

  // concat, repeat_interleave
  for (DType t : {f32, f64}) {
    add("concat", std::string("concat dim 1 ") + spelling(t), OpKind::Concat,
        {gen.uniform({2, 3, 4}, t), gen.uniform({2, 5, 4}, t)}, {{"dim", int64_t(1)}}, exact);
    add("concat", std::string("repeat_interleave dim 1 ") + spelling(t), OpKind::RepeatInterleave,
        {gen.uniform({2, 3, 4}, t)}, {{"dim", int64_t(1)}, {"repeats", int64_t(3)}}, exact);
  }
  add("concat", "concat dim -1 of three", OpKind::Concat,
      {gen.uniform({3, 2}, f32), gen.uniform({3, 1}, f32), gen.uniform({3, 4}, f32)}, {{"dim", int64_t(-1)}},
      exact);
  add("concat", "concat dim 0", OpKind::Concat, {gen.uniform({2, 3}, f32), gen.uniform({1, 3}, f32)},
      {{"dim", int64_t(0)}}, exact);
  add("concat", "repeat_interleave dim -1", OpKind::RepeatInterleave, {gen.uniform({2, 3, 4}, f32)},
      {{"dim", int64_t(-1)}, {"repeats", int64_t(2)}}, exact);
  add("concat", "repeat_interleave dim 0", OpKind::RepeatInterleave, {gen.uniform({3, 2}, f32)},
      {{"dim", int64_t(0)}, {"repeats", int64_t(4)}}, exact);

  // cross_entropy, cross_entropy_grad
  for (DType t : {f32, f64})
    for (bool denominator : {false, true}) {
      AttrMap attrs;
      if (denominator) attrs["denominator"] = 24.0;
      std::string what = std::string(spelling(t)) + (denominator ? " denominator 24" : "");
      Tensor logits = gen.uniform({6, 13}, t, -4.0, 4.0);
      Tensor targets = gen.indices({6}, 13);
      add("cross_entropy", "cross_entropy " + what, OpKind::CrossEntropy, {logits, targets}, attrs);
      add("cross_entropy", "cross_entropy_grad " + what, OpKind::CrossEntropyGrad,
          {logits, targets, scalarTensor(0.75, t)}, attrs);
    }
  add("cross_entropy", "cross_entropy [2, 3, 7]", OpKind::CrossEntropy,
      {gen.uniform({2, 3, 7}, f32, -4.0, 4.0), gen.indices({2, 3}, 7)}, {});
  add("cross_entropy", "cross_entropy_grad [2, 3, 7] f32 dloss of f64 logits", OpKind::CrossEntropyGrad,
      {gen.uniform({2, 3, 7}, f64, -4.0, 4.0), gen.indices({2, 3}, 7), scalarTensor(1.5, f32)}, {});

  // global_norm
  for (DType t : {f32, f64})
    for (bool squared : {false, true})
      add("global_norm", std::string("global_norm ") + spelling(t) + (squared ? " squared" : ""), OpKind::GlobalNorm,
          {gen.uniform({5, 7}, t), gen.uniform({13}, t), gen.uniform({2, 3, 4}, t)}, {{"squared", squared}});

  // layernorm_grad, rmsnorm_grad
  for (DType t : {f32, f64}) {
    add("norm_grad", std::string("layernorm_grad ") + spelling(t), OpKind::LayerNormGrad,
        {gen.uniform({7, 10}, t), gen.uniform({10}, t), gen.uniform({10}, t), gen.uniform({7, 10}, t)}, {});
    add("norm_grad", std::string("rmsnorm_grad ") + spelling(t), OpKind::RmsNormGrad,
        {gen.uniform({7, 10}, t), gen.uniform({10}, t), gen.uniform({7, 10}, t)}, {});
  }
  add("norm_grad", "layernorm_grad [2, 3, 8] eps 1e-3", OpKind::LayerNormGrad,
      {gen.uniform({2, 3, 8}, f32), gen.uniform({8}, f32), gen.uniform({8}, f32), gen.uniform({2, 3, 8}, f32)},
      {{"eps", 1e-3}});
  add("norm_grad", "rmsnorm_grad [2, 3, 8] eps 1e-6", OpKind::RmsNormGrad,
      {gen.uniform({2, 3, 8}, f32), gen.uniform({8}, f32), gen.uniform({2, 3, 8}, f32)}, {{"eps", 1e-6}});

  // lr_schedule: the step is a scalar (f32, f64 or an integer).
  struct Schedule {
    std::string decay;
    int64_t warmup, decaySteps;
    DType dtype, stepType;
  };
  for (const Schedule &s : {Schedule{"constant", 0, 0, f32, f32}, Schedule{"constant", 5, 0, f32, f32},
                            Schedule{"linear", 10, 100, f32, f32}, Schedule{"cosine", 10, 100, f32, f32},
                            Schedule{"cosine", 0, 50, f64, f64}, Schedule{"linear", 4, 40, f32, DType::I32}}) {
    AttrMap attrs = {{"lr", 3e-4}, {"decay", s.decay}, {"warmup", s.warmup}, {"dtype", std::string(spelling(s.dtype))}};
    if (s.decay != "constant") {
      attrs["decay_steps"] = s.decaySteps;
      attrs["min_lr"] = 1e-5;
    }
    for (double step : {1.0, 3.0, 5.0, 6.0, 10.0, 11.0, 25.0, 55.0, 100.0, 150.0})
      add("lr_schedule",
          "lr_schedule " + s.decay + " warmup " + std::to_string(s.warmup) + " " + spelling(s.dtype) + " step " +
              std::to_string(int64_t(step)) + " " + spelling(s.stepType),
          OpKind::LrSchedule, {scalarTensor(step, s.stepType)}, attrs);
  }

  // sgd_update
  for (DType t : {f32, f64})
    for (bool nesterov : {false, true}) {
      AttrMap attrs = {{"momentum", 0.9}, {"weight_decay", 0.01}, {"nesterov", nesterov}};
      add("sgd", std::string("sgd_update ") + spelling(t) + (nesterov ? " nesterov" : ""), OpKind::SgdUpdate,
          {gen.uniform({37}, t), gen.uniform({37}, t), gen.uniform({37}, t, -0.5, 0.5), scalarTensor(1e-2, f32)},
          attrs);
    }
  add("sgd", "sgd_update without momentum", OpKind::SgdUpdate,
      {gen.uniform({4, 5}, f32), gen.uniform({4, 5}, f32), gen.uniform({4, 5}, f32), scalarTensor(0.1, f32)},
      {{"weight_decay", 0.01}});
  {
    Options inPlace;
    inPlace.inPlaceOf = {0, 2}; // as the plan places an update: param and buf written over
    add("sgd", "sgd_update in place", OpKind::SgdUpdate,
        {gen.uniform({29}, f32), gen.uniform({29}, f32), gen.uniform({29}, f32), scalarTensor(3e-2, f64)},
        {{"momentum", 0.9}, {"weight_decay", 0.01}, {"nesterov", true}}, inPlace);
  }

  // flash_attention and its gradient: causal or not, more keys than
  // queries, dropout with the run's draw seed and a micro-batch's rows, and
  // the gradient fed the forward's own out and lse (from the interpreter).
  {
    struct Shapes {
      Shape q, k, v;
    };
    const Shapes shapes[] = {{{2, 3, 5, 4}, {2, 3, 5, 4}, {2, 3, 5, 4}}, {{2, 4, 6}, {2, 7, 6}, {2, 7, 3}}};
    auto forward = [&](const std::vector<Tensor> &qkv, const AttrMap &attrs, uint64_t seed) {
      ir::testing::OpModule om;
      std::vector<Value *> operands;
      for (size_t i = 0; i < qkv.size(); ++i) operands.push_back(om.input("x" + std::to_string(i), qkv[i]));
      Op *op = om.b.create(OpKind::FlashAttention, operands, attrs);
      om.m.outputs.push_back(Output("out", op->results[0]));
      om.m.outputs.push_back(Output("lse", op->results[1]));
      llvm::Expected<TensorMap> r = interpret(om.m, om.feeds, seed);
      if (!r) {
        ADD_FAILURE() << llvm::toString(r.takeError());
        return std::vector<Tensor>{};
      }
      return std::vector<Tensor>{r->at("out"), r->at("lse")};
    };
    for (DType t : {f32, f64})
      for (const Shapes &sh : shapes)
        for (double p : {0.0, 0.3}) {
          bool causal = sh.q == sh.k;
          AttrMap attrs = {{"scale", 0.5}, {"causal", causal}};
          Options o;
          if (p > 0) {
            attrs["p"] = p;
            attrs["seed"] = int64_t(5);
            attrs["stream"] = int64_t(2);
            attrs["batch_split"] = std::vector<int64_t>{1, 2, 1};
            o.seed = 77;
          }
          std::vector<Tensor> qkv = {gen.uniform(sh.q, t), gen.uniform(sh.k, t), gen.uniform(sh.v, t)};
          std::string what = toString(sh.q) + " x " + toString(sh.k) + " " + spelling(t) + (causal ? " causal" : "") +
                             (p > 0 ? " dropout" : "");
          add("flash_attention", "flash_attention " + what, OpKind::FlashAttention, qkv, attrs, o);
          std::vector<Tensor> fwd = forward(qkv, attrs, o.seed);
          if (fwd.size() != 2) continue;
          std::vector<Tensor> in = qkv;
          in.push_back(fwd[0]);
          in.push_back(fwd[1]);
          in.push_back(gen.uniform(fwd[0].shape, t));
          add("flash_attention", "flash_attention_grad " + what, OpKind::FlashAttentionGrad, in, attrs, o);
        }
    Options acc;
    acc.accumulate = {true, false, true};
    std::vector<Tensor> qkv = {gen.uniform({3, 4, 2}, f32), gen.uniform({3, 4, 2}, f32), gen.uniform({3, 4, 2}, f32)};
    AttrMap attrs = {{"scale", 0.7}, {"causal", true}};
    std::vector<Tensor> fwd = forward(qkv, attrs, 0);
    if (fwd.size() == 2)
      add("flash_attention", "flash_attention_grad accumulating dq and dv", OpKind::FlashAttentionGrad,
          {qkv[0], qkv[1], qkv[2], fwd[0], fwd[1], gen.uniform({3, 4, 2}, f32)}, attrs, acc);
    add("flash_attention", "flash_attention bf16", OpKind::FlashAttention,
        {gen.uniform({2, 5, 4}, DType::BF16), gen.uniform({2, 5, 4}, DType::BF16), gen.uniform({2, 5, 4}, DType::BF16)},
        attrs);
  }

  // accumulate: the result added to what the buffer holds.
  {
    Options acc = exact;
    acc.accumulate = {true};
    add("accumulate", "causal_mask_grad accumulating", OpKind::MaskGrad, {gen.uniform({2, 4, 6}, f32)}, {}, acc);
    add("accumulate", "gather accumulating f64", OpKind::Gather, {gen.uniform({11, 6}, f64), gen.indices({3, 4}, 11)},
        {}, acc);
    add("accumulate", "scatter_add accumulating (unnamed rows keep their bytes)", OpKind::ScatterAdd,
        {gen.indices({3, 4}, 11), gen.uniform({3, 4, 6}, f32)}, {{"rows", int64_t(11)}}, acc);
    add("accumulate", "concat accumulating", OpKind::Concat, {gen.uniform({2, 3}, f32), gen.uniform({2, 2}, f32)},
        {{"dim", int64_t(1)}}, acc);
    Options accTol;
    accTol.accumulate = {true, false, true};
    add("accumulate", "layernorm_grad accumulating dx and db", OpKind::LayerNormGrad,
        {gen.uniform({5, 6}, f64), gen.uniform({6}, f64), gen.uniform({6}, f64), gen.uniform({5, 6}, f64)}, {},
        accTol);
  }

  // 16-bit floats (bf16, f16): read and rounded through the runtime's
  // conversions, as the reference rounds.
  {
    const DType bf16 = DType::BF16, f16 = DType::F16;
    add("half", "causal_mask bf16", OpKind::CausalMask, {gen.uniform({2, 5, 5}, bf16)}, {}, exact);
    add("half", "gather f16", OpKind::Gather, {gen.uniform({9, 4}, f16), gen.indices({2, 3}, 9)}, {}, exact);
    for (DType t : {bf16, f16}) {
      std::string d = spelling(t);
      add("half", "layernorm_grad " + d, OpKind::LayerNormGrad,
          {gen.uniform({4, 8}, t), gen.uniform({8}, t), gen.uniform({8}, t), gen.uniform({4, 8}, t)}, {});
      add("half", "cross_entropy_grad " + d, OpKind::CrossEntropyGrad,
          {gen.uniform({5, 11}, t), gen.indices({5}, 11), scalarTensor(1.0, DType::F32)}, {});
      add("half", "rope " + d, OpKind::Rope, {gen.uniform({1, 3, 2, 4}, t)}, {{"theta", 10000.0}});
    }
    add("half", "cross_entropy bf16 logits", OpKind::CrossEntropy, {gen.uniform({5, 11}, bf16), gen.indices({5}, 11)},
        {});
  }

  // Loss scaling: all_finite over several operands, select on its bool,
  // loss_scale_update backing off, counting and growing.
  {
    Tensor withInf = gen.uniform({3, 4}, DType::F16);
    withInf.data[5] = std::numeric_limits<double>::infinity();
    Tensor withNan = gen.uniform({6}, f32);
    withNan.data[2] = std::numeric_limits<double>::quiet_NaN();
    add("scaling", "all_finite of finite operands", OpKind::AllFinite,
        {gen.uniform({3, 4}, DType::F16), gen.uniform({6}, f32)}, {}, exact);
    add("scaling", "all_finite with an inf", OpKind::AllFinite, {withInf, gen.uniform({6}, f32)}, {}, exact);
    add("scaling", "all_finite with a NaN", OpKind::AllFinite, {gen.uniform({3, 4}, DType::F16), withNan}, {},
        exact);
    for (double cond : {0.0, 1.0})
      add("scaling", "select on a scalar " + std::to_string(int(cond)), OpKind::Select,
          {scalarTensor(cond, DType::Bool), gen.uniform({3, 4}, f32), gen.uniform({3, 4}, f32)}, {}, exact);
    Tensor rows({3, 1}, DType::Bool);
    rows.data = {1, 0, 1};
    add("scaling", "select broadcasting its condition", OpKind::Select,
        {rows, gen.uniform({3, 4}, DType::F16), gen.uniform({3, 4}, DType::F16)}, {}, exact);
    AttrMap rule = {{"growth", 2.0}, {"backoff", 0.5}, {"window", int64_t(3)}};
    add("scaling", "loss_scale_update after an overflow", OpKind::LossScaleUpdate,
        {scalarTensor(65536.0, f32), scalarTensor(2.0, f32), scalarTensor(0.0, DType::Bool)}, rule, exact);
    add("scaling", "loss_scale_update counting", OpKind::LossScaleUpdate,
        {scalarTensor(65536.0, f32), scalarTensor(1.0, f32), scalarTensor(1.0, DType::Bool)}, rule, exact);
    add("scaling", "loss_scale_update growing after its window", OpKind::LossScaleUpdate,
        {scalarTensor(65536.0, f32), scalarTensor(2.0, f32), scalarTensor(1.0, DType::Bool)}, rule, exact);
  }
  return cases;
}

void LibraryKernelsTest::SetUpTestSuite() {
  std::vector<LibraryCase> &all = cases();
  all = makeCases();
  planc::testing::ScratchDir dir;
  std::string source;
  llvm::raw_string_ostream os(source);
  renderPrelude(cpuLanguage(), os);
  renderLibraryPrelude(cpuLanguage(), os);
  os << "#include <cstdio>\n" << planc::testing::kReadFileHelper;
  for (const LibraryCase &c : all) {
    std::string why = renderCase(c, cpuLanguage(), os);
    if (!why.empty()) {
      ADD_FAILURE() << c.label << ": no library kernel: " << why;
      return;
    }
  }
  os << "int main(int, char **argv) {\n  std::string dir = argv[1];\n";
  for (size_t n = 0; n < all.size(); ++n) {
    const LibraryCase &c = all[n];
    const std::string file = dir.path + "/" + std::to_string(n), f = "dir + \"/" + std::to_string(n);
    os << "  { // " << cComment(c.label) << "\n";
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      planc::testing::writeTensor(file + ".in" + std::to_string(i), c.inputs[i]);
      os << "    std::vector<char> in" << i << " = readFile(" << f << ".in" << i << "\");\n";
    }
    for (size_t k = 0; k < c.want.size(); ++k) {
      if (c.inPlaceOf[k] >= 0) continue;
      planc::testing::writeTensor(file + ".before" + std::to_string(k), c.before[k]);
      os << "    std::vector<char> out" << k << " = readFile(" << f << ".before" << k << "\");\n";
    }
    os << "    planc_draw_seed = " << c.seed << "ull;\n    " << c.name << "(";
    for (size_t i = 0; i < c.inputs.size(); ++i) os << (i ? ", " : "") << "in" << i << ".data()";
    for (size_t k = 0; k < c.want.size(); ++k) {
      os << ", ";
      if (c.inPlaceOf[k] >= 0) os << "in" << c.inPlaceOf[k] << ".data()";
      else os << "out" << k << ".data()";
    }
    os << ");\n"
       << "    std::string error = planc::cpu::takeKernelError();\n"
       << "    if (!error.empty()) {\n      std::fprintf(stderr, \"" << c.name << ": %s\\n\", error.c_str());\n"
       << "      return 1;\n    }\n";
    for (size_t k = 0; k < c.want.size(); ++k)
      os << "    writeFile(" << f << ".out" << k << "\", "
         << (c.inPlaceOf[k] >= 0 ? "in" + std::to_string(c.inPlaceOf[k]) : "out" + std::to_string(k)) << ");\n";
    os << "  }\n";
  }
  os << "  return 0;\n}\n";
  os.flush();
  // The runtime sources the kernels need (the error channel, Philox, the
  // 16-bit conversions) are compiled in rather than its library linked:
  // under the sanitizers that library wants theirs.
  const std::string root = sourceDir();
  if (!planc::testing::compileAndRun(source, dir.path,
                                     {"-I" + root, root + "/runtime/CpuKernels.cpp", root + "/numerics/Philox.cpp",
                                      root + "/numerics/ElementBits.cpp", root + "/numerics/FloatFormat.cpp",
                                      root + "/numerics/ElementType.cpp"}))
    return;
  for (size_t n = 0; n < all.size(); ++n) {
    LibraryCase &c = all[n];
    for (size_t k = 0; k < c.want.size(); ++k)
      c.got.push_back(
          planc::testing::readTensor(dir.path + "/" + std::to_string(n) + ".out" + std::to_string(k), c.want[k]));
  }
  ran() = true;
}

void LibraryKernelsTest::checkGroup(const std::string &group) {
  ASSERT_TRUE(ran()) << "the program of library kernels did not compile or run";
  size_t seen = 0;
  for (const LibraryCase &c : cases()) {
    if (c.group != group) continue;
    ++seen;
    ASSERT_EQ(c.got.size(), c.want.size()) << c.label;
    for (size_t k = 0; k < c.want.size(); ++k) {
      const Tensor &want = c.want[k], &got = c.got[k];
      ASSERT_EQ(got.data.size(), want.data.size()) << c.label << " output " << k;
      runtime::ElementType e = interp::toElementType(want.dtype);
      // The 16-bit floats: the reference's f64 result and the library's
      // may round to neighbours, one unit in the last place apart.
      const double rel = want.dtype == DType::F64    ? 1e-12
                         : want.dtype == DType::BF16 ? 0x1p-7
                         : want.dtype == DType::F16  ? 0x1p-10
                                                     : 1e-6;
      // Fused attention and cross-entropy of f32 compute in f32 (exp by
      // runtime/FastMath.h, f32 dot products): within 1e-5 of the output's
      // largest element, as the tolerance for reductions.
      const bool inF32 = want.dtype == DType::F32 && (c.group == "flash_attention" || c.group == "cross_entropy");
      double largest = 0;
      for (double w : want.data) largest = std::max(largest, std::fabs(w));
      for (size_t i = 0; i < want.data.size(); ++i) {
        // Accumulating: the result rounded to the dtype (the interpreter's)
        // added to the buffer's value and rounded again, as the library does.
        double w = c.accumulate[k] ? runtime::roundToElement(e, c.before[k].data[i] + want.data[i]) : want.data[i];
        double g = got.data[i];
        if (c.exact)
          ASSERT_TRUE(g == w || (std::isnan(g) && std::isnan(w)))
              << c.label << " output " << k << " element " << i << ": got " << g << ", want " << w;
        else
          ASSERT_NEAR(g, w, inF32 ? 1e-5 * std::max(std::fabs(w), largest) : rel * std::fabs(w))
              << c.label << " output " << k << " element " << i;
      }
    }
  }
  EXPECT_GT(seen, 0u) << "no case of group " << group;
}

TEST_F(LibraryKernelsTest, CausalMasksEqualTheInterpreter) { checkGroup("masks"); }

TEST_F(LibraryKernelsTest, RopeEqualsTheInterpreter) { checkGroup("rope"); }

TEST_F(LibraryKernelsTest, DropoutDrawsTheInterpretersMask) {
  checkGroup("dropout");
  // Not vacuous: p = 0.25 drops some elements and keeps the others.
  for (const LibraryCase &c : cases()) {
    if (c.group != "dropout" || std::get<double>(c.attrs.at("p")) == 0 || c.got.empty()) continue;
    size_t dropped = 0;
    for (double v : c.got[0].data) dropped += v == 0;
    EXPECT_GT(dropped, 0u) << c.label;
    EXPECT_LT(dropped, c.got[0].data.size() / 2) << c.label;
  }
}

TEST_F(LibraryKernelsTest, FlashAttentionAndItsGradientEqualTheInterpreter) {
  checkGroup("flash_attention");
  // Not vacuous: every case computed something other than zeros.
  for (const LibraryCase &c : cases()) {
    if (c.group != "flash_attention" || c.got.empty()) continue;
    double largest = 0;
    for (double v : c.got[0].data) largest = std::max(largest, std::fabs(v));
    EXPECT_GT(largest, 1e-3) << c.label;
  }
}

TEST_F(LibraryKernelsTest, GatherAndScatterAddEqualTheInterpreter) { checkGroup("gather"); }

TEST_F(LibraryKernelsTest, ConcatAndRepeatInterleaveEqualTheInterpreter) { checkGroup("concat"); }

TEST_F(LibraryKernelsTest, CrossEntropyAndItsGradientEqualTheInterpreter) { checkGroup("cross_entropy"); }

TEST_F(LibraryKernelsTest, GlobalNormEqualsTheInterpreter) { checkGroup("global_norm"); }

TEST_F(LibraryKernelsTest, NormGradientsEqualTheInterpreter) { checkGroup("norm_grad"); }

TEST_F(LibraryKernelsTest, LrScheduleEqualsTheInterpreter) { checkGroup("lr_schedule"); }

TEST_F(LibraryKernelsTest, SgdUpdateEqualsTheInterpreter) { checkGroup("sgd"); }

TEST_F(LibraryKernelsTest, SixteenBitFloatsEqualTheInterpreter) { checkGroup("half"); }

TEST_F(LibraryKernelsTest, LossScalingEqualsTheInterpreter) { checkGroup("scaling"); }

TEST_F(LibraryKernelsTest, AccumulatingStepsAddToTheirBuffers) { checkGroup("accumulate"); }

TEST(LibraryKernelsInProcessTest, OutOfRangeIndexIsAKernelError) {
  (void)planc::cpu::takeKernelError(); // nothing left over from another test
  std::vector<float> table(4 * 3, 1.0f), out(2 * 3, 0.0f);
  std::vector<int32_t> indices = {1, 4};
  planc::cpu::gather(table.data(), indices.data(), out.data(), 2, 4, 3, 0, 4, false);
  std::string error = planc::cpu::takeKernelError();
  EXPECT_NE(error, "");
  EXPECT_NE(error.find("4 is out of range [0, 4)"), std::string::npos) << error;
  EXPECT_EQ(planc::cpu::takeKernelError(), "") << "taking the error clears it";
  indices = {-1, 0};
  planc::cpu::scatterAdd(indices.data(), out.data(), table.data(), 2, 4, 3, 0, 4, false);
  EXPECT_NE(planc::cpu::takeKernelError(), "");
  std::vector<int32_t> targets = {0, 5};
  float loss = 0;
  planc::cpu::crossEntropy(table.data(), targets.data(), &loss, 2, 3, 2.0, false);
  EXPECT_NE(planc::cpu::takeKernelError(), "");
  // In range: no error.
  indices = {3, 0};
  planc::cpu::gather(table.data(), indices.data(), out.data(), 2, 4, 3, 0, 4, false);
  EXPECT_EQ(planc::cpu::takeKernelError(), "");
}

TEST(LibraryKernelsInProcessTest, SaysWhyItRendersNothing) {
  LibraryCase c;
  c.kind = OpKind::CausalMask;
  c.name = "k";
  c.inputs = {Tensor({3, 3}, DType::F32)};
  c.want = {Tensor({3, 3}, DType::F32)};
  std::string text;
  llvm::raw_string_ostream os(text);
  EXPECT_EQ(renderCase(c, cpuLanguage(), os), "");
  os.flush();
  EXPECT_NE(text, "");

  std::string none;
  llvm::raw_string_ostream nothing(none);
  EXPECT_NE(renderCase(c, cudaLanguage(), nothing), "");
  c.inputs = {Tensor({3, 3}, DType::F8E4M3)};
  c.want = {Tensor({3, 3}, DType::F8E4M3)};
  EXPECT_NE(renderCase(c, cpuLanguage(), nothing), "");
  c.inputs = {Tensor({3, 3}, DType::F32)};
  c.kind = OpKind::Add;
  EXPECT_NE(renderCase(c, cpuLanguage(), nothing), "");
  nothing.flush();
  EXPECT_EQ(none, "") << "nothing is written for a step it does not render";
  EXPECT_TRUE(hasLibraryKernel(OpKind::SgdUpdate));
  EXPECT_FALSE(hasLibraryKernel(OpKind::MatMul));
}

// Every library signature an op declares (ir/KernelDesc.h) has its wrapper
// here, and every op of the library class has one or says why not.
TEST(LibraryKernelsInProcessTest, EverySignatureHasAWrapper) {
  for (unsigned i = 0; i < unsigned(OpKind::NumOps); ++i) {
    const KernelDesc &k = opDef(OpKind(i)).kernel;
    if (k.library.name) EXPECT_TRUE(hasLibraryKernel(OpKind(i))) << spelling(OpKind(i)) << ": " << k.library.name;
    if (k.cls == KernelClass::Library) EXPECT_TRUE(k.library.name || k.none) << spelling(OpKind(i));
  }
  // Without a signature there is no wrapper, whatever the class.
  EXPECT_FALSE(hasLibraryKernel(OpKind::Adam8bitUpdate));
  EXPECT_FALSE(hasLibraryKernel(OpKind::Softmax));
}

} // namespace
