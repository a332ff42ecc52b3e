//===- ir/ops/FormulaText.cpp - formulas composed, written and read ------===//
//
// Fusion composes the formulas of a chain of elementwise ops into one
// (inlineFormula) and keeps it in the fused op's `formula` attribute as text
// (formulaText / parseFormulaText), so the fused op needs nothing beyond
// its attributes: the interpreter, the printer, the parser and the code
// generators all read the same string. Constants are written with 17
// significant digits, so reading them back gives the same doubles.
//
//===----------------------------------------------------------------------===//

#include "ir/ops/Formula.h"
#include "support/Plural.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace planc;
using namespace planc::ir;

int ir::inlineFormula(FormulaBuilder &b, const Formula &f, llvm::ArrayRef<double> attrValues,
                      llvm::ArrayRef<int> inputNodes, std::vector<int> *results) {
  std::vector<const char *> names = f.attrs();
  std::vector<int> mapped(f.nodes.size(), -1);
  for (size_t i = 0; i < f.nodes.size(); ++i) {
    const FormulaNode &n = f.nodes[i];
    switch (n.op) {
    case FormulaOp::Input: mapped[i] = inputNodes[size_t(n.index)]; break;
    case FormulaOp::Const: mapped[i] = b.constant(n.value); break;
    case FormulaOp::Attr: {
      double v = n.value;
      for (size_t k = 0; k < names.size(); ++k)
        if (std::strcmp(names[k], n.attr) == 0 && k < attrValues.size()) v = attrValues[k];
      mapped[i] = b.constant(v);
      break;
    }
    case FormulaOp::Select: mapped[i] = b.select(mapped[size_t(n.a)], mapped[size_t(n.b)], mapped[size_t(n.c)]); break;
    default:
      mapped[i] = arity(n.op) == 1 ? b.unary(n.op, mapped[size_t(n.a)])
                                   : b.binary(n.op, mapped[size_t(n.a)], mapped[size_t(n.b)]);
    }
  }
  if (results) {
    results->clear();
    for (int r : f.results) results->push_back(mapped[size_t(r)]);
  }
  return mapped[size_t(f.result)];
}

std::string ir::formulaText(const Formula &f) {
  std::string out;
  for (size_t i = 0; i < f.nodes.size(); ++i) {
    const FormulaNode &n = f.nodes[i];
    if (i) out += "; ";
    out += spelling(n.op);
    if (n.op == FormulaOp::Input) {
      out += " " + std::to_string(n.index);
    } else if (n.op == FormulaOp::Const) {
      char buf[40];
      std::snprintf(buf, sizeof buf, " %.17g", n.value);
      out += buf;
    } else {
      for (int operand : {n.a, n.b, n.c})
        if (operand >= 0) out += " " + std::to_string(operand);
    }
  }
  return out;
}

std::string ir::parseFormulaText(llvm::StringRef text, Formula &out) {
  static const FormulaOp ops[] = {FormulaOp::Input, FormulaOp::Const, FormulaOp::Neg,  FormulaOp::Exp,
                                  FormulaOp::Log,   FormulaOp::Sqrt,  FormulaOp::Tanh, FormulaOp::Abs,
                                  FormulaOp::Add,   FormulaOp::Sub,   FormulaOp::Mul,  FormulaOp::Div,
                                  FormulaOp::Pow,   FormulaOp::Less,  FormulaOp::LessEq, FormulaOp::Select};
  FormulaBuilder b;
  llvm::SmallVector<llvm::StringRef, 16> items;
  text.split(items, ';');
  int last = -1;
  for (size_t i = 0; i < items.size(); ++i) {
    llvm::SmallVector<llvm::StringRef, 4> words;
    llvm::SplitString(items[i], words);
    std::string where = "node " + std::to_string(i);
    if (words.empty()) return where + " is empty";
    const FormulaOp *op = std::find_if(std::begin(ops), std::end(ops), [&](FormulaOp o) { return words[0] == spelling(o); });
    if (op == std::end(ops)) return where + ": unknown operation '" + words[0].str() + "'";
    if (*op == FormulaOp::Const) {
      if (words.size() != 2) return where + ": const takes one number";
      std::string number = words[1].str();
      char *end = nullptr;
      double v = std::strtod(number.c_str(), &end);
      if (end == number.c_str() || *end) return where + ": '" + number + "' is not a number";
      last = b.constant(v);
      continue;
    }
    unsigned want = *op == FormulaOp::Input ? 1 : arity(*op);
    if (words.size() != want + 1)
      return where + ": " + spelling(*op) + " takes " + counted(want, "operand");
    std::vector<int> args;
    for (size_t k = 1; k < words.size(); ++k) {
      unsigned long long v;
      if (llvm::getAsUnsignedInteger(words[k], 10, v) || v > 1u << 20) return where + ": '" + words[k].str() + "' is not an index";
      // Operands are earlier nodes; an input's index is the operand's.
      if (*op != FormulaOp::Input && v >= i) return where + " reads node " + words[k].str() + ", not an earlier one";
      args.push_back(int(v));
    }
    if (*op == FormulaOp::Input) last = b.input(args[0]);
    else if (*op == FormulaOp::Select) last = b.select(args[0], args[1], args[2]);
    else if (arity(*op) == 1) last = b.unary(*op, args[0]);
    else last = b.binary(*op, args[0], args[1]);
  }
  if (last < 0) return "the formula is empty";
  out = b.done(last);
  return "";
}
