//===- tests/unit/backend/RankKernelsTest.cpp - kernels that read the rank's place -===//
//
// The kernels whose work depends on which rank runs them (backend/c/
// RankPlace.h): shard_slice and stage_merge (data movement, Layout.h), a
// gather and scatter_add on a vocab-split table, dropout and fused
// attention's dropout on a split value, and the vocab-parallel
// cross-entropy (the library, LibraryKernels.h). Each case is one step of
// a one-step program of a multi-rank plan, rendered as `planc build`
// renders it (renderProgramKernels), for a rank other than 0; its operands
// are that rank's blocks of random global values (ir/LocalBlocks.h
// splitToRanks, padding 0), and its results are compared with the
// interpreter's reference kernel run for the same rank (EvalContext's mesh
// and rank): even and uneven (padded) splits, a dim split over two axes,
// f32 and bf16. All the cases are compiled into one program that sets
// planc_mesh_coord to each case's rank before calling its kernel.
//
// Everything but fused attention (f64 sums in another association, 1e-6)
// must be bit-exact: the kernels move bits, draw the interpreter's mask,
// or compute in f64 in the reference's order and round once.
//
//===----------------------------------------------------------------------===//

#include "backend/c/ProgramKernels.h"
#include "backend/c/RankPlace.h"
#include "ir/LocalBlocks.h"
#include "ir/MeshLayout.h"
#include "ir/OpDef.h"
#include "runtime/kernels/cpu/Attention.h"
#include "runtime/kernels/cpu/Dropout.h"
#include "runtime/kernels/cpu/Indexing.h"

#include "CompiledProgram.h"
#include "OpTestHelpers.h"
#include "RandomTensors.h"

#include <cmath>
#include <cstdlib>
#include <limits>

using namespace planc;
using namespace planc::backend;
using namespace planc::ir;

namespace {

const MeshAxis DP = MeshAxis::DP, PP = MeshAxis::PP, TP = MeshAxis::TP;

/// One step on one rank: the global operands and their types, the rank's
/// blocks, the interpreter's results for that rank, what the output
/// buffers hold before the call and what the compiled kernel left.
struct RankCase {
  std::string group, label, name;
  OpKind kind = OpKind::NumOps;
  AttrMap attrs;
  MeshSizes mesh{1, 1, 1, 1, 1};
  int64_t rank = 0;
  std::vector<TensorType> operandTypes, resultTypes; // global, with their shardings
  std::vector<Tensor> inputs;                        // the rank's blocks; empty data: made on another stage
  std::vector<bool> absent;                          // stage_merge operands of other stages
  std::vector<Tensor> want, before, got;
  std::vector<bool> accumulate;
  uint64_t seed = 0;
  bool exact = true;
};

std::string sourceDir() {
  if (const char *root = std::getenv("PLANC_SOURCE_DIR")) return root;
  return PLANC_TEST_SOURCE_DIR;
}

planc::testing::RandomTensors gen(23);
using planc::testing::scalarTensor;

/// A type of `shape` and `dtype` with `dims[d]` the axes splitting dim d.
TensorType split(Shape shape, DType dtype, std::vector<std::vector<MeshAxis>> dims) {
  TensorType t(std::move(shape), dtype);
  for (size_t d = 0; d < dims.size(); ++d) t.sharding.dims[d] = dims[d];
  return t;
}

/// The rank of `coords` (indexed by MeshAxis) in a mesh of `mesh`.
int64_t rankAt(const MeshSizes &mesh, MeshCoords coords) { return MeshLayout(mesh).rankOf(coords); }

MeshCoords at(int64_t dp, int64_t pp, int64_t tp) { return {dp, pp, tp, 0, 0}; }

struct Options {
  std::vector<bool> accumulate;
  uint64_t seed = 0;
  bool exact = true;
};

/// Runs the interpreter's kernel of `kind` for `rank` on its blocks of the
/// `globals` (typed `operandTypes`) and keeps the case. A stage_merge
/// operand of another stage than the rank's is absent, as in a program.
void addCase(std::vector<RankCase> &cases, const std::string &group, const std::string &label, OpKind kind,
             AttrMap attrs, MeshSizes mesh, MeshCoords coords, std::vector<TensorType> operandTypes,
             const std::vector<Tensor> &globals, std::vector<TensorType> resultTypes, Options o = {}) {
  RankCase c;
  c.group = group;
  c.label = label;
  c.kind = kind;
  c.attrs = attrs;
  c.mesh = mesh;
  c.rank = rankAt(mesh, coords);
  c.operandTypes = operandTypes;
  c.resultTypes = resultTypes;
  c.seed = o.seed;
  c.exact = o.exact;
  const MeshLayout layout(mesh);
  Module m;
  std::vector<Value *> operands;
  std::vector<const Tensor *> in;
  for (size_t k = 0; k < globals.size(); ++k) {
    operands.push_back(m.addInput("x" + std::to_string(k), operandTypes[k]));
    const bool absent = kind == OpKind::StageMerge && int64_t(k) != coords[unsigned(PP)];
    c.absent.push_back(absent);
    c.inputs.push_back(absent ? Tensor(localShape(operandTypes[k], layout), operandTypes[k].dtype)
                              : splitToRanks(globals[k], operandTypes[k], layout)[size_t(c.rank)]);
  }
  for (size_t k = 0; k < c.inputs.size(); ++k) in.push_back(c.absent[k] ? nullptr : &c.inputs[k]);
  Op *op = m.append(kind, operands, resultTypes, attrs);
  for (const TensorType &t : resultTypes) c.want.emplace_back(localShape(t, layout), t.dtype);
  EvalContext ctx;
  ctx.seed = c.seed;
  ctx.mesh = &layout;
  ctx.rank = c.rank;
  opDef(kind).eval(ctx, *op, in, c.want);
  if (!ctx.error.empty()) {
    ADD_FAILURE() << label << ": " << ctx.error;
    return;
  }
  for (Tensor &t : c.want) {
    roundToDType(t);
    c.before.push_back(gen.uniform(t.shape, t.dtype));
  }
  c.accumulate = o.accumulate;
  c.accumulate.resize(c.want.size(), false);
  c.name = "c" + std::to_string(cases.size()) + "_";
  cases.push_back(std::move(c));
}

/// The plan of one step on the case's rank, as BuildPlan makes it: a buffer
/// per present operand and per result, a stage_merge operand of another
/// stage -1. Renders it with renderProgramKernels; the kernel's name, or ""
/// after reporting why it has none.
std::string renderCase(const RankCase &c, bool prelude, llvm::raw_ostream &os) {
  exec::ExecutionPlan plan;
  plan.name = c.label;
  plan.mesh = c.mesh;
  exec::RankProgram p;
  p.stage = int(MeshLayout(c.mesh).coordinates(c.rank)[unsigned(PP)]);
  p.ranks = {c.rank};
  auto buffer = [&](const std::string &name, const TensorType &type, const Tensor &local) {
    exec::Buffer b;
    b.name = name;
    b.setValue(exec::BufferValue{name, type, local.shape});
    p.buffers.push_back(b);
    return int64_t(p.buffers.size() - 1);
  };
  exec::Step s;
  s.kind = c.kind;
  s.attrs = exec::StepAttrs(c.attrs);
  for (size_t i = 0; i < c.inputs.size(); ++i)
    s.inputs.push_back(c.absent[i] ? -1 : buffer("x" + std::to_string(i), c.operandTypes[i], c.inputs[i]));
  for (size_t k = 0; k < c.want.size(); ++k)
    s.outputs.push_back(buffer("y" + std::to_string(k), c.resultTypes[k], c.want[k]));
  s.accumulate = c.accumulate;
  p.steps.push_back(s);
  plan.programs.push_back(p);
  std::vector<StepKernel> k = renderProgramKernels(plan, plan.programs[0], cpuLanguage(), os, {c.name, prelude});
  if (k.size() != 1 || !k[0].rendered) {
    ADD_FAILURE() << c.label << ": no kernel: " << (k.empty() ? "no step" : k[0].reason);
    return "";
  }
  return k[0].name;
}

/// The global row max and sum of exp(logit - max) of logits [..., V].
std::pair<Tensor, Tensor> rowStats(const Tensor &logits) {
  Shape rows(logits.shape.begin(), logits.shape.end() - 1);
  Tensor mx(rows, DType::F32), sum(rows, DType::F32);
  const int64_t V = logits.shape.back();
  for (size_t r = 0; r < mx.data.size(); ++r) {
    double m = -std::numeric_limits<double>::infinity(), s = 0;
    for (int64_t k = 0; k < V; ++k) m = std::max(m, logits.data[r * size_t(V) + size_t(k)]);
    for (int64_t k = 0; k < V; ++k) s += std::exp(logits.data[r * size_t(V) + size_t(k)] - m);
    mx.data[r] = m;
    sum.data[r] = s;
  }
  roundToDType(mx);
  roundToDType(sum);
  return {mx, sum};
}

std::vector<RankCase> makeCases() {
  std::vector<RankCase> cases;
  auto add = [&](const std::string &group, const std::string &label, OpKind kind, AttrMap attrs, MeshSizes mesh,
                 MeshCoords coords, std::vector<TensorType> types, std::vector<Tensor> globals,
                 std::vector<TensorType> results, Options o = {}) {
    addCase(cases, group, label, kind, std::move(attrs), mesh, coords, std::move(types), globals, std::move(results),
            std::move(o));
  };
  const DType f32 = DType::F32, bf16 = DType::BF16;
  const MeshSizes dp2tp2{2, 1, 2, 1, 1}, dp3{3, 1, 1, 1, 1}, tp2{1, 1, 2, 1, 1}, tp3{1, 1, 3, 1, 1};

  // shard_slice: the rows of the rank's block of the result out of its
  // operand's block; past the operand's data, zeros (an uneven split).
  for (DType t : {f32, bf16}) {
    const std::string d = spelling(t);
    TensorType from = split({192}, t, {{TP}}), to = split({192}, t, {{TP, DP}});
    add("shard_slice", "b_qkv over tp, then dp, at tp 1 dp 1 " + d, OpKind::ShardSlice,
        {{"axis", std::string("dp")}, {"dim", int64_t(0)}}, dp2tp2, at(1, 0, 1), {from}, {gen.uniform({192}, t)}, {to});
    TensorType whole(Shape{7, 5}, t), rows = split({7, 5}, t, {{DP}});
    for (int64_t r : {1, 2})
      add("shard_slice", "7 rows over dp 3 at dp " + std::to_string(r) + " (padded) " + d, OpKind::ShardSlice,
          {{"axis", std::string("dp")}, {"dim", int64_t(0)}}, dp3, at(r, 0, 0), {whole}, {gen.uniform({7, 5}, t)},
          {rows});
  }
  {
    // Dim -1 of 10 over tp, then dp: 5 columns each, cut into 3 and 2 (one padded).
    TensorType from = split({3, 10}, f32, {{}, {TP}}), to = split({3, 10}, f32, {{}, {TP, DP}});
    add("shard_slice", "dim -1 over tp then dp, uneven, at tp 1 dp 1", OpKind::ShardSlice,
        {{"axis", std::string("dp")}, {"dim", int64_t(-1)}}, dp2tp2, at(1, 0, 1), {from}, {gen.uniform({3, 10}, f32)},
        {to});
    Options acc;
    acc.accumulate = {true};
    add("shard_slice", "accumulating, at tp 1 dp 0", OpKind::ShardSlice,
        {{"axis", std::string("dp")}, {"dim", int64_t(1)}}, dp2tp2, at(0, 0, 1), {from}, {gen.uniform({3, 10}, f32)},
        {to}, acc);
  }

  // stage_merge: the operand of the rank's pipeline stage, the others null.
  {
    const MeshSizes pp2{2, 2, 1, 1, 1}, pp3{1, 3, 1, 1, 1};
    TensorType s(Shape{}, f32);
    add("stage_merge", "two stages, at pp 1 dp 1", OpKind::StageMerge, {}, pp2, at(1, 1, 0), {s, s},
        {gen.uniform({}, f32), gen.uniform({}, f32)}, {s});
    TensorType v(Shape{5}, bf16);
    for (int64_t stage : {1, 2})
      add("stage_merge", "three stages of bf16, at pp " + std::to_string(stage), OpKind::StageMerge, {}, pp3,
          at(0, stage, 0), {v, v, v}, {gen.uniform({5}, bf16), gen.uniform({5}, bf16), gen.uniform({5}, bf16)}, {v});
  }

  // gather and scatter_add on a table split along its rows: the rank holds
  // rows from its offset on; another rank's rows are zeros, its padding
  // rows are never named.
  for (DType t : {f32, bf16}) {
    const std::string d = spelling(t);
    TensorType table = split({12, 4}, t, {{TP}}), idx(Shape{3, 5}, DType::I32);
    add("gather", "gather, 12 rows over tp 2, at tp 1 " + d, OpKind::Gather, {}, tp2, at(0, 0, 1), {table, idx},
        {gen.uniform({12, 4}, t), gen.indices({3, 5}, 12)}, {TensorType(Shape{3, 5, 4}, t)});
    TensorType uneven = split({11, 4}, t, {{DP}}), idx64(Shape{9}, DType::I64);
    add("gather", "gather, 11 rows over dp 3, at dp 2 (padded) " + d, OpKind::Gather, {}, dp3, at(2, 0, 0),
        {uneven, idx64}, {gen.uniform({11, 4}, t), gen.indices({9}, 11, DType::I64)}, {TensorType(Shape{9, 4}, t)});
    TensorType dy(Shape{3, 5, 4}, t);
    add("gather", "scatter_add, 12 rows over tp 2, at tp 1 " + d, OpKind::ScatterAdd, {{"rows", int64_t(12)}}, tp2,
        at(0, 0, 1), {idx, dy}, {gen.indices({3, 5}, 12), gen.uniform({3, 5, 4}, t)}, {split({12, 4}, t, {{TP}})});
    add("gather", "scatter_add, 11 rows over tp 2, at tp 1 (padded) " + d, OpKind::ScatterAdd,
        {{"rows", int64_t(11)}}, tp2, at(0, 0, 1), {idx, dy}, {gen.indices({3, 5}, 11), gen.uniform({3, 5, 4}, t)},
        {split({11, 4}, t, {{TP}})});
  }
  {
    Options acc;
    acc.accumulate = {true};
    TensorType table = split({12, 4}, f32, {{TP}}), idx(Shape{6}, DType::I32);
    add("gather", "gather accumulating, at tp 1", OpKind::Gather, {}, tp2, at(0, 0, 1), {table, idx},
        {gen.uniform({12, 4}, f32), gen.indices({6}, 12)}, {TensorType(Shape{6, 4}, f32)}, acc);
  }

  // dropout on a block of a split value draws the global mask's block:
  // counters are global indices (and a micro-batch's rows of the batch).
  {
    AttrMap attrs = {{"p", 0.25}, {"seed", int64_t(7)}, {"stream", int64_t(3)}};
    Options o;
    o.seed = 12345;
    TensorType rows = split({8, 6}, f32, {{DP}});
    add("dropout", "rows over dp 3, at dp 2 (padded)", OpKind::Dropout, attrs, dp3, at(2, 0, 0), {rows},
        {gen.awayFromZero({8, 6}, f32)}, {rows}, o);
    AttrMap split231 = attrs;
    split231["batch_split"] = std::vector<int64_t>{2, 3, 1};
    add("dropout", "rows over dp 2, at dp 1, batch_split [2, 3, 1]", OpKind::Dropout, split231, dp2tp2, at(1, 0, 0),
        {split({8, 6}, f32, {{DP}})}, {gen.awayFromZero({8, 6}, f32)}, {split({8, 6}, f32, {{DP}})}, o);
    AttrMap split143 = attrs;
    split143["batch_split"] = std::vector<int64_t>{1, 4, 3};
    add("dropout", "columns over tp 2 of bf16, at tp 1, batch_split [1, 4, 3]", OpKind::Dropout, split143, tp2,
        at(0, 0, 1), {split({4, 6}, bf16, {{}, {TP}})}, {gen.awayFromZero({4, 6}, bf16)},
        {split({4, 6}, bf16, {{}, {TP}})}, o);
    add("dropout", "rows over tp then dp, at tp 1 dp 1", OpKind::Dropout, attrs, dp2tp2, at(1, 0, 1),
        {split({8, 3, 2}, f32, {{TP, DP}})}, {gen.awayFromZero({8, 3, 2}, f32)}, {split({8, 3, 2}, f32, {{TP, DP}})},
        o);
    Options acc = o;
    acc.accumulate = {true};
    add("dropout", "accumulating, rows over dp 3, at dp 1", OpKind::Dropout, attrs, dp3, at(1, 0, 0), {rows},
        {gen.awayFromZero({8, 6}, f32)}, {rows}, acc);
  }

  // Fused attention with dropout, heads split over tp: the probabilities'
  // mask is the global one's block. The gradient is fed the forward's own
  // out and lse (the interpreter's, on the global values).
  {
    AttrMap attrs = {{"scale", 0.5}, {"causal", true}, {"p", 0.3}, {"seed", int64_t(5)}, {"stream", int64_t(2)},
                     {"batch_split", std::vector<int64_t>{1, 2, 1}}};
    Options o;
    o.seed = 77;
    o.exact = false;
    const Shape qkv = {2, 4, 5, 3};
    TensorType heads = split(qkv, f32, {{}, {TP}}), lse = split({2, 4, 5}, f32, {{}, {TP}});
    std::vector<Tensor> in = {gen.uniform(qkv, f32), gen.uniform(qkv, f32), gen.uniform(qkv, f32)};
    add("flash_attention", "flash_attention, heads over tp 2, at tp 1", OpKind::FlashAttention, attrs, tp2,
        at(0, 0, 1), {heads, heads, heads}, in, {heads, lse}, o);
    ir::testing::OpModule om;
    std::vector<Value *> vs;
    for (size_t i = 0; i < in.size(); ++i) vs.push_back(om.input("x" + std::to_string(i), in[i]));
    Op *op = om.b.create(OpKind::FlashAttention, vs, attrs);
    om.m.outputs = {Output("out", op->results[0]), Output("lse", op->results[1])};
    llvm::Expected<TensorMap> fwd = interpret(om.m, om.feeds, o.seed);
    if (!fwd) {
      ADD_FAILURE() << llvm::toString(fwd.takeError());
    } else {
      add("flash_attention", "flash_attention_grad, heads over tp 2, at tp 1", OpKind::FlashAttentionGrad, attrs, tp2,
          at(0, 0, 1), {heads, heads, heads, heads, lse, heads},
          {in[0], in[1], in[2], fwd->at("out"), fwd->at("lse"), gen.uniform(qkv, f32)}, {heads, heads, heads}, o);
    }
  }

  // vocab_ce_stats and vocab_ce_grad on logits split along the vocabulary:
  // the rank's columns from its offset on, the target's logit where it
  // holds the target's column. The row statistics are the global ones.
  for (DType t : {f32, bf16}) {
    const std::string d = spelling(t);
    Tensor logits = gen.uniform({6, 12}, t, -4.0, 4.0), targets = gen.indices({6}, 12);
    auto [mx, sum] = rowStats(logits);
    TensorType lt = split({6, 12}, t, {{}, {TP}}), tt(Shape{6}, DType::I32), row(Shape{6}, f32);
    for (int64_t r : {1, 2}) {
      add("vocab_ce", "vocab_ce_stats, 12 columns over tp 3, at tp " + std::to_string(r) + " " + d,
          OpKind::VocabCeStats, {}, tp3, at(0, 0, r), {lt, tt, row}, {logits, targets, mx}, {row, row});
      add("vocab_ce", "vocab_ce_grad, 12 columns over tp 3, at tp " + std::to_string(r) + " " + d,
          OpKind::VocabCeGrad, {}, tp3, at(0, 0, r), {lt, tt, row, row, TensorType(Shape{}, f32)},
          {logits, targets, mx, sum, scalarTensor(0.75, f32)}, {lt});
    }
  }
  {
    // Rows over dp and the vocabulary over tp, a denominator: the rank's rows and columns.
    Tensor logits = gen.uniform({4, 3, 12}, f32, -4.0, 4.0), targets = gen.indices({4, 3}, 12);
    auto [mx, sum] = rowStats(logits);
    TensorType lt = split({4, 3, 12}, f32, {{DP}, {}, {TP}}), tt = split({4, 3}, DType::I32, {{DP}});
    TensorType row = split({4, 3}, f32, {{DP}});
    add("vocab_ce", "vocab_ce_stats, rows over dp, vocab over tp, at dp 1 tp 1", OpKind::VocabCeStats, {}, dp2tp2,
        at(1, 0, 1), {lt, tt, row}, {logits, targets, mx}, {row, row});
    add("vocab_ce", "vocab_ce_grad, rows over dp, vocab over tp, denominator 24, at dp 1 tp 1", OpKind::VocabCeGrad,
        {{"denominator", 24.0}}, dp2tp2, at(1, 0, 1), {lt, tt, row, row, TensorType(Shape{}, f32)},
        {logits, targets, mx, sum, scalarTensor(1.5, f32)}, {lt});
    // 13 columns over tp 2: 7 and 6, the last rank's last column padding.
    Tensor odd = gen.uniform({5, 13}, f32, -4.0, 4.0), oddTargets = gen.indices({5}, 13);
    auto [oddMx, oddSum] = rowStats(odd);
    TensorType ot = split({5, 13}, f32, {{}, {TP}}), ott(Shape{5}, DType::I32), orow(Shape{5}, f32);
    add("vocab_ce", "vocab_ce_stats, 13 columns over tp 2, at tp 1 (padded)", OpKind::VocabCeStats, {}, tp2,
        at(0, 0, 1), {ot, ott, orow}, {odd, oddTargets, oddMx}, {orow, orow});
    Options acc;
    acc.accumulate = {true};
    add("vocab_ce", "vocab_ce_grad accumulating, 13 columns over tp 2, at tp 1", OpKind::VocabCeGrad, {}, tp2,
        at(0, 0, 1), {ot, ott, orow, orow, TensorType(Shape{}, f32)},
        {odd, oddTargets, oddMx, oddSum, scalarTensor(1.0, f32)}, {ot}, acc);
  }
  return cases;
}

class RankKernelsTest : public ::testing::Test {
protected:
  static void SetUpTestSuite();
  static void TearDownTestSuite() { cases().clear(); }
  static std::vector<RankCase> &cases() {
    static std::vector<RankCase> all;
    return all;
  }
  static bool &ran() {
    static bool r = false;
    return r;
  }
  static void checkGroup(const std::string &group);
};

void RankKernelsTest::SetUpTestSuite() {
  std::vector<RankCase> &all = cases();
  all = makeCases();
  planc::testing::ScratchDir dir;
  std::string source;
  llvm::raw_string_ostream os(source);
  for (size_t n = 0; n < all.size(); ++n) {
    all[n].name = renderCase(all[n], /*prelude=*/n == 0, os);
    if (all[n].name.empty()) return;
  }
  os << "#include <cstdio>\n" << planc::testing::kReadFileHelper;
  os << "int main(int, char **argv) {\n  std::string dir = argv[1];\n";
  for (size_t n = 0; n < all.size(); ++n) {
    const RankCase &c = all[n];
    const std::string file = dir.path + "/" + std::to_string(n), f = "dir + \"/" + std::to_string(n);
    const MeshCoords coords = MeshLayout(c.mesh).coordinates(c.rank);
    os << "  { // " << cComment(c.label) << "\n";
    for (unsigned a = 0; a < kNumMeshAxes; ++a) os << "    planc_mesh_coord[" << a << "] = " << coords[a] << ";\n";
    os << "    planc_draw_seed = " << c.seed << "ull;\n";
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      if (c.absent[i]) continue;
      planc::testing::writeTensor(file + ".in" + std::to_string(i), c.inputs[i]);
      os << "    std::vector<char> in" << i << " = readFile(" << f << ".in" << i << "\");\n";
    }
    for (size_t k = 0; k < c.want.size(); ++k) {
      planc::testing::writeTensor(file + ".before" + std::to_string(k), c.before[k]);
      os << "    std::vector<char> out" << k << " = readFile(" << f << ".before" << k << "\");\n";
    }
    os << "    " << c.name << "(";
    for (size_t i = 0; i < c.inputs.size(); ++i)
      os << (i ? ", " : "") << (c.absent[i] ? "nullptr" : "in" + std::to_string(i) + ".data()");
    for (size_t k = 0; k < c.want.size(); ++k) os << ", out" << k << ".data()";
    os << ");\n"
       << "    std::string error = planc::cpu::takeKernelError();\n"
       << "    if (!error.empty()) {\n      std::fprintf(stderr, \"" << c.name << ": %s\\n\", error.c_str());\n"
       << "      return 1;\n    }\n";
    for (size_t k = 0; k < c.want.size(); ++k)
      os << "    writeFile(" << f << ".out" << k << "\", out" << k << ");\n";
    os << "  }\n";
  }
  os << "  return 0;\n}\n";
  os.flush();
  // As the library kernels' test: the runtime sources the kernels call are
  // compiled in; the prelude includes <cblas.h>, which nothing here calls.
  const std::string root = sourceDir();
  if (!planc::testing::compileAndRun(source, dir.path,
                                     {"-I" + root, root + "/runtime/CpuKernels.cpp", root + "/numerics/Philox.cpp",
                                      root + "/numerics/ElementBits.cpp", root + "/numerics/FloatFormat.cpp",
                                      root + "/numerics/ElementType.cpp"}))
    return;
  for (size_t n = 0; n < all.size(); ++n)
    for (size_t k = 0; k < all[n].want.size(); ++k)
      all[n].got.push_back(planc::testing::readTensor(dir.path + "/" + std::to_string(n) + ".out" + std::to_string(k),
                                                      all[n].want[k]));
  ran() = true;
}

void RankKernelsTest::checkGroup(const std::string &group) {
  ASSERT_TRUE(ran()) << "the program of rank kernels did not compile or run";
  size_t seen = 0;
  for (const RankCase &c : cases()) {
    if (c.group != group) continue;
    ++seen;
    ASSERT_EQ(c.got.size(), c.want.size()) << c.label;
    for (size_t k = 0; k < c.want.size(); ++k) {
      const Tensor &want = c.want[k], &got = c.got[k];
      ASSERT_EQ(got.data.size(), want.data.size()) << c.label << " output " << k;
      runtime::ElementType e = interp::toElementType(want.dtype);
      for (size_t i = 0; i < want.data.size(); ++i) {
        // Accumulating: the interpreter adds its rounded result to the
        // buffer's value and rounds again.
        double w = c.accumulate[k] ? runtime::roundToElement(e, c.before[k].data[i] + want.data[i]) : want.data[i];
        double g = got.data[i];
        if (c.exact)
          ASSERT_TRUE(g == w || (std::isnan(g) && std::isnan(w)))
              << c.label << " output " << k << " element " << i << ": got " << g << ", want " << w;
        else
          ASSERT_NEAR(g, w, 1e-6 * std::max(1.0, std::fabs(w))) << c.label << " output " << k << " element " << i;
      }
    }
  }
  EXPECT_GT(seen, 0u) << "no case of group " << group;
}

TEST_F(RankKernelsTest, ShardSliceKeepsTheRanksRows) { checkGroup("shard_slice"); }

TEST_F(RankKernelsTest, StageMergeTakesTheRanksStage) { checkGroup("stage_merge"); }

TEST_F(RankKernelsTest, GatherAndScatterAddOnAVocabSplitTable) { checkGroup("gather"); }

TEST_F(RankKernelsTest, DropoutOnASplitValueDrawsTheGlobalMasksBlock) {
  checkGroup("dropout");
  // Not vacuous: p = 0.25 drops some elements of the rank's block and keeps others.
  for (const RankCase &c : cases()) {
    if (c.group != "dropout" || c.got.empty() || c.accumulate[0]) continue;
    size_t dropped = 0;
    for (double v : c.got[0].data) dropped += v == 0;
    EXPECT_GT(dropped, 0u) << c.label;
    EXPECT_LT(dropped, c.got[0].data.size() * 2 / 3) << c.label;
  }
}

TEST_F(RankKernelsTest, FlashAttentionDropoutOnSplitHeads) { checkGroup("flash_attention"); }

TEST_F(RankKernelsTest, VocabParallelCrossEntropy) {
  checkGroup("vocab_ce");
  // Not vacuous: some rank's rows hold their target's logit, others not.
  size_t held = 0, notHeld = 0;
  for (const RankCase &c : cases())
    if (c.kind == OpKind::VocabCeStats && c.got.size() == 2)
      for (double v : c.got[1].data) (v != 0 ? held : notHeld)++;
  EXPECT_GT(held, 0u);
  EXPECT_GT(notHeld, 0u);
}

} // namespace
