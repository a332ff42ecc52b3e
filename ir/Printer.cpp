//===- ir/Printer.cpp - the textual IR -----------------------------------===//
//
// The form is the one docs/ir.md specifies; every choice here (which names
// are quoted, how floats are spelled, the order of clauses) is mirrored by
// ir/Parser.cpp so that printing is a fixed point of parse-then-print.
//
//===----------------------------------------------------------------------===//

#include "ir/Printer.h"
#include "ir/Lexer.h"

#include "llvm/ADT/StringExtras.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace planc;
using namespace planc::ir;

namespace {

bool isBareName(llvm::StringRef s) { return !s.empty() && llvm::all_of(s, isBareNameChar); }

/// Attribute names print bare when they are identifiers.
bool isIdentifier(llvm::StringRef s) {
  if (s.empty() || !(llvm::isAlpha(s[0]) || s[0] == '_')) return false;
  return llvm::all_of(s, [](char c) { return llvm::isAlnum(c) || c == '_'; });
}

std::string operandRef(const Value *v) { return v ? valueRef(*v) : std::string("%<null>"); }

void printPath(llvm::StringRef path, llvm::raw_ostream &os) {
  if (!path.empty()) os << " path " << quote(path);
}

const char *initSpelling(InitKind k) {
  switch (k) {
  case InitKind::Normal: return "normal";
  case InitKind::ScaledNormal: return "scaled_normal";
  case InitKind::Zeros: return "zeros";
  case InitKind::Ones: return "ones";
  }
  return "normal";
}

void printParam(const Value &v, llvm::raw_ostream &os) {
  os << "param " << valueRef(v) << " : " << toString(v.type) << " init " << initSpelling(v.init);
  if (v.init == InitKind::Normal || v.init == InitKind::ScaledNormal) os << "(" << formatFloat(v.initStd) << ")";
  if (v.frozen) os << " frozen";
  if (v.weightDecay) os << (*v.weightDecay ? " weight_decay" : " no_weight_decay");
  printPath(v.path, os);
  printLocation(v.loc, os);
}

void printInput(const Value &v, llvm::raw_ostream &os) {
  os << "input " << valueRef(v) << " : " << toString(v.type);
  printPath(v.path, os);
  printLocation(v.loc, os);
}

} // namespace

void ir::printQuoted(llvm::StringRef s, llvm::raw_ostream &os) {
  // Most names and paths need no escape: one write.
  if (llvm::all_of(s, [](unsigned char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; })) {
    os << '"' << s << '"';
    return;
  }
  os << '"';
  for (unsigned char c : s) {
    switch (c) {
    case '"': os << "\\\""; break;
    case '\\': os << "\\\\"; break;
    case '\n': os << "\\n"; break;
    case '\t': os << "\\t"; break;
    default:
      if (c >= 0x20 && c < 0x7f) {
        os << char(c);
      } else {
        // Two hex digits, as LLVM and MLIR escape; keeps the text ASCII.
        os << '\\' << llvm::hexdigit(c >> 4, /*LowerCase=*/false) << llvm::hexdigit(c & 15, /*LowerCase=*/false);
      }
    }
  }
  os << '"';
}

std::string ir::quote(llvm::StringRef s) {
  std::string out;
  llvm::raw_string_ostream os(out);
  printQuoted(s, os);
  return os.str();
}

std::string ir::formatFloat(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
  // The shortest %g precision that reads back bit for bit (17 always does).
  char buf[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, x);
    double back = std::strtod(buf, nullptr);
    if (std::memcmp(&back, &x, sizeof x) == 0) break;
  }
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string ir::nameRef(char sigil, llvm::StringRef name) {
  return sigil + (isBareName(name) ? name.str() : quote(name));
}

void ir::printNameRef(char sigil, llvm::StringRef name, llvm::raw_ostream &os) {
  os << sigil;
  if (isBareName(name)) os << name;
  else printQuoted(name, os);
}

void ir::printShape(llvm::ArrayRef<int64_t> shape, llvm::raw_ostream &os) {
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) os << ", ";
    os << shape[i];
  }
  os << ']';
}

/// As toString(Sharding) spells it, written to the stream: a large
/// execution plan prints a sharded type on most of its million lines.
static void printSharding(const Sharding &s, llvm::raw_ostream &os) {
  if (s.isReplicated()) return;
  bool first = true;
  auto axes = [&](const std::vector<MeshAxis> &list) {
    for (size_t i = 0; i < list.size(); ++i) os << (i ? "+" : "") << spelling(list[i]);
  };
  os << '{';
  for (size_t d = 0; d < s.dims.size(); ++d) {
    if (s.dims[d].empty()) continue;
    os << (first ? "" : ", ") << "shard(" << d << ", ";
    axes(s.dims[d]);
    os << ')';
    first = false;
  }
  if (!s.partial.empty()) {
    os << (first ? "" : ", ") << "partial(";
    axes(s.partial);
    os << ')';
  }
  os << '}';
}

void ir::printType(const TensorType &t, llvm::raw_ostream &os) {
  os << spelling(t.dtype);
  printShape(t.shape, os);
  printSharding(t.sharding, os);
}

void ir::printAttr(const Attr &a, llvm::raw_ostream &os) {
  if (const int64_t *i = std::get_if<int64_t>(&a)) os << *i;
  else if (const double *d = std::get_if<double>(&a)) os << formatFloat(*d);
  else if (const bool *b = std::get_if<bool>(&a)) os << (*b ? "true" : "false");
  else if (const std::string *str = std::get_if<std::string>(&a)) printQuoted(*str, os);
  else if (const auto *v = std::get_if<std::vector<int64_t>>(&a)) printShape(*v, os);
}

std::string ir::valueRef(const Value &v) { return nameRef('%', v.name); }

void ir::printLocation(const Location &loc, llvm::raw_ostream &os) {
  if (!loc.isKnown()) return;
  os << " loc(" << quote(loc.file) << ":" << loc.line << ":" << loc.column << ")";
}

void ir::printAttrs(const AttrMap &attrs, llvm::raw_ostream &os) {
  os << "{";
  bool first = true;
  for (const auto &[name, value] : attrs) {
    if (!first) os << ", ";
    if (isIdentifier(name)) os << name;
    else printQuoted(name, os);
    os << " = ";
    printAttr(value, os);
    first = false;
  }
  os << "}";
}

std::string ir::toText(const Attr &a) {
  struct Visitor {
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return formatFloat(d); }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(const std::string &s) const { return quote(s); }
    std::string operator()(const std::vector<int64_t> &v) const { return toString(Shape(v)); }
  };
  return std::visit(Visitor{}, a);
}

void ir::printOp(const Op &op, llvm::raw_ostream &os) {
  for (size_t i = 0; i < op.results.size(); ++i)
    os << (i ? ", " : "") << operandRef(op.results[i]);
  if (!op.results.empty()) os << " = ";
  os << spelling(op.kind) << "(";
  for (size_t i = 0; i < op.operands.size(); ++i)
    os << (i ? ", " : "") << operandRef(op.operands[i]);
  os << ")";
  if (!op.attrs.empty()) {
    os << " ";
    printAttrs(op.attrs, os);
  }
  for (size_t i = 0; i < op.results.size(); ++i)
    os << (i ? ", " : " : ") << (op.results[i] ? toString(op.results[i]->type) : "<null>");
  printPath(op.path, os);
  printLocation(op.loc, os);
}

void ir::print(const Module &m, llvm::raw_ostream &os) {
  os << "module " << nameRef('@', m.name);
  if (llvm::any_of(m.mesh, [](int64_t n) { return n != 1; })) {
    os << " mesh(";
    bool first = true;
    for (unsigned a = 0; a < kNumMeshAxes; ++a) {
      if (m.mesh[a] == 1) continue;
      os << (first ? "" : ", ") << spelling(MeshAxis(a)) << " = " << m.mesh[a];
      first = false;
    }
    os << ")";
  }
  os << " {\n";
  for (const Value *p : m.params) {
    os << "  ";
    if (p) printParam(*p, os);
    else os << "param %<null>";
    os << "\n";
  }
  for (const Value *in : m.inputs) {
    os << "  ";
    if (in) printInput(*in, os);
    else os << "input %<null>";
    os << "\n";
  }
  for (const auto &op : m.ops) {
    os << "  ";
    printOp(*op, os);
    os << "\n";
  }
  os << "  return";
  for (size_t i = 0; i < m.outputs.size(); ++i)
    os << (i ? ", " : " ") << operandRef(m.outputs[i].value) << " as " << quote(m.outputs[i].name);
  os << "\n}\n";
}

std::string ir::toText(const Module &m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  print(m, os);
  return os.str();
}

std::string ir::toText(const Op &op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  printOp(op, os);
  return os.str();
}
