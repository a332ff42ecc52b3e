//===- tests/unit/frontend/ASTDumpTest.cpp - the `--emit=ast` text -----------------===//
//
// Trees are built by hand, so these tests pin the dump format independently of
// the parser: positions come from a SourceMgr buffer, and a tree without
// positions must still dump.
//
//===----------------------------------------------------------------------===//

#include "frontend/AST.h"
#include "frontend/Frontend.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

using namespace planc;
using namespace planc::ast;

namespace {

class ASTDumpTest : public ::testing::Test {
protected:
  void setSource(llvm::StringRef text) {
    sm.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, "tiny.plan"), llvm::SMLoc());
    source = sm.getMemoryBuffer(1)->getBuffer();
  }

  /// The range of the `occurrence`-th `needle` in the source (0 is the first).
  SMRange at(llvm::StringRef needle, unsigned occurrence = 0) {
    size_t offset = source.find(needle);
    while (occurrence-- && offset != llvm::StringRef::npos)
      offset = source.find(needle, offset + 1);
    if (offset == llvm::StringRef::npos) {
      ADD_FAILURE() << "no '" << needle.str() << "' in the source";
      return {};
    }
    const char *start = source.data() + offset;
    return {SMLoc::getFromPointer(start), SMLoc::getFromPointer(start + needle.size())};
  }

  std::string dump(const SourceFile &file) {
    std::string text;
    llvm::raw_string_ostream os(text);
    dumpAST(file, sm, os);
    return os.str();
  }

  llvm::SourceMgr sm;
  llvm::StringRef source;
};

ExprPtr number(llvm::StringRef text, SMRange range = {}) {
  auto n = std::make_unique<NumberExpr>(range);
  n->text = text.str();
  return n;
}

ExprPtr name(llvm::StringRef n, SMRange range = {}) {
  return std::make_unique<NameExpr>(range, n.str());
}

ExprPtr binary(BinaryExpr::Op op, ExprPtr lhs, ExprPtr rhs, SMRange range = {}) {
  auto b = std::make_unique<BinaryExpr>(range, op);
  b->lhs = std::move(lhs);
  b->rhs = std::move(rhs);
  return b;
}

Arg arg(ExprPtr value, std::string name = "") { return Arg{std::move(name), {}, std::move(value)}; }

std::unique_ptr<CallExpr> call(llvm::StringRef callee, SMRange range = {}) {
  auto c = std::make_unique<CallExpr>(range);
  c->callee = callee.str();
  return c;
}

DimItem dim(ExprPtr e) { return DimItem{false, std::move(e), {}}; }

SettingPtr setting(llvm::StringRef key, Setting::Form form, ExprPtr value, SMRange range = {}) {
  auto s = std::make_unique<Setting>();
  s->key = key.str();
  s->range = range;
  s->form = form;
  s->value = std::move(value);
  return s;
}

TEST_F(ASTDumpTest, ModelAndTrainBlockWithPositions) {
  setSource("model tiny {\n"
            "  let vocab = 256\n"
            "  input tokens : i32[batch, seq]\n"
            "  x = embedding(tokens, vocab) + 1\n"
            "}\n"
            "\n"
            "train {\n"
            "  global_batch = 512\n"
            "  optimizer adamw(lr = 6e-4)\n"
            "}\n");
  SourceFile file;
  file.fileName = "tiny.plan";

  // The train block is listed first: the dump must still follow the source.
  auto train = std::make_unique<ConfigBlock>();
  train->kind = ConfigBlock::Kind::Train;
  train->range = at("train");
  train->settings.push_back(setting("global_batch", Setting::Form::Assign,
                                    number("512", at("512")), at("global_batch")));
  auto adamw = call("adamw", at("adamw"));
  adamw->args.push_back(arg(number("6e-4", at("6e-4")), "lr"));
  train->settings.push_back(setting("optimizer", Setting::Form::Word, std::move(adamw),
                                    at("optimizer")));
  file.blocks.push_back(std::move(train));

  auto model = std::make_unique<ModelDecl>();
  model->name = "tiny";
  model->range = at("model");
  auto let = std::make_unique<LetItem>(at("let"));
  let->bindings.push_back({"vocab", at("vocab"), number("256", at("256"))});
  model->body.push_back(std::move(let));

  auto input = std::make_unique<InputItem>(at("input"));
  input->name = "tokens";
  input->type.dtype = "i32";
  input->type.dims.push_back(dim(name("batch")));
  input->type.dims.push_back(dim(name("seq")));
  model->body.push_back(std::move(input));

  auto assign = std::make_unique<AssignItem>(at("x ="));
  assign->names = {"x"};
  auto embedding = call("embedding", at("embedding"));
  embedding->args.push_back(arg(name("tokens", at("tokens", 1))));
  embedding->args.push_back(arg(name("vocab", at("vocab", 1))));
  assign->value = binary(BinaryExpr::Op::Add, std::move(embedding), number("1", at("1\n")),
                         at("embedding"));
  model->body.push_back(std::move(assign));
  file.models.push_back(std::move(model));

  EXPECT_EQ(dump(file), "File 'tiny.plan'\n"
                        "  Model 'tiny' <1:1>\n"
                        "    Let <2:3>\n"
                        "      Binding 'vocab' <2:7>\n"
                        "        Number 256\n"
                        "    Input 'tokens' <3:3> type i32[batch, seq]\n"
                        "    Assign 'x' <4:3>\n"
                        "      Binary '+' <4:7>\n"
                        "        Call 'embedding' <4:7>\n"
                        "          Arg\n"
                        "            Name 'tokens'\n"
                        "          Arg\n"
                        "            Name 'vocab'\n"
                        "        Number 1\n"
                        "  Config 'train' <7:1>\n"
                        "    Setting 'global_batch' <8:3> assign\n"
                        "      Number 512\n"
                        "    Setting 'optimizer' <9:3> word\n"
                        "      Call 'adamw' <9:13>\n"
                        "        Arg 'lr'\n"
                        "          Number 6e-4\n");
}

// Without a source manager entry there are no positions, and the lists keep
// their order: imports, layers, models, blocks.
TEST_F(ASTDumpTest, LayerParamsAnnotationsAndNestedSettingsInline) {
  SourceFile file;
  file.fileName = "lib.plan";
  file.imports.push_back({"std.gpt", false, {}});
  file.imports.push_back({"my \"layers\".plan", true, {}});

  auto layer = std::make_unique<LayerDecl>();
  layer->name = "mlp";
  LayerParam x;
  x.name = "x";
  x.kind = LayerParam::Kind::Tensor;
  x.tensorType.dims.push_back(DimItem{true, nullptr, {}});
  x.tensorType.dims.push_back(dim(name("h")));
  layer->params.push_back(std::move(x));
  LayerParam mode;
  mode.name = "mode";
  mode.kind = LayerParam::Kind::Enum;
  mode.enumValues = {"a", "b"};
  mode.defaultValue = name("a");
  layer->params.push_back(std::move(mode));
  LayerParam p;
  p.name = "p";
  p.kind = LayerParam::Kind::Float;
  p.defaultValue = number("0.1");
  layer->params.push_back(std::move(p));

  // param w : [4 * (h + 1)] = normal(0.02) @shard(tp, -1)
  auto w = std::make_unique<ParamItem>(SMRange());
  w->name = "w";
  w->type.dims.push_back(dim(binary(BinaryExpr::Op::Mul, number("4"),
                                    binary(BinaryExpr::Op::Add, name("h"), number("1")))));
  auto normal = call("normal");
  normal->args.push_back(arg(number("0.02")));
  w->init = std::move(normal);
  Annotation shard{"shard", {}, {}, {}, true};
  shard.args.push_back(arg(name("tp")));
  auto minusOne = std::make_unique<UnaryExpr>(SMRange(), UnaryExpr::Op::Neg);
  minusOne->operand = number("1");
  shard.args.push_back(arg(std::move(minusOne)));
  w->annotations.push_back(std::move(shard));
  layer->body.push_back(std::move(w));

  auto ret = std::make_unique<ReturnItem>(SMRange());
  ret->values.push_back(binary(BinaryExpr::Op::MatMul, name("x"), name("w")));
  layer->body.push_back(std::move(ret));
  file.layers.push_back(std::move(layer));

  // cluster { device a100_80gb { memory = 70 GiB } } with a --set override.
  auto cluster = std::make_unique<ConfigBlock>();
  cluster->kind = ConfigBlock::Kind::Cluster;
  auto device = setting("device", Setting::Form::Nested, name("a100_80gb"));
  auto memory = std::make_unique<QuantityExpr>(SMRange());
  memory->text = "70GiB";
  memory->unit = "GiB";
  device->nested.push_back(setting("memory", Setting::Form::Assign, std::move(memory)));
  cluster->settings.push_back(std::move(device));
  auto nodes = setting("nodes", Setting::Form::Assign, number("2"));
  nodes->origin = "--set";
  cluster->settings.push_back(std::move(nodes));
  file.blocks.push_back(std::move(cluster));

  EXPECT_EQ(dump(file), "File 'lib.plan'\n"
                        "  Import std.gpt\n"
                        "  Import \"my \\\"layers\\\".plan\"\n"
                        "  Layer 'mlp'\n"
                        "    LayerParam 'x' type [..., h]\n"
                        "    LayerParam 'mode' type enum(a, b) = a\n"
                        "    LayerParam 'p' type float = 0.1\n"
                        "    Param 'w' type [4 * (h + 1)] @shard(tp, -1)\n"
                        "      Call 'normal'\n"
                        "        Arg\n"
                        "          Number 0.02\n"
                        "    Return\n"
                        "      Binary '@'\n"
                        "        Name 'x'\n"
                        "        Name 'w'\n"
                        "  Config 'cluster'\n"
                        "    Setting 'device' nested\n"
                        "      Name 'a100_80gb'\n"
                        "      Setting 'memory' assign\n"
                        "        Quantity 70 GiB\n"
                        "    Setting 'nodes' assign from '--set'\n"
                        "      Number 2\n");
}

TEST(ASTSpellingTest, OperatorsAndBlocks) {
  EXPECT_STREQ(spelling(BinaryExpr::Op::Add), "+");
  EXPECT_STREQ(spelling(BinaryExpr::Op::MatMul), "@");
  EXPECT_STREQ(spelling(BinaryExpr::Op::Ge), ">=");
  EXPECT_STREQ(spelling(BinaryExpr::Op::Or), "or");
  EXPECT_STREQ(spelling(ConfigBlock::Kind::Train), "train");
  EXPECT_STREQ(spelling(ConfigBlock::Kind::Parallel), "parallel");
}

} // namespace
