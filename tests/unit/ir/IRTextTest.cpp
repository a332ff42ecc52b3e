//===- tests/unit/ir/IRTextTest.cpp - printing and parsing the textual IR ----===//
//
// The textual IR round-trips exactly (print(parse(print(m))) == print(m)) on
// hand-built modules with every attribute kind, shardings, multi-result ops,
// send/recv and odd names; the printed form is the one docs/ir.md shows; and
// any text that parses prints to a fixed point, also after random damage.
//
//===----------------------------------------------------------------------===//

#include "ir/Parser.h"
#include "ir/Printer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace planc;
using namespace planc::ir;

namespace {

std::unique_ptr<Module> parseOrFail(llvm::StringRef text) {
  auto m = parseIR(text, "t.ir");
  if (!m) {
    ADD_FAILURE() << llvm::toString(m.takeError()) << "\nwhile parsing:\n" << text.str();
    return nullptr;
  }
  return std::move(*m);
}

/// print(parse(text)); "" (and a failure) if it does not parse.
std::string reprint(llvm::StringRef text) {
  std::unique_ptr<Module> m = parseOrFail(text);
  return m ? toText(*m) : "";
}

TensorType f32(Shape s) { return TensorType(std::move(s), DType::F32); }

TensorType sharded(TensorType t, std::vector<std::vector<MeshAxis>> dims, std::vector<MeshAxis> partial = {}) {
  dims.resize(t.rank());
  t.sharding = Sharding{std::move(dims), std::move(partial)};
  return t;
}

/// A module using every feature of the text: mesh, params of every init,
/// frozen, both weight-decay choices, paths and locations, shardings (several axes on a dim, partial
/// sums), every attribute kind with awkward values, a multi-result op, an op
/// with no operands, send/recv, and names that must be quoted.
std::unique_ptr<Module> everythingModule() {
  auto m = std::make_unique<Module>();
  m->name = "every thing";
  m->mesh[unsigned(MeshAxis::DP)] = 2;
  m->mesh[unsigned(MeshAxis::PP)] = 2;
  m->mesh[unsigned(MeshAxis::TP)] = 4;

  Value *w = m->addParam("blocks.0.attn.w", sharded(f32({64, 16}), {{}, {MeshAxis::TP}}));
  w->initStd = 0.02;
  w->path = "blocks.0.attn.w";
  w->loc = {"examples/tiny \"gpt\".plan", 19, 15};
  Value *g = m->addParam("ln.weight", f32({16}));
  g->init = InitKind::Ones;
  g->frozen = true;
  Value *b = m->addParam("ln.bias", f32({16}));
  b->init = InitKind::Zeros;
  b->weightDecay = true;
  g->weightDecay = false;
  Value *s = m->addParam("scaled", f32({16}));
  s->init = InitKind::ScaledNormal;
  s->initStd = 0.02 / std::sqrt(24.0);
  Value *x = m->addInput("x", sharded(TensorType({8, 64}, DType::BF16), {{MeshAxis::DP, MeshAxis::PP}}));
  x->path = "x";
  Value *tokens = m->addInput("odd name \"with\" quotes\n", TensorType({8}, DType::I32));

  Op *mm = m->append(OpKind::MatMul, {x, w}, {sharded(f32({8, 16}), {{}, {MeshAxis::TP}}, {MeshAxis::DP})},
                     {{"transpose_a", false}, {"transpose_b", true}}, "y");
  mm->path = "blocks.0.attn";
  mm->loc = {"t.plan", 4, 7};
  Op *grad = m->append(OpKind::LayerNormGrad, {mm->result(), g, b, mm->result()}, {f32({8, 16}), f32({16}), f32({16})},
                       {{"eps", 1e-5}}, "dx");
  m->rename(grad->results[1], "dw");
  m->rename(grad->results[2], "db");
  Op *fill = m->append(OpKind::Fill, {}, {f32({2, 3})},
                       {{"value", -0.0},
                        {"shape", std::vector<int64_t>{2, 3}},
                        {"dtype", std::string("f32")},
                        {"big", std::numeric_limits<int64_t>::min()},
                        {"huge", 1e300},
                        {"tiny", std::numeric_limits<double>::denorm_min()},
                        {"third", 1.0 / 3.0},
                        {"whole", 2.0},
                        {"inf", -HUGE_VAL},
                        {"empty", std::vector<int64_t>{}},
                        {"text", std::string("tab\there \\ \"q\" \x01\xc3\xa9")},
                        {"odd key!", true}});
  m->append(OpKind::Send, {fill->result()}, {}, {{"axis", std::string("pp")}, {"peer_offset", int64_t(1)}, {"tag", int64_t(3)}});
  Op *recv = m->append(OpKind::Recv, {}, {f32({2, 3})},
                       {{"axis", std::string("pp")}, {"peer_offset", int64_t(-1)}, {"tag", int64_t(3)},
                        {"shape", std::vector<int64_t>{2, 3}}, {"dtype", std::string("f32")}});
  Op *cat = m->append(OpKind::Concat, {recv->result(), fill->result(), recv->result()}, {f32({6, 3})}, {{"dim", int64_t(0)}});
  m->append(OpKind::Gather, {w, tokens}, {f32({8, 16})}, {}, "");
  m->outputs = {{"loss", grad->results[0]}, {"blocks.0.attn.w", grad->results[1]}, {"", cat->result()}};
  return m;
}

TEST(IRTextTest, EverythingRoundTripsExactly) {
  std::unique_ptr<Module> m = everythingModule();
  std::string text = toText(*m);
  EXPECT_EQ(reprint(text), text);
}

TEST(IRTextTest, ParsedModuleKeepsEveryField) {
  std::unique_ptr<Module> original = everythingModule();
  std::unique_ptr<Module> m = parseOrFail(toText(*original));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->name, "every thing");
  EXPECT_EQ(m->mesh, original->mesh);
  ASSERT_EQ(m->params.size(), 4u);
  ASSERT_EQ(m->inputs.size(), 2u);
  ASSERT_EQ(m->ops.size(), original->ops.size());
  for (size_t i = 0; i < m->params.size(); ++i) {
    const Value &a = *m->params[i], &b = *original->params[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.type, b.type);
    EXPECT_EQ(a.init, b.init);
    EXPECT_EQ(a.frozen, b.frozen);
    EXPECT_EQ(a.weightDecay, b.weightDecay);
    EXPECT_EQ(a.path, b.path);
    EXPECT_EQ(a.loc, b.loc);
    if (a.init == InitKind::Normal || a.init == InitKind::ScaledNormal) {
      EXPECT_EQ(a.initStd, b.initStd);
    }
  }
  EXPECT_EQ(m->inputs[1]->name, "odd name \"with\" quotes\n");
  for (size_t i = 0; i < m->ops.size(); ++i) {
    const Op &a = *m->ops[i], &b = *original->ops[i];
    EXPECT_EQ(a.kind, b.kind);
    EXPECT_EQ(a.loc, b.loc);
    EXPECT_EQ(a.path, b.path);
    ASSERT_EQ(a.results.size(), b.results.size());
    for (size_t r = 0; r < a.results.size(); ++r) {
      EXPECT_EQ(a.results[r]->name, b.results[r]->name);
      EXPECT_EQ(a.results[r]->type, b.results[r]->type);
      EXPECT_EQ(a.results[r]->def, &a);
      EXPECT_EQ(a.results[r]->resultIndex, r);
    }
    ASSERT_EQ(a.operands.size(), b.operands.size());
    for (size_t o = 0; o < a.operands.size(); ++o) EXPECT_EQ(a.operands[o]->name, b.operands[o]->name);
    ASSERT_EQ(a.attrs.size(), b.attrs.size());
    for (const auto &[key, value] : b.attrs) {
      ASSERT_TRUE(a.has(key)) << key;
      const Attr &parsed = a.attrs.at(key);
      ASSERT_EQ(parsed.index(), value.index()) << key;
      if (auto *d = std::get_if<double>(&value))
        EXPECT_EQ(std::memcmp(d, &std::get<double>(parsed), sizeof(double)), 0) << key << " is bit-exact";
      else
        EXPECT_TRUE(parsed == value) << key;
    }
  }
  ASSERT_EQ(m->outputs.size(), 3u);
  EXPECT_EQ(m->outputs[1].name, "blocks.0.attn.w");
  EXPECT_EQ(m->outputs[1].value->name, "dw");
}

TEST(IRTextTest, PrintsTheDocumentedForm) {
  auto m = std::make_unique<Module>();
  m->name = "tiny";
  m->mesh[unsigned(MeshAxis::DP)] = 2;
  m->mesh[unsigned(MeshAxis::TP)] = 2;
  Value *w = m->addParam("w", sharded(f32({8, 4}), {{}, {MeshAxis::TP}}));
  w->path = "lin.w";
  w->loc = {"t.plan", 3, 5};
  Value *b = m->addParam("b", f32({4}));
  b->init = InitKind::Zeros;
  b->frozen = true;
  w->weightDecay = false;
  Value *x = m->addInput("x", sharded(f32({2, 8}), {{MeshAxis::DP}}));
  Op *mm = m->append(OpKind::MatMul, {x, w}, {sharded(f32({2, 4}), {{MeshAxis::DP}, {MeshAxis::TP}})},
                     {{"transpose_a", false}, {"transpose_b", false}}, "y");
  mm->path = "lin";
  mm->loc = {"t.plan", 4, 7};
  Op *add = m->append(OpKind::Add, {mm->result(), b}, {f32({2, 4})}, {});
  Op *s = m->append(OpKind::Scale, {add->result()}, {TensorType({}, DType::F32)}, {{"factor", 0.5}}, "s");
  s->result()->type.sharding.partial = {MeshAxis::DP, MeshAxis::TP};
  m->outputs = {{"out", s->result()}};
  EXPECT_EQ(toText(*m), R"(module @tiny mesh(dp = 2, tp = 2) {
  param %w : f32[8, 4]{shard(1, tp)} init normal(0.02) no_weight_decay path "lin.w" loc("t.plan":3:5)
  param %b : f32[4] init zeros frozen
  input %x : f32[2, 8]{shard(0, dp)}
  %y = matmul(%x, %w) {transpose_a = false, transpose_b = false} : f32[2, 4]{shard(0, dp), shard(1, tp)} path "lin" loc("t.plan":4:7)
  %0 = add(%y, %b) : f32[2, 4]
  %s = scale(%0) {factor = 0.5} : f32[]{partial(dp+tp)}
  return %s as "out"
}
)");
}

TEST(IRTextTest, FloatsPrintShortestAndReadBackBitExact) {
  EXPECT_EQ(formatFloat(0.02), "0.02");
  EXPECT_EQ(formatFloat(1e-5), "1e-05");
  EXPECT_EQ(formatFloat(2.0), "2.0");
  EXPECT_EQ(formatFloat(-0.0), "-0.0");
  EXPECT_EQ(formatFloat(1e300), "1e+300");
  EXPECT_EQ(formatFloat(HUGE_VAL), "inf");
  EXPECT_EQ(formatFloat(-HUGE_VAL), "-inf");
  EXPECT_EQ(formatFloat(std::nan("")), "nan");
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {
    uint64_t bits = rng();
    double x;
    std::memcpy(&x, &bits, sizeof x);
    if (std::isnan(x)) continue;
    auto m = parseIR("module @m {\n  %0 = fill() {value = " + formatFloat(x) + "} : f32[]\n  return\n}\n", "f.ir");
    ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
    double back = std::get<double>((*m)->ops[0]->attrs.at("value"));
    ASSERT_EQ(std::memcmp(&back, &x, sizeof x), 0) << formatFloat(x);
  }
}

TEST(IRTextTest, StringsAndNamesEscape) {
  EXPECT_EQ(quote("a\"b\\c\nd\te\x7f"), R"("a\"b\\c\nd\te\7F")");
  auto m = std::make_unique<Module>();
  m->addInput("plain.name_1$-x", f32({1}));
  m->addInput("has space", f32({1}));
  m->addInput("%\"quoted\"", f32({1}));
  EXPECT_EQ(valueRef(*m->inputs[0]), "%plain.name_1$-x");
  EXPECT_EQ(valueRef(*m->inputs[1]), "%\"has space\"");
  EXPECT_EQ(valueRef(*m->inputs[2]), R"(%"%\"quoted\"")");
  Value unnamed;
  EXPECT_EQ(valueRef(unnamed), "%\"\"");
  m->name = "";
  std::string text = toText(*m);
  EXPECT_EQ(llvm::StringRef(text).split('\n').first, "module @\"\" {");
  EXPECT_EQ(reprint(text), text);
}

TEST(IRTextTest, ParserAcceptsCommentsClauseOrderAndLooseSpacing) {
  std::string text = R"(// a comment before the module
module @m   mesh(tp=2,dp=2) {   // axes in any order
  param %w : f32[4]{shard(0,tp)} loc("a.plan":1:2) frozen init scaled_normal(1) path "w"
  input %x : f32[4]{}
  %y = add(%x,%w) {} : f32[4] loc("a.plan":2:3) path "p"
  return %y as "y"
})";
  EXPECT_EQ(reprint(text), R"(module @m mesh(dp = 2, tp = 2) {
  param %w : f32[4]{shard(0, tp)} init scaled_normal(1.0) frozen path "w" loc("a.plan":1:2)
  input %x : f32[4]
  %y = add(%x, %w) : f32[4] path "p" loc("a.plan":2:3)
  return %y as "y"
}
)");
}

TEST(IRTextTest, EmptyModuleRoundTrips) {
  EXPECT_EQ(reprint("module @m {}"), "module @m {\n  return\n}\n");
  EXPECT_EQ(reprint("module @m {\n  return\n}\n"), "module @m {\n  return\n}\n");
}

/// Whatever the parser accepts prints to text that parses back to the same
/// print: damage a valid module byte by byte and check every text that still
/// parses. Also proves the parser survives every damaged input.
TEST(IRTextTest, AnythingThatParsesPrintsToAFixedPoint) {
  std::string text = toText(*everythingModule());
  const char replacements[] = {'\0', ' ', '"', '%', '{', '}', '[', ']', '(', ')', ',', '-', '1', 'e', '.', '\\', '\n', '/'};
  std::mt19937 rng(11);
  size_t parsed = 0;
  for (size_t pos = 0; pos < text.size(); ++pos) {
    for (int k = 0; k < 3; ++k) {
      std::string damaged = text;
      switch (k) {
      case 0: damaged[pos] = replacements[rng() % sizeof replacements]; break;
      case 1: damaged.erase(pos, 1 + rng() % 4); break;
      case 2: damaged = text.substr(0, pos); break;
      }
      auto m = parseIR(damaged, "d.ir");
      if (!m) {
        llvm::consumeError(m.takeError());
        continue;
      }
      ++parsed;
      std::string once = toText(**m);
      ASSERT_EQ(reprint(once), once) << "from damaged text:\n" << damaged;
    }
  }
  EXPECT_GT(parsed, 0u);
}

} // namespace
