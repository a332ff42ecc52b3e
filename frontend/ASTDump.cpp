//===- frontend/ASTDump.cpp - the text of `planc emit --emit=ast` ---------===//
//
// A stable dump of one parsed file for people and FileCheck: one node per
// line, two spaces per level, like clang's -ast-dump without the pointers.
// A node's fields follow its name; its children are the lines below it.
//
//   Input 'tokens' <2:3> type i32[batch, seq]
//   Assign 'x' <3:3>
//     Call 'embedding' <3:7>
//       Arg
//         Name 'tokens'
//
// Declarations, statements and compound expressions show the `<line:col>`
// where they start; literals, names and arguments show only their text (the
// parent locates them, and each extra position makes tests brittle). Types,
// annotations and layer-parameter defaults are signatures, not computations,
// so they are printed inline as source text.
//
//===----------------------------------------------------------------------===//

#include "frontend/AST.h"
#include "frontend/Frontend.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <functional>
#include <iterator>

using namespace planc;
using namespace planc::ast;
using llvm::cast;

// The tables below follow the order of the enums in AST.h.
const char *planc::ast::spelling(BinaryExpr::Op op) {
  static const char *const names[] = {"+",  "-",  "*", "/",  "%", "@",   "==",
                                      "!=", "<", "<=", ">", ">=", "and", "or"};
  static_assert(std::size(names) == size_t(BinaryExpr::Op::Or) + 1, "one per operator");
  return names[size_t(op)];
}

const char *planc::ast::spelling(ConfigBlock::Kind kind) {
  static const char *const names[] = {"train", "cluster", "parallel"};
  static_assert(std::size(names) == size_t(ConfigBlock::Kind::Parallel) + 1, "one per block");
  return names[size_t(kind)];
}

namespace {

const char *spelling(UnaryExpr::Op op) { return op == UnaryExpr::Op::Neg ? "-" : "not"; }

const char *spelling(Setting::Form form) {
  static const char *const names[] = {"assign", "word", "args", "nested"};
  return names[size_t(form)];
}

/// Tensor, Enum and Unknown parameters print their own details instead.
const char *spelling(LayerParam::Kind kind) {
  static const char *const names[] = {"tensor", "int", "float", "bool", "dtype", "enum", "?"};
  return names[size_t(kind)];
}

/// Binding strength in the grammar's order, loosest first: or, and, not,
/// comparisons, + -, * / % @, unary minus; postfix forms and primaries bind
/// tightest. Inline rendering adds parentheses from this alone, so `(a + b) * c`
/// survives even though the AST keeps no parentheses.
int precedence(const Expr &e) {
  // In the order of BinaryExpr::Op: + - * / % @ == != < <= > >= and or.
  static const int binary[] = {5, 5, 6, 6, 6, 6, 4, 4, 4, 4, 4, 4, 2, 1};
  static_assert(std::size(binary) == size_t(BinaryExpr::Op::Or) + 1, "one per operator");
  if (auto *b = llvm::dyn_cast<BinaryExpr>(&e)) return binary[size_t(b->op)];
  if (auto *u = llvm::dyn_cast<UnaryExpr>(&e)) return u->op == UnaryExpr::Op::Not ? 3 : 7;
  return 8;
}

llvm::raw_ostream &printQuoted(llvm::raw_ostream &os, llvm::StringRef s) {
  return (os << '"').write_escaped(s) << '"';
}

llvm::raw_ostream &printNumber(llvm::raw_ostream &os, const NumberExpr &n) {
  // The source text keeps the user's spelling (`6e-4`, `1_000`); a tree built
  // without text still prints its value.
  if (!n.text.empty()) return os << n.text;
  return n.isInteger ? os << n.intValue : os << n.floatValue;
}

llvm::raw_ostream &printQuantity(llvm::raw_ostream &os, const QuantityExpr &q) {
  // The token may or may not keep its unit and the space before it; strip it
  // so `80GiB` and `80 GiB` dump alike.
  llvm::StringRef number = q.text;
  if (!q.unit.empty() && number.endswith(q.unit))
    number = number.drop_back(q.unit.size()).rtrim();
  number.empty() ? os << q.number : os << number;
  return q.unit.empty() ? os : os << ' ' << q.unit;
}

/// Writes an expression back as source text, for the parts of the dump that
/// are printed inline.
llvm::raw_ostream &render(llvm::raw_ostream &os, const Expr *e, int minPrecedence = 0);

llvm::raw_ostream &renderList(llvm::raw_ostream &os, const std::vector<ExprPtr> &list) {
  llvm::interleaveComma(list, os, [&](const ExprPtr &x) { render(os, x.get()); });
  return os;
}

llvm::raw_ostream &renderArgs(llvm::raw_ostream &os, const std::vector<Arg> &args) {
  llvm::interleaveComma(args, os, [&](const Arg &a) {
    render(a.name.empty() ? os : os << a.name << " = ", a.value.get());
  });
  return os;
}

llvm::raw_ostream &renderAnnotation(llvm::raw_ostream &os, const Annotation &a) {
  os << '@' << a.name;
  if (!a.hasParens && a.args.empty()) return os;
  return renderArgs(os << '(', a.args) << ')';
}

llvm::raw_ostream &renderType(llvm::raw_ostream &os, const TensorType &t) {
  os << t.dtype << '[';
  llvm::interleaveComma(t.dims, os, [&](const DimItem &d) {
    d.ellipsis ? os << "..." : render(os, d.expr.get());
  });
  return os << ']';
}

llvm::raw_ostream &render(llvm::raw_ostream &os, const Expr *e, int minPrecedence) {
  if (!e) return os << "<<null>>";
  int prec = precedence(*e);
  bool parens = prec < minPrecedence;
  if (parens) os << '(';
  switch (e->getKind()) {
  case Expr::Kind::Number: printNumber(os, cast<NumberExpr>(*e)); break;
  case Expr::Kind::Quantity: printQuantity(os, cast<QuantityExpr>(*e)); break;
  case Expr::Kind::String: printQuoted(os, cast<StringExpr>(*e).value); break;
  case Expr::Kind::Bool: os << (cast<BoolExpr>(*e).value ? "true" : "false"); break;
  case Expr::Kind::Name: os << cast<NameExpr>(*e).name; break;
  case Expr::Kind::Call:
    renderArgs(os << cast<CallExpr>(*e).callee << '(', cast<CallExpr>(*e).args) << ')';
    break;
  case Expr::Kind::Member:
    render(os, cast<MemberExpr>(*e).base.get(), 8) << '.' << cast<MemberExpr>(*e).member;
    break;
  case Expr::Kind::Named:
    render(os, cast<NamedExpr>(*e).inner.get(), 8) << " as " << cast<NamedExpr>(*e).name;
    break;
  case Expr::Kind::Annotated: {
    auto &a = cast<AnnotatedExpr>(*e);
    renderAnnotation(render(os, a.inner.get(), 8) << ' ', a.annotation);
    break;
  }
  case Expr::Kind::Unary: {
    auto &u = cast<UnaryExpr>(*e);
    render(os << (u.op == UnaryExpr::Op::Not ? "not " : "-"), u.operand.get(), prec);
    break;
  }
  case Expr::Kind::Binary: {
    // Left-associative: only the right operand needs parentheses at equal strength.
    auto &b = cast<BinaryExpr>(*e);
    render(render(os, b.lhs.get(), prec) << ' ' << spelling(b.op) << ' ', b.rhs.get(), prec + 1);
    break;
  }
  case Expr::Kind::Tuple: {
    auto &elements = cast<TupleExpr>(*e).elements;
    renderList(os << '(', elements) << (elements.size() == 1 ? ",)" : ")"); // `(a,)` is a tuple
    break;
  }
  case Expr::Kind::List: renderList(os << '[', cast<ListExpr>(*e).elements) << ']'; break;
  }
  return parens ? os << ')' : os;
}

class ASTDumper {
public:
  ASTDumper(const llvm::SourceMgr &sm, llvm::raw_ostream &os) : sm(sm), os(os) {}

  void dumpFile(const SourceFile &file) {
    os << "File '" << file.fileName << "'\n";
    Nest nest(depth);
    // The file keeps imports, models, layers, name maps and blocks in separate lists;
    // within one buffer, source order is pointer order, so sorting by start
    // makes the dump read like the file. The sort is stable, so a tree built
    // without positions keeps the order of the lists below.
    std::vector<std::pair<const char *, std::function<void()>>> decls;
    for (const ImportDecl &i : file.imports)
      decls.push_back({i.range.Start.getPointer(), [this, d = &i] { dumpImport(*d); }});
    for (const auto &l : file.layers)
      decls.push_back({l->range.Start.getPointer(), [this, d = l.get()] { dumpLayer(*d); }});
    for (const auto &m : file.models)
      decls.push_back({m->range.Start.getPointer(), [this, d = m.get()] { dumpModel(*d); }});
    for (const auto &b : file.blocks)
      decls.push_back({b->range.Start.getPointer(), [this, d = b.get()] { dumpBlock(*d); }});
    for (const auto &n : file.nameMaps)
      decls.push_back({n->range.Start.getPointer(), [this, d = n.get()] { dumpNames(*d); }});
    std::stable_sort(decls.begin(), decls.end(), [](const auto &a, const auto &b) {
      return std::less<const char *>()(a.first, b.first);
    });
    for (auto &d : decls) d.second();
  }

private:
  /// Children of the node just printed are one level deeper while this lives.
  struct Nest {
    explicit Nest(unsigned &depth) : depth(depth) { ++depth; }
    ~Nest() { --depth; }
    unsigned &depth;
  };

  /// Starts a node's line: `Label 'name' <line:col>`, with the name and the
  /// position only where given. The caller adds its fields and the newline.
  llvm::raw_ostream &open(llvm::StringRef label, llvm::StringRef name = {}, SMRange range = {}) {
    os.indent(2 * depth) << label;
    if (!name.empty()) os << " '" << name << '\'';
    return loc(range);
  }

  /// ` <line:col>` of the range start. A position the source manager does not
  /// know (a tree built by hand) is left out.
  llvm::raw_ostream &loc(SMRange range) {
    if (!range.Start.isValid() || !sm.FindBufferContainingLoc(range.Start)) return os;
    auto [line, column] = sm.getLineAndColumn(range.Start);
    return os << " <" << line << ':' << column << '>';
  }

  /// A hole left by a builder bug prints as one line rather than crashing the dump.
  bool isNull(const void *node) {
    if (!node) open("<<null>>") << '\n';
    return !node;
  }

  // The children of the node just printed.
  void exprs(std::initializer_list<const Expr *> list) {
    Nest nest(depth);
    for (const Expr *e : list) dumpExpr(e);
  }
  void exprs(const std::vector<ExprPtr> &list) {
    Nest nest(depth);
    for (const ExprPtr &e : list) dumpExpr(e.get());
  }
  void args(const std::vector<Arg> &list) {
    Nest nest(depth);
    for (const Arg &a : list) {
      open("Arg", a.name) << '\n';
      exprs({a.value.get()});
    }
  }
  void body(const Body &items) {
    Nest nest(depth);
    for (const ItemPtr &item : items) dumpItem(item.get());
  }

  void dumpImport(const ImportDecl &i) {
    // A file import keeps its quotes so it cannot be mistaken for a module path.
    if (i.isFile) printQuoted(open("Import") << ' ', i.path);
    else open("Import") << ' ' << i.path;
    loc(i.range) << '\n';
  }

  void dumpLayer(const LayerDecl &layer) {
    open("Layer", layer.name, layer.range) << '\n';
    {
      Nest nest(depth); // the parameters sit at the level of the body items
      for (const LayerParam &p : layer.params) dumpLayerParam(p);
    }
    body(layer.body);
  }

  void dumpLayerParam(const LayerParam &p) {
    open("LayerParam", p.name, p.nameRange) << " type ";
    switch (p.kind) {
    case LayerParam::Kind::Tensor: renderType(os, p.tensorType); break;
    case LayerParam::Kind::Enum:
      llvm::interleaveComma(p.enumValues, os << "enum(");
      os << ')';
      break;
    case LayerParam::Kind::Unknown: os << "unknown '" << p.typeName << '\''; break;
    default: os << spelling(p.kind); break;
    }
    if (p.defaultValue) render(os << " = ", p.defaultValue.get());
    os << '\n';
  }

  void dumpModel(const ModelDecl &model) {
    open("Model", model.name, model.range) << '\n';
    body(model.body);
  }

  /// `Input` and `Param`: the type and the annotations on the node's own line.
  void dumpDeclLine(llvm::StringRef label, const std::string &name, SMRange range,
                    const TensorType &type, const std::vector<Annotation> &annotations) {
    renderType(open(label, name, range) << " type ", type);
    for (const Annotation &a : annotations) renderAnnotation(os << ' ', a);
    os << '\n';
  }

  void dumpItem(const Item *item) {
    if (isNull(item)) return;
    switch (item->getKind()) {
    case Item::Kind::Let: {
      open("Let", "", item->range) << '\n';
      Nest nest(depth);
      for (const LetItem::Binding &b : cast<LetItem>(*item).bindings) {
        open("Binding", b.name, b.nameRange) << '\n';
        exprs({b.value.get()});
      }
      return;
    }
    case Item::Kind::Input: {
      auto &in = cast<InputItem>(*item);
      return dumpDeclLine("Input", in.name, in.range, in.type, in.annotations);
    }
    case Item::Kind::Param: {
      // Without a child the parameter takes the default initialiser.
      auto &p = cast<ParamItem>(*item);
      dumpDeclLine("Param", p.name, p.range, p.type, p.annotations);
      if (p.init) exprs({p.init.get()});
      return;
    }
    case Item::Kind::Assign: {
      auto &a = cast<AssignItem>(*item);
      llvm::interleaveComma(a.names, open("Assign") << ' ',
                            [&](const std::string &n) { os << '\'' << n << '\''; });
      loc(a.range) << '\n';
      return exprs({a.value.get()});
    }
    case Item::Kind::Repeat: {
      // The count is the first child; the body items follow it.
      auto &r = cast<RepeatItem>(*item);
      open("Repeat", r.label, r.range);
      for (const Annotation &a : r.annotations) renderAnnotation(os << ' ', a);
      os << '\n';
      exprs({r.count.get()});
      return body(r.body);
    }
    case Item::Kind::If: {
      auto &i = cast<IfItem>(*item);
      open("If", "", i.range) << '\n';
      exprs({i.condition.get()});
      Nest nest(depth);
      open("Then") << '\n';
      body(i.thenBody);
      if (!i.elseBody.empty()) {
        open("Else") << '\n';
        body(i.elseBody);
      }
      return;
    }
    case Item::Kind::Return:
      open("Return", "", item->range) << '\n';
      return exprs(cast<ReturnItem>(*item).values);
    }
  }

  void dumpExpr(const Expr *e) {
    if (isNull(e)) return;
    switch (e->getKind()) {
    // Leaves: the value alone.
    case Expr::Kind::Number: printNumber(open("Number") << ' ', cast<NumberExpr>(*e)); break;
    case Expr::Kind::Quantity:
      printQuantity(open("Quantity") << ' ', cast<QuantityExpr>(*e));
      break;
    case Expr::Kind::String: printQuoted(open("String") << ' ', cast<StringExpr>(*e).value); break;
    case Expr::Kind::Bool: open("Bool") << (cast<BoolExpr>(*e).value ? " true" : " false"); break;
    case Expr::Kind::Name: open("Name", cast<NameExpr>(*e).name); break;
    // Compound nodes: a position, then the children.
    case Expr::Kind::Call:
      open("Call", cast<CallExpr>(*e).callee, e->range) << '\n';
      return args(cast<CallExpr>(*e).args);
    case Expr::Kind::Member:
      open("Member", cast<MemberExpr>(*e).member, e->range) << '\n';
      return exprs({cast<MemberExpr>(*e).base.get()});
    case Expr::Kind::Named:
      open("Named", cast<NamedExpr>(*e).name, e->range) << '\n';
      return exprs({cast<NamedExpr>(*e).inner.get()});
    case Expr::Kind::Annotated:
      renderAnnotation(open("Annotated", "", e->range) << ' ', cast<AnnotatedExpr>(*e).annotation)
          << '\n';
      return exprs({cast<AnnotatedExpr>(*e).inner.get()});
    case Expr::Kind::Unary:
      open("Unary", spelling(cast<UnaryExpr>(*e).op), e->range) << '\n';
      return exprs({cast<UnaryExpr>(*e).operand.get()});
    case Expr::Kind::Binary: {
      auto &b = cast<BinaryExpr>(*e);
      open("Binary", spelling(b.op), b.range) << '\n';
      return exprs({b.lhs.get(), b.rhs.get()});
    }
    case Expr::Kind::Tuple:
      open("Tuple", "", e->range) << '\n';
      return exprs(cast<TupleExpr>(*e).elements);
    case Expr::Kind::List:
      open("List", "", e->range) << '\n';
      return exprs(cast<ListExpr>(*e).elements);
    }
    os << '\n'; // ends the leaves above
  }

  void dumpBlock(const ConfigBlock &block) {
    open("Config", spelling(block.kind), block.range) << '\n';
    Nest nest(depth);
    for (const SettingPtr &s : block.settings) dumpSetting(s.get());
  }

  /// The rules and settings in source order, as dumpFile orders declarations.
  void dumpNames(const NamesDecl &names) {
    open("Names", names.name, names.range) << '\n';
    Nest nest(depth);
    std::vector<std::pair<const char *, std::function<void()>>> items;
    for (const NameRule &r : names.rules)
      items.push_back({r.range.Start.getPointer(), [this, r = &r] {
                         printQuoted(open("NameRule") << ' ', r->file);
                         loc(r->range) << '\n';
                         exprs({r->target.get()});
                       }});
    for (const SettingPtr &s : names.settings)
      items.push_back({s->range.Start.getPointer(), [this, s = s.get()] { dumpSetting(s); }});
    std::stable_sort(items.begin(), items.end(),
                     [](const auto &a, const auto &b) { return std::less<const char *>()(a.first, b.first); });
    for (auto &item : items) item.second();
  }

  /// `Setting 'key' <l:c> form`, then the value, the arguments and the nested
  /// settings. An override from the command line says where it came from.
  void dumpSetting(const Setting *s) {
    if (isNull(s)) return;
    open("Setting", s->key, s->range) << ' ' << spelling(s->form);
    if (!s->origin.empty()) os << " from '" << s->origin << '\'';
    os << '\n';
    if (s->value) exprs({s->value.get()});
    args(s->args);
    Nest nest(depth);
    for (const SettingPtr &n : s->nested) dumpSetting(n.get());
  }

  const llvm::SourceMgr &sm;
  llvm::raw_ostream &os;
  unsigned depth = 0;
};

} // namespace

void planc::dumpAST(const SourceFile &file, const llvm::SourceMgr &sm, llvm::raw_ostream &os) {
  ASTDumper(sm, os).dumpFile(file);
}
