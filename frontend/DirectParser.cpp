//===- frontend/DirectParser.cpp - recursive descent over raw tokens ------===//
//
// One function per rule of grammar/Plan.g4, in the grammar's order. Where
// the grammar leaves a choice to ANTLR's prediction, the comment at the
// choice says which alternative ANTLR takes and why this code takes the same.
// Anything else -- a token no rule expects, a limit ANTLR's path would report
// -- throws NotHandled, caught once in parseFileDirect: the AST is then
// dropped and frontend/Parser.cpp runs the ANTLR path, which reports.
// Expressions are in DirectParserExpr.cpp.
//
//===----------------------------------------------------------------------===//

#include "frontend/DirectParser.h"
#include "frontend/DirectParserImpl.h"
#include "frontend/ParserLiterals.h"

using namespace planc;
using namespace planc::parser;
using namespace planc::parser::direct;

std::unique_ptr<ast::SourceFile> DirectParser::run() {
  scanTokens();
  auto file = std::make_unique<ast::SourceFile>();
  while (keyword("import")) file->imports.push_back(importDecl());
  while (peek().kind != RawToken::End) {
    if (keyword("model")) file->models.push_back(modelDecl());
    else if (keyword("layer")) file->layers.push_back(layerDecl());
    else if (keyword("names")) file->nameMaps.push_back(namesDecl());
    else if (keyword("train") || keyword("cluster") || keyword("parallel")) file->blocks.push_back(configBlock());
    else throw NotHandled();
  }
  return file;
}

/// Lexes, and gives up on every token-level finding of ParserTokens.cpp's
/// checkTokens (or a superset of them): bad characters, unterminated
/// comments, brackets that do not pair or nest too deep, long runs of
/// prefix operators, and any number followed on its line by a word (a
/// possibly misspelled unit). Block comments are dropped.
void DirectParser::scanTokens() {
  std::vector<RawToken> all;
  all.reserve(text.size() / 4 + 16);
  if (!lexRaw(text, limits.maxTokens, all)) throw NotHandled();
  toks.reserve(all.size());
  std::vector<char> open;
  unsigned prefixRun = 0;
  for (size_t k = 0; k < all.size(); ++k) {
    const RawToken &t = all[k];
    llvm::StringRef s = textOf(t);
    if (t.kind == RawToken::BadChar) throw NotHandled();
    if (t.kind == RawToken::BlockComment) {
      if (s.size() < 4 || !s.endswith("*/")) throw NotHandled();
      continue;
    }
    if ((t.kind == RawToken::Number || t.kind == RawToken::Quantity) && k + 1 < all.size() &&
        all[k + 1].kind == RawToken::Ident &&
        text.slice(t.end, all[k + 1].begin).find_first_not_of(" \t") == llvm::StringRef::npos)
      throw NotHandled();
    if (t.kind == RawToken::Punct && s.size() == 1 && (s[0] == '(' || s[0] == '[' || s[0] == '{')) {
      open.push_back(s[0] == '(' ? ')' : s[0] == '[' ? ']' : '}');
      if (open.size() > limits.maxBracketDepth) throw NotHandled();
    } else if (t.kind == RawToken::Punct && s.size() == 1 && (s[0] == ')' || s[0] == ']' || s[0] == '}')) {
      if (open.empty() || open.back() != s[0]) throw NotHandled();
      open.pop_back();
    } else if (t.kind == RawToken::End && !open.empty()) {
      throw NotHandled();
    }
    if ((t.kind == RawToken::Punct && s == "-") || (t.kind == RawToken::Keyword && s == "not")) {
      if (++prefixRun > limits.maxBracketDepth) throw NotHandled();
    } else {
      prefixRun = 0;
    }
    toks.push_back(t);
  }
}

ast::ImportDecl DirectParser::importDecl() {
  size_t start = i;
  expectKeyword("import");
  ast::ImportDecl decl;
  if (peek().kind == RawToken::String) {
    decl.isFile = true;
    decl.path = unescape(textOf(take()));
  } else {
    decl.path = name().first;
    while (punct(".")) {
      ++i;
      decl.path += "." + name().first;
    }
  }
  decl.range = spanFrom(start);
  return decl;
}

std::unique_ptr<ast::ModelDecl> DirectParser::modelDecl() {
  size_t start = i;
  expectKeyword("model");
  auto m = std::make_unique<ast::ModelDecl>();
  std::tie(m->name, m->nameRange) = name();
  expectPunct("{");
  m->body = body(0);
  expectPunct("}");
  m->range = spanFrom(start);
  return m;
}

std::unique_ptr<ast::LayerDecl> DirectParser::layerDecl() {
  size_t start = i;
  expectKeyword("layer");
  auto l = std::make_unique<ast::LayerDecl>();
  std::tie(l->name, l->nameRange) = name();
  expectPunct("(");
  if (!punct(")")) {
    l->params.push_back(layerParam());
    while (punct(",")) {
      ++i;
      if (punct(")")) break; // the trailing ','
      l->params.push_back(layerParam());
    }
  }
  expectPunct(")");
  expectPunct("{");
  l->body = body(0);
  expectPunct("}");
  l->range = spanFrom(start);
  return l;
}

ast::LayerParam DirectParser::layerParam() {
  ast::LayerParam p;
  std::tie(p.name, p.nameRange) = name();
  expectPunct(":");
  size_t typeStart = i;
  // `enum(` can only be an enumParamType (a scalarParamType is never
  // followed by '('); `enum [` is a tensor type whose dtype is named enum.
  if (keyword("enum") && punct("(", 1)) {
    i += 2;
    p.kind = ast::LayerParam::Kind::Enum;
    p.enumValues.push_back(name().first);
    while (punct(",")) {
      ++i;
      p.enumValues.push_back(name().first);
    }
    expectPunct(")");
  } else if (punct("[") || (isName() && punct("[", 1))) {
    p.kind = ast::LayerParam::Kind::Tensor;
    p.tensorType = tensorType(0);
  } else {
    p.typeName = name().first;
    p.kind = scalarParamKind(p.typeName);
  }
  p.typeRange = spanFrom(typeStart);
  if (punct("=")) {
    ++i;
    p.defaultValue = exprAt(0);
  }
  return p;
}

ast::TensorType DirectParser::tensorType(unsigned base) {
  size_t start = i;
  ast::TensorType t;
  if (isName()) std::tie(t.dtype, t.dtypeRange) = name();
  expectPunct("[");
  if (!punct("]")) {
    for (;;) {
      size_t itemStart = i;
      ast::DimItem item;
      if (punct("...")) {
        ++i;
        item.ellipsis = true;
      } else {
        item.expr = exprAt(base);
      }
      item.range = spanFrom(itemStart);
      t.dims.push_back(std::move(item));
      if (!punct(",")) break;
      ++i;
    }
  }
  expectPunct("]");
  t.range = spanFrom(start);
  return t;
}

/// `annotation`; `argHeight` the deepest of its arguments.
ast::Annotation DirectParser::annotation(unsigned &argHeight) {
  if (peek().kind != RawToken::Annotation) throw NotHandled();
  const RawToken &t = take();
  ast::Annotation a;
  a.name = textOf(t).drop_front().str();
  a.range = rangeOf(t);
  a.fullRange = a.range;
  // '(' right after an annotation can begin nothing else the grammar allows.
  if (punct("(")) {
    ++i;
    a.hasParens = true;
    if (!punct(")")) {
      a.args.push_back(arg(argHeight));
      while (punct(",")) {
        ++i;
        a.args.push_back(arg(argHeight));
      }
    }
    expectPunct(")");
    if (!a.args.empty()) a.fullRange.End = rangeOf(toks[i - 1]).End;
  }
  return a;
}

/// `annotation*` of an input or param, built at `depth`.
std::vector<ast::Annotation> DirectParser::annotations(unsigned depth) {
  std::vector<ast::Annotation> out;
  while (peek().kind == RawToken::Annotation) {
    unsigned argHeight = 0;
    out.push_back(annotation(argHeight));
    if (depth + argHeight > limits.maxExprDepth) throw NotHandled();
  }
  return out;
}

/// `bodyItem*` up to the closing '}' (not taken); `depth` is the number of
/// statements around it, which the builder counts with expressions.
ast::Body DirectParser::body(unsigned depth) {
  ast::Body out;
  while (!punct("}")) {
    size_t start = i;
    if (keyword("let")) {
      ++i;
      auto let = std::make_unique<ast::LetItem>(SMRange());
      for (;;) {
        auto [n, r] = name();
        expectPunct("=");
        let->bindings.push_back({n, r, exprAt(depth)});
        if (!punct(",")) break;
        ++i;
      }
      let->range = spanFrom(start);
      out.push_back(std::move(let));
    } else if (keyword("input") && isName(1)) {
      // `input` followed by a name is an inputDecl: as an assignStmt's
      // first name, `input` would be followed by ',' or '='.
      ++i;
      auto in = std::make_unique<ast::InputItem>(SMRange());
      std::tie(in->name, in->nameRange) = name();
      expectPunct(":");
      in->type = tensorType(depth);
      in->annotations = annotations(depth);
      in->range = spanFrom(start);
      out.push_back(std::move(in));
    } else if (keyword("param") && isName(1)) {
      ++i;
      auto p = std::make_unique<ast::ParamItem>(SMRange());
      std::tie(p->name, p->nameRange) = name();
      expectPunct(":");
      p->type = tensorType(depth);
      if (punct("=")) {
        ++i;
        p->init = exprAt(depth);
        // `= normal(0.02) @shard(tp, 1)`: the initialiser's postfix
        // annotations belong to the param (ParserAST.cpp does the same).
        std::vector<ast::Annotation> trailing;
        while (auto *a = llvm::dyn_cast_or_null<ast::AnnotatedExpr>(p->init.get())) {
          trailing.insert(trailing.begin(), std::move(a->annotation));
          ast::ExprPtr inner = std::move(a->inner);
          p->init = std::move(inner);
        }
        p->annotations = std::move(trailing);
      } else {
        p->annotations = annotations(depth);
      }
      p->range = spanFrom(start);
      out.push_back(std::move(p));
    } else {
      out.push_back(stmt(depth + 1));
    }
  }
  return out;
}

/// A `stmt` the builder counts at `depth`.
ast::ItemPtr DirectParser::stmt(unsigned depth) {
  if (depth > limits.maxExprDepth) throw NotHandled();
  size_t start = i;
  if (keyword("repeat")) {
    ++i;
    auto s = std::make_unique<ast::RepeatItem>(SMRange());
    s->count = exprAt(depth);
    takeRepeatCountPostfix(*s);
    expectPunct("{");
    s->body = body(depth);
    expectPunct("}");
    s->range = spanFrom(start);
    return s;
  }
  if (keyword("if")) {
    ++i;
    auto s = std::make_unique<ast::IfItem>(SMRange());
    s->condition = exprAt(depth);
    expectPunct("{");
    s->thenBody = body(depth);
    expectPunct("}");
    // `elseClause?` is greedy: an `else` after an if's body is always its own.
    if (keyword("else")) {
      ++i;
      if (punct("{")) {
        ++i;
        s->elseBody = body(depth);
        expectPunct("}");
      } else {
        s->elseBody.push_back(stmt(depth + 1));
      }
    }
    s->range = spanFrom(start);
    return s;
  }
  if (keyword("return")) {
    ++i;
    auto s = std::make_unique<ast::ReturnItem>(SMRange());
    s->values.push_back(exprAt(depth));
    while (punct(",")) {
      ++i;
      s->values.push_back(exprAt(depth));
    }
    s->range = spanFrom(start);
    return s;
  }
  auto s = std::make_unique<ast::AssignItem>(SMRange());
  for (;;) {
    auto [n, r] = name();
    s->names.push_back(std::move(n));
    s->nameRanges.push_back(r);
    if (!punct(",")) break;
    ++i;
  }
  expectPunct("=");
  s->value = exprAt(depth);
  s->range = spanFrom(start);
  return s;
}

std::unique_ptr<ast::NamesDecl> DirectParser::namesDecl() {
  size_t start = i;
  expectKeyword("names");
  auto n = std::make_unique<ast::NamesDecl>();
  std::tie(n->name, n->nameRange) = name();
  expectPunct("{");
  while (!punct("}")) {
    if (peek().kind == RawToken::String) {
      size_t ruleStart = i;
      ast::NameRule rule;
      const RawToken &file = take();
      rule.file = unescape(textOf(file));
      rule.fileRange = rangeOf(file);
      expectPunct("=");
      rule.target = exprAt(0);
      if (punct(",")) ++i;
      rule.range = spanFrom(ruleStart);
      n->rules.push_back(std::move(rule));
    } else {
      n->settings.push_back(setting());
    }
  }
  expectPunct("}");
  n->range = spanFrom(start);
  return n;
}

std::unique_ptr<ast::ConfigBlock> DirectParser::configBlock() {
  size_t start = i;
  auto b = std::make_unique<ast::ConfigBlock>();
  const RawToken &kw = take();
  llvm::StringRef k = textOf(kw);
  b->kind = k == "train"     ? ast::ConfigBlock::Kind::Train
            : k == "cluster" ? ast::ConfigBlock::Kind::Cluster
                             : ast::ConfigBlock::Kind::Parallel;
  b->keywordRange = rangeOf(kw);
  expectPunct("{");
  while (!punct("}")) b->settings.push_back(setting());
  expectPunct("}");
  b->range = spanFrom(start);
  return b;
}

ast::SettingPtr DirectParser::setting() {
  size_t start = i;
  auto s = std::make_unique<ast::Setting>();
  std::tie(s->key, s->keyRange) = name();
  if (punct("=")) {
    ++i;
    s->form = ast::Setting::Form::Assign;
    s->value = exprAt(0);
  } else if (punct("(") && argsSetting(*s)) {
    s->form = ast::Setting::Form::Args;
  } else if (punct("{")) {
    s->form = ast::Setting::Form::Nested;
    nestedSettings(*s);
  } else {
    s->value = exprAt(0);
    if (punct("{")) {
      s->form = ast::Setting::Form::Nested;
      nestedSettings(*s);
    } else {
      s->form = ast::Setting::Form::Word;
    }
  }
  if (punct(",")) ++i;
  s->range = spanFrom(start);
  return s;
}

/// `key(args)`, taken when what follows ends the setting. `key (x)` also
/// parses as a wordSetting with a parenthesised value; ANTLR resolves
/// that ambiguity to the lower alternative, argsSetting. When the `(...)`
/// is not a whole argument list, or an expression goes on after it, the
/// tokens are left for the expression forms.
bool DirectParser::argsSetting(ast::Setting &s) {
  size_t start = i;
  unsigned recursionBefore = recursion;
  try {
    ++i;
    unsigned height = 0;
    std::vector<ast::Arg> args = argList(height);
    if (height > limits.maxExprDepth || !endsSetting()) {
      i = start;
      return false;
    }
    s.args = std::move(args);
    return true;
  } catch (NotHandled &) {
    i = start;
    recursion = recursionBefore;
    return false;
  }
}

void DirectParser::nestedSettings(ast::Setting &s) {
  expectPunct("{");
  while (!punct("}")) s.nested.push_back(setting());
  expectPunct("}");
}

std::unique_ptr<ast::SourceFile> parser::parseFileDirect(llvm::StringRef text, const ParseLimits &limits) {
  try {
    return DirectParser(text, limits).run();
  } catch (NotHandled &) {
    return nullptr;
  }
}
