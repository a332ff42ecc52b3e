//===- frontend/AST.h - the .plan abstract syntax tree ----------*- C++ -*-===//
//
// Plain data, built by the direct parser (DirectParser.h) from the tokens, or
// by ASTBuilder (ParserAST.cpp) from ANTLR's parse tree, and read by Sema. Every
// node keeps the source range it came from so any later error can point back at
// the user's text. Nodes are LLVM-style: a Kind plus classof, no virtual logic.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_FRONTEND_AST_H
#define PLANC_FRONTEND_AST_H

#include "llvm/Support/Casting.h"
#include "llvm/Support/SMLoc.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace planc::ast {

using llvm::SMLoc;
using llvm::SMRange;

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

class Expr {
public:
  enum class Kind {
    Number, Quantity, String, Bool, Name, Call, Member, Named, Annotated,
    Unary, Binary, Tuple, List
  };
  Expr(Kind kind, SMRange range) : kind(kind), range(range) {}
  virtual ~Expr() = default;
  Kind getKind() const { return kind; }

  const Kind kind;
  SMRange range;
};
using ExprPtr = std::unique_ptr<Expr>;

/// `name = value` or `value` inside a call or an annotation.
struct Arg {
  std::string name; // empty for a positional argument
  SMRange nameRange;
  ExprPtr value;
};

/// `@shard(tp, 1)`, `@recompute`, `@precision(f32)`, `@stage(2)`, `@frozen`.
struct Annotation {
  std::string name; // without the '@'
  SMRange range;    // the `@name` token
  SMRange fullRange;
  std::vector<Arg> args;
  bool hasParens = false;
};

struct NumberExpr : Expr {
  NumberExpr(SMRange r) : Expr(Kind::Number, r) {}
  std::string text;
  bool isInteger = false;
  int64_t intValue = 0;   // valid when isInteger
  double floatValue = 0;  // always valid (rounded for huge integers)
  bool overflow = false;  // an integer literal that does not fit in 64 bits
  static bool classof(const Expr *e) { return e->kind == Kind::Number; }
};

/// A number with a unit: `80 GiB`, `450 GB/s`, `989 TFLOPS`, `5 us`.
struct QuantityExpr : Expr {
  QuantityExpr(SMRange r) : Expr(Kind::Quantity, r) {}
  std::string text;
  double number = 0;
  std::string unit;
  static bool classof(const Expr *e) { return e->kind == Kind::Quantity; }
};

struct StringExpr : Expr {
  StringExpr(SMRange r) : Expr(Kind::String, r) {}
  std::string value; // unescaped
  static bool classof(const Expr *e) { return e->kind == Kind::String; }
};

struct BoolExpr : Expr {
  BoolExpr(SMRange r, bool v) : Expr(Kind::Bool, r), value(v) {}
  bool value;
  static bool classof(const Expr *e) { return e->kind == Kind::Bool; }
};

struct NameExpr : Expr {
  NameExpr(SMRange r, std::string n) : Expr(Kind::Name, r), name(std::move(n)) {}
  std::string name;
  static bool classof(const Expr *e) { return e->kind == Kind::Name; }
};

struct CallExpr : Expr {
  CallExpr(SMRange r) : Expr(Kind::Call, r) {}
  std::string callee;
  SMRange calleeRange;
  std::vector<Arg> args;
  static bool classof(const Expr *e) { return e->kind == Kind::Call; }
};

/// `wte.weight`: a parameter of a named layer instance.
struct MemberExpr : Expr {
  MemberExpr(SMRange r) : Expr(Kind::Member, r) {}
  ExprPtr base;
  std::string member;
  SMRange memberRange;
  static bool classof(const Expr *e) { return e->kind == Kind::Member; }
};

/// `embedding(tokens, vocab, hidden) as wte`: names a layer instance.
struct NamedExpr : Expr {
  NamedExpr(SMRange r) : Expr(Kind::Named, r) {}
  ExprPtr inner;
  std::string name;
  SMRange nameRange;
  static bool classof(const Expr *e) { return e->kind == Kind::Named; }
};

/// `attention(x, heads) @recompute`: an annotation on the expression before it.
struct AnnotatedExpr : Expr {
  AnnotatedExpr(SMRange r) : Expr(Kind::Annotated, r) {}
  ExprPtr inner;
  Annotation annotation;
  static bool classof(const Expr *e) { return e->kind == Kind::Annotated; }
};

struct UnaryExpr : Expr {
  enum class Op { Neg, Not };
  UnaryExpr(SMRange r, Op op) : Expr(Kind::Unary, r), op(op) {}
  Op op;
  ExprPtr operand;
  static bool classof(const Expr *e) { return e->kind == Kind::Unary; }
};

struct BinaryExpr : Expr {
  enum class Op { Add, Sub, Mul, Div, Mod, MatMul, Eq, Ne, Lt, Le, Gt, Ge, And, Or };
  BinaryExpr(SMRange r, Op op) : Expr(Kind::Binary, r), op(op) {}
  Op op;
  SMRange opRange;
  ExprPtr lhs, rhs;
  static bool classof(const Expr *e) { return e->kind == Kind::Binary; }
};
const char *spelling(BinaryExpr::Op op);

struct TupleExpr : Expr {
  TupleExpr(SMRange r) : Expr(Kind::Tuple, r) {}
  std::vector<ExprPtr> elements;
  static bool classof(const Expr *e) { return e->kind == Kind::Tuple; }
};

struct ListExpr : Expr {
  ListExpr(SMRange r) : Expr(Kind::List, r) {}
  std::vector<ExprPtr> elements;
  static bool classof(const Expr *e) { return e->kind == Kind::List; }
};

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

/// One entry of a shape: `h`, `4 * h`, or `...` (any leading dims, layer params only).
struct DimItem {
  bool ellipsis = false;
  ExprPtr expr;
  SMRange range;
};

/// `i32[batch, seq]`, `[h, ffn]`; the dtype is optional where a default exists.
struct TensorType {
  std::string dtype; // empty: not written
  SMRange dtypeRange;
  std::vector<DimItem> dims;
  SMRange range;
};

//===----------------------------------------------------------------------===//
// Statements and declarations inside a model or layer body
//===----------------------------------------------------------------------===//

class Item {
public:
  enum class Kind { Let, Input, Param, Assign, Repeat, If, Return };
  Item(Kind kind, SMRange range) : kind(kind), range(range) {}
  virtual ~Item() = default;
  Kind getKind() const { return kind; }
  const Kind kind;
  SMRange range;
};
using ItemPtr = std::unique_ptr<Item>;
using Body = std::vector<ItemPtr>;

struct LetItem : Item {
  struct Binding {
    std::string name;
    SMRange nameRange;
    ExprPtr value;
  };
  LetItem(SMRange r) : Item(Kind::Let, r) {}
  std::vector<Binding> bindings;
  static bool classof(const Item *i) { return i->kind == Kind::Let; }
};

struct InputItem : Item {
  InputItem(SMRange r) : Item(Kind::Input, r) {}
  std::string name;
  SMRange nameRange;
  TensorType type;
  std::vector<Annotation> annotations;
  static bool classof(const Item *i) { return i->kind == Kind::Input; }
};

struct ParamItem : Item {
  ParamItem(SMRange r) : Item(Kind::Param, r) {}
  std::string name;
  SMRange nameRange;
  TensorType type;
  ExprPtr init; // may be null: the default initialiser
  std::vector<Annotation> annotations;
  static bool classof(const Item *i) { return i->kind == Kind::Param; }
};

struct AssignItem : Item {
  AssignItem(SMRange r) : Item(Kind::Assign, r) {}
  std::vector<std::string> names; // several when a call returns a tuple
  std::vector<SMRange> nameRanges;
  ExprPtr value;
  static bool classof(const Item *i) { return i->kind == Kind::Assign; }
};

struct RepeatItem : Item {
  RepeatItem(SMRange r) : Item(Kind::Repeat, r) {}
  ExprPtr count;
  std::string label; // `repeat 12 as blocks`; empty: "blocks"
  SMRange labelRange;
  std::vector<Annotation> annotations;
  Body body;
  static bool classof(const Item *i) { return i->kind == Kind::Repeat; }
};

struct IfItem : Item {
  IfItem(SMRange r) : Item(Kind::If, r) {}
  ExprPtr condition;
  Body thenBody, elseBody;
  static bool classof(const Item *i) { return i->kind == Kind::If; }
};

struct ReturnItem : Item {
  ReturnItem(SMRange r) : Item(Kind::Return, r) {}
  std::vector<ExprPtr> values;
  static bool classof(const Item *i) { return i->kind == Kind::Return; }
};

//===----------------------------------------------------------------------===//
// Top-level declarations
//===----------------------------------------------------------------------===//

struct LayerParam {
  enum class Kind { Tensor, Int, Float, Bool, DType, Enum, Unknown };
  std::string name;
  SMRange nameRange;
  Kind kind = Kind::Unknown;
  std::string typeName; // as written, for Unknown
  SMRange typeRange;
  TensorType tensorType;             // Kind::Tensor
  std::vector<std::string> enumValues; // Kind::Enum
  ExprPtr defaultValue;              // may be null
};

struct LayerDecl {
  std::string name;
  SMRange nameRange;
  SMRange range;
  std::vector<LayerParam> params;
  Body body;
  std::string fileName; // the file it was declared in (for the summary)
};

struct ModelDecl {
  std::string name;
  SMRange nameRange;
  SMRange range;
  Body body;
};

/// One setting of a `train`, `cluster` or `parallel` block. The four written
/// forms are `key = value`, `key value`, `key(args)` and `key [value] { settings }`.
struct Setting {
  enum class Form { Assign, Word, Args, Nested };
  std::string key;
  SMRange keyRange;
  SMRange range;
  Form form = Form::Assign;
  ExprPtr value;                                  // Assign, Word, optional for Nested
  std::vector<Arg> args;                          // Args
  std::vector<std::unique_ptr<Setting>> nested;   // Nested
  std::string origin; // "" for the file, "--set" for a command-line override
};
using SettingPtr = std::unique_ptr<Setting>;

struct ConfigBlock {
  enum class Kind { Train, Cluster, Parallel };
  Kind kind;
  SMRange keywordRange;
  SMRange range;
  std::vector<SettingPtr> settings;
};
const char *spelling(ConfigBlock::Kind kind);

/// One rule of a name map: `"model.layers.{i}.self_attn.q_proj.weight" =
/// transpose("blocks.{i}.*.wq")` -- a file-name pattern, and what the
/// tensor of that name is in the plan (frontend/NameMaps.h reads it).
struct NameRule {
  std::string file; // the pattern, unescaped
  SMRange fileRange;
  ExprPtr target;
  SMRange range;
};

/// `names hf_llama { rules and settings }`: how the tensors of a file of
/// other names are the plan's parameters (docs/checkpoints.md).
struct NamesDecl {
  std::string name;
  SMRange nameRange;
  SMRange range;
  std::vector<NameRule> rules;
  std::vector<SettingPtr> settings; // `config = "llama"`, config.json fields
};

struct ImportDecl {
  std::string path; // `std.transformer` or the quoted file name
  bool isFile = false;
  SMRange range;
};

/// One parsed source file.
struct SourceFile {
  std::string fileName;
  unsigned bufferId = 0;
  std::vector<ImportDecl> imports;
  std::vector<std::unique_ptr<ModelDecl>> models;
  std::vector<std::unique_ptr<LayerDecl>> layers;
  std::vector<std::unique_ptr<NamesDecl>> nameMaps;
  std::vector<std::unique_ptr<ConfigBlock>> blocks;
};

} // namespace planc::ast

#endif
