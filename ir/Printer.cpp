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
  printPath(v.path, os);
  printLocation(v.loc, os);
}

void printInput(const Value &v, llvm::raw_ostream &os) {
  os << "input " << valueRef(v) << " : " << toString(v.type);
  printPath(v.path, os);
  printLocation(v.loc, os);
}

} // namespace

std::string ir::quote(llvm::StringRef s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\t': out += "\\t"; break;
    default:
      if (c >= 0x20 && c < 0x7f) {
        out += char(c);
      } else {
        // Two hex digits, as LLVM and MLIR escape; keeps the text ASCII.
        out += '\\';
        out += llvm::hexdigit(c >> 4, /*LowerCase=*/false);
        out += llvm::hexdigit(c & 15, /*LowerCase=*/false);
      }
    }
  }
  return out + "\"";
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

std::string ir::valueRef(const Value &v) { return nameRef('%', v.name); }

void ir::printLocation(const Location &loc, llvm::raw_ostream &os) {
  if (!loc.isKnown()) return;
  os << " loc(" << quote(loc.file) << ":" << loc.line << ":" << loc.column << ")";
}

void ir::printAttrs(const AttrMap &attrs, llvm::raw_ostream &os) {
  os << "{";
  bool first = true;
  for (const auto &[name, value] : attrs) {
    os << (first ? "" : ", ") << (isIdentifier(name) ? name : quote(name)) << " = " << toText(value);
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
