//===- tests/unit/frontend/DirectParserTest.cpp - the fast path equals ANTLR's ---===//
//
// frontend/DirectParser.h builds the AST without ANTLR and gives up on what
// it does not handle; parseFile then runs the ANTLR path. Here parseFile runs
// each text both ways (PLANC_PARSER=antlr forces the ANTLR path) and the two
// results must be the same: every field of every node, every source range
// as a byte offset, and every diagnostic. On every .plan file of the
// repository, on thousands of mutants of them, and on texts chosen for
// precedence, annotation placement and the setting forms.
//
//===----------------------------------------------------------------------===//

#include "frontend/DirectParser.h"
#include "frontend/Parser.h"
#include "StepTestHelpers.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

using namespace planc;
using namespace planc::ast;

namespace {

/// Every field of an AST as text, ranges as byte offsets from `base`.
class DirectParserTestPrinter {
public:
  explicit DirectParserTestPrinter(const char *base) : base(base) {}
  std::string out;

  void file(const SourceFile &f) {
    for (const ImportDecl &i : f.imports) line("import " + i.path + (i.isFile ? " file " : " ") + r(i.range));
    for (const auto &l : f.layers) {
      line("layer " + l->name + r(l->nameRange) + r(l->range));
      for (const LayerParam &p : l->params) {
        line(" param " + p.name + r(p.nameRange) + " kind " + std::to_string(int(p.kind)) + " " + p.typeName +
             r(p.typeRange));
        for (const std::string &v : p.enumValues) line("  enum " + v);
        if (p.kind == LayerParam::Kind::Tensor) type(p.tensorType);
        if (p.defaultValue) expr(*p.defaultValue, 2);
      }
      body(l->body, 1);
    }
    for (const auto &m : f.models) {
      line("model " + m->name + r(m->nameRange) + r(m->range));
      body(m->body, 1);
    }
    for (const auto &n : f.nameMaps) {
      line("names " + n->name + r(n->nameRange) + r(n->range));
      for (const NameRule &rule : n->rules) {
        line(" rule " + rule.file + r(rule.fileRange) + r(rule.range));
        expr(*rule.target, 2);
      }
      for (const auto &s : n->settings) setting(*s, 1);
    }
    for (const auto &b : f.blocks) {
      line("block " + std::to_string(int(b->kind)) + r(b->keywordRange) + r(b->range));
      for (const auto &s : b->settings) setting(*s, 1);
    }
  }

private:
  std::string r(SMRange range) const {
    if (!range.isValid()) return " <none>";
    return " <" + std::to_string(range.Start.getPointer() - base) + "," +
           std::to_string(range.End.getPointer() - base) + ">";
  }
  void line(const std::string &s, unsigned depth = 0) { out += std::string(depth, ' ') + s + "\n"; }

  void type(const TensorType &t) {
    line("  type " + t.dtype + r(t.dtypeRange) + r(t.range));
    for (const DimItem &d : t.dims) {
      line("   dim" + std::string(d.ellipsis ? " ..." : "") + r(d.range));
      if (d.expr) expr(*d.expr, 4);
    }
  }
  void annotations(const std::vector<Annotation> &list, unsigned depth) {
    for (const Annotation &a : list) annotation(a, depth);
  }
  void annotation(const Annotation &a, unsigned depth) {
    line("@" + a.name + r(a.range) + r(a.fullRange) + (a.hasParens ? " ()" : ""), depth);
    args(a.args, depth + 1);
  }
  void args(const std::vector<Arg> &list, unsigned depth) {
    for (const Arg &a : list) {
      line("arg " + a.name + r(a.nameRange), depth);
      if (a.value) expr(*a.value, depth + 1);
    }
  }
  void setting(const Setting &s, unsigned depth) {
    line("setting " + s.key + r(s.keyRange) + r(s.range) + " form " + std::to_string(int(s.form)), depth);
    if (s.value) expr(*s.value, depth + 1);
    args(s.args, depth + 1);
    for (const auto &n : s.nested) setting(*n, depth + 1);
  }
  void body(const Body &items, unsigned depth) {
    for (const ItemPtr &item : items) {
      std::string head = "item " + std::to_string(int(item->kind)) + r(item->range);
      if (auto *l = llvm::dyn_cast<LetItem>(item.get())) {
        line(head, depth);
        for (const auto &b : l->bindings) {
          line("bind " + b.name + r(b.nameRange), depth + 1);
          expr(*b.value, depth + 2);
        }
      } else if (auto *in = llvm::dyn_cast<InputItem>(item.get())) {
        line(head + " " + in->name + r(in->nameRange), depth);
        type(in->type);
        annotations(in->annotations, depth + 1);
      } else if (auto *p = llvm::dyn_cast<ParamItem>(item.get())) {
        line(head + " " + p->name + r(p->nameRange), depth);
        type(p->type);
        if (p->init) expr(*p->init, depth + 1);
        annotations(p->annotations, depth + 1);
      } else if (auto *a = llvm::dyn_cast<AssignItem>(item.get())) {
        line(head, depth);
        for (size_t k = 0; k < a->names.size(); ++k) line("name " + a->names[k] + r(a->nameRanges[k]), depth + 1);
        expr(*a->value, depth + 1);
      } else if (auto *rep = llvm::dyn_cast<RepeatItem>(item.get())) {
        line(head + " label " + rep->label + r(rep->labelRange), depth);
        expr(*rep->count, depth + 1);
        annotations(rep->annotations, depth + 1);
        body(rep->body, depth + 1);
      } else if (auto *i = llvm::dyn_cast<IfItem>(item.get())) {
        line(head, depth);
        expr(*i->condition, depth + 1);
        body(i->thenBody, depth + 1);
        line("else", depth);
        body(i->elseBody, depth + 1);
      } else if (auto *ret = llvm::dyn_cast<ReturnItem>(item.get())) {
        line(head, depth);
        for (const auto &v : ret->values) expr(*v, depth + 1);
      }
    }
  }
  void expr(const Expr &e, unsigned depth) {
    std::string head = "expr " + std::to_string(int(e.kind)) + r(e.range);
    if (auto *n = llvm::dyn_cast<NumberExpr>(&e)) {
      line(head + " " + n->text + " " + std::to_string(n->isInteger) + " " + std::to_string(n->intValue) + " " +
               std::to_string(n->floatValue) + " " + std::to_string(n->overflow),
           depth);
    } else if (auto *q = llvm::dyn_cast<QuantityExpr>(&e)) {
      line(head + " " + q->text + " " + std::to_string(q->number) + " " + q->unit, depth);
    } else if (auto *s = llvm::dyn_cast<StringExpr>(&e)) {
      line(head + " \"" + s->value + "\"", depth);
    } else if (auto *b = llvm::dyn_cast<BoolExpr>(&e)) {
      line(head + (b->value ? " true" : " false"), depth);
    } else if (auto *n = llvm::dyn_cast<NameExpr>(&e)) {
      line(head + " " + n->name, depth);
    } else if (auto *c = llvm::dyn_cast<CallExpr>(&e)) {
      line(head + " " + c->callee + r(c->calleeRange), depth);
      args(c->args, depth + 1);
    } else if (auto *m = llvm::dyn_cast<MemberExpr>(&e)) {
      line(head + " ." + m->member + r(m->memberRange), depth);
      expr(*m->base, depth + 1);
    } else if (auto *n = llvm::dyn_cast<NamedExpr>(&e)) {
      line(head + " as " + n->name + r(n->nameRange), depth);
      expr(*n->inner, depth + 1);
    } else if (auto *a = llvm::dyn_cast<AnnotatedExpr>(&e)) {
      line(head, depth);
      expr(*a->inner, depth + 1);
      annotation(a->annotation, depth + 1);
    } else if (auto *u = llvm::dyn_cast<UnaryExpr>(&e)) {
      line(head + " op " + std::to_string(int(u->op)), depth);
      expr(*u->operand, depth + 1);
    } else if (auto *b = llvm::dyn_cast<BinaryExpr>(&e)) {
      line(head + " " + spelling(b->op) + r(b->opRange), depth);
      expr(*b->lhs, depth + 1);
      expr(*b->rhs, depth + 1);
    } else if (auto *t = llvm::dyn_cast<TupleExpr>(&e)) {
      line(head, depth);
      for (const auto &x : t->elements) expr(*x, depth + 1);
    } else if (auto *l = llvm::dyn_cast<ListExpr>(&e)) {
      line(head, depth);
      for (const auto &x : l->elements) expr(*x, depth + 1);
    }
  }

  const char *base;
};

/// Keeps each diagnostic's message and location as text.
class DirectParserTestDiags : public DiagnosticConsumer {
public:
  explicit DirectParserTestDiags(std::string &out, const char *base) : out(out), base(base) {}
  void handle(const Diagnostic &d) override {
    out += std::to_string(int(d.id)) + " @" + std::to_string(d.loc.isValid() ? d.loc.getPointer() - base : -1) +
           " " + d.message + "\n";
  }

private:
  std::string &out;
  const char *base;
};

/// The AST (or "null") and the diagnostics of `text`, by one path.
std::string directParserTestParse(const std::string &text, bool antlr) {
  if (antlr) ::setenv("PLANC_PARSER", "antlr", 1);
  else ::unsetenv("PLANC_PARSER");
  llvm::SourceMgr sm;
  unsigned id = sm.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, "t.plan"), llvm::SMLoc());
  const char *base = sm.getMemoryBuffer(id)->getBufferStart();
  std::string diagText;
  DiagnosticEngine diags(sm);
  diags.setConsumer(std::make_unique<DirectParserTestDiags>(diagText, base));
  std::unique_ptr<SourceFile> file = parseFile(sm, id, diags);
  ::unsetenv("PLANC_PARSER");
  if (!file) return "null\n" + diagText;
  DirectParserTestPrinter printer(base);
  printer.file(*file);
  return printer.out + diagText;
}

/// Empty when both paths agree on `text`, else both results.
std::string directParserTestCompare(const std::string &text) {
  std::string direct = directParserTestParse(text, false), antlr = directParserTestParse(text, true);
  return direct == antlr ? "" : "direct:\n" + direct + "\nANTLR:\n" + antlr;
}

/// Whether the direct parser alone takes `text`.
bool directParserTestHandles(const std::string &text) {
  return parser::parseFileDirect(text, ParseLimits()) != nullptr;
}

std::vector<std::string> directParserTestPlanTexts() {
  std::vector<std::string> texts;
  std::error_code ec;
  for (const char *dir : {"examples", "lib/std", "tests/lit", "tests/e2e", "bench"}) {
    llvm::SmallString<256> root(planc::testing::sourceDir());
    llvm::sys::path::append(root, dir);
    for (llvm::sys::fs::recursive_directory_iterator it(root, ec), end; it != end && !ec; it.increment(ec))
      if (llvm::StringRef(it->path()).endswith(".plan"))
        if (auto buffer = llvm::MemoryBuffer::getFile(it->path())) texts.push_back((*buffer)->getBuffer().str());
  }
  return texts;
}

} // namespace

TEST(DirectParser, AgreesWithANTLROnEveryPlanOfTheRepository) {
  std::vector<std::string> texts = directParserTestPlanTexts();
  ASSERT_GT(texts.size(), 200u);
  size_t handled = 0;
  for (const std::string &text : texts) {
    EXPECT_EQ(directParserTestCompare(text), "") << text.substr(0, 2000);
    handled += directParserTestHandles(text);
  }
  // The fast path is the common path: nearly every valid plan takes it.
  EXPECT_GT(handled, texts.size() / 2);
}

TEST(DirectParser, AgreesWithANTLROnMutatedPlans) {
  std::vector<std::string> seeds;
  for (const std::string &text : directParserTestPlanTexts())
    if (text.size() < 20000 && directParserTestHandles(text)) seeds.push_back(text);
  ASSERT_FALSE(seeds.empty());
  // Pieces that change how a plan parses.
  const std::vector<std::string> pieces = {
      "-", "not ", " and ", " or ", " * ", " @ ", " + ", " == ", " < ", "@shard(tp, 1)", "@recompute", " as x",
      ".w", "(", ")", "[", "]", "{", "}", ",", "=", ":", "...", "1", "1e400", "99999999999999999999", "\"s\"",
      "true", "repeat 2 ", "if a ", "else ", "return ", "let ", "input ", "param ", "model", "enum", "x", " ",
      "\n", "/*", "*/", "80 GiB", "1f1b", "layer", "names", "train", "mesh(dp = 2)", "#"};
  std::mt19937 rng(20261207);
  size_t handled = 0;
  for (int n = 0; n < 3000; ++n) {
    std::string text = seeds[rng() % seeds.size()];
    int edits = 1 + int(rng() % 3);
    for (int k = 0; k < edits && !text.empty(); ++k) {
      size_t at = rng() % text.size();
      while (at > 0 && ((unsigned char)text[at] >> 6) == 2) --at;
      switch (rng() % 3) {
      case 0: text.insert(at, pieces[rng() % pieces.size()]); break;
      case 1: text.erase(at, 1 + rng() % 3); break;
      default: text.replace(at, 1, pieces[rng() % pieces.size()]);
      }
    }
    ASSERT_EQ(directParserTestCompare(text), "") << "mutant " << n << ":\n" << text;
    handled += directParserTestHandles(text);
  }
  // Many mutants are still plans, and those the fast path must take.
  EXPECT_GT(handled, 300u);
}

TEST(DirectParser, PrecedenceAndAssociativityAreANTLRs) {
  for (const char *e : {"a - b - c", "a * b + c * d", "-a * b", "-a.b", "- a as x", "not a == b", "not a and b",
                        "a + not b and c", "a * not b + c", "a == not b == c", "a or b and c or d",
                        "a < b == c > d", "-f(x) @r(1) as y .z", "a @ b @ c", "a % b / c", "(a + b) * c",
                        "(a, b,)", "(a, , )", "[a, b, ]", "f(k = 1, 2, )", "- - a", "not not a", "a as b as c",
                        "x @p @q(1, y = 2)"}) {
    std::string text = std::string("model m {\n  y = ") + e + "\n}\n";
    EXPECT_TRUE(directParserTestHandles(text)) << e;
    EXPECT_EQ(directParserTestCompare(text), "") << e;
  }
}

TEST(DirectParser, GivesUpSilentlyOnWhatANTLRReports) {
  for (const char *text : {"model m { y = }", "model m { y = 1 +", "model m { y = $ }", "model m { /* y = 1 }",
                           "model m { y = \"abc }", "model m { y = (1 ] }", "train { memory = 80 GiBs }",
                           "model m { y = 99999999999999999999 }", "model m { y = 1e400 }", "model m {} import a"}) {
    EXPECT_FALSE(directParserTestHandles(text)) << text;
    EXPECT_EQ(directParserTestCompare(text), "") << text;
  }
  // Deeper than ParseLimits::maxExprDepth: ANTLR's path reports it.
  std::string deep = "model m { y = a";
  for (int k = 0; k < 500; ++k) deep += " + a";
  deep += " }";
  EXPECT_FALSE(directParserTestHandles(deep));
  EXPECT_EQ(directParserTestCompare(deep), "");
}

TEST(DirectParser, PlacesTrailingAnnotationsAndSettingFormsAsANTLRDoes) {
  for (const char *text : {
           "model m {\n  param w: [4] = normal(0.02) @shard(tp, 1) @frozen\n  input x: i32[b, ...] @shard(dp, 0)\n"
           "  repeat 12 as blocks @recompute {\n    h = f(h)\n  }\n  if a { b = 1 } else if c { b = 2 } else { b = 3 }\n"
           "  return h, w\n}\n",
           "layer l(x: [h, ...], k: enum(a, b), n: int = 2, d: dtype, e: enum [2],) {\n  return x\n}\n",
           "train {\n  optimizer adamw(lr = 3e-4)\n  mesh(dp = 2, tp = 4),\n  key (x)\n  other (x) * 2\n"
           "  device gpu { memory = 80 GiB }\n  nested { a 1, b = 2 }\n  schedule = 1f1b\n}\n",
           "names hf { \"a.{i}.w\" = transpose(\"b.{i}.w\"), config = \"llama\" }\n"}) {
    EXPECT_TRUE(directParserTestHandles(text)) << text;
    EXPECT_EQ(directParserTestCompare(text), "") << text;
  }
}
