//===- ir/ops/Formula.h - an elementwise op as a scalar formula -*- C++ -*-===//
//
// The kernel description of the elementwise ops: result element i as a
// formula of element i of each operand (after broadcasting), the op's scalar
// attributes and constants. One description, two readers:
//
//  - the interpreter's reference kernel of each such op evaluates it, in f64
//    (evalFormula below, used by ir/ops/Elementwise.cpp and friends);
//  - the code generators render it as C-family source (backend/CFamily.h),
//    for the CPU now and CUDA next.
//
// so the oracle and the code generator cannot drift apart. A formula is a
// list of nodes in SSA form: each node reads only earlier ones, so a value
// used twice (tanh(u) in gelu's derivative) is computed once, in the
// renderer's code as in the evaluator. The order of arithmetic is the one the
// node list spells: evaluating in f64 gives the numbers the hand-written
// kernels gave, bit for bit.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_IR_OPS_FORMULA_H
#define PLANC_IR_OPS_FORMULA_H

#include "ir/IR.h"
#include "ir/Tensor.h"

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace planc::ir {

enum class FormulaOp : uint8_t {
  Input,  // operand `index`
  Const,  // `value`
  Attr,   // the op's float attribute `attr`
  Neg, Exp, Log, Sqrt, Tanh, Abs,   // of a
  Add, Sub, Mul, Div, Pow,          // a op b
  Less, LessEq,                     // a < b, a <= b: 1 or 0
  Select,                           // a != 0 ? b : c
};
/// The spelling in docs and --emit output: "exp", "add", "select".
const char *spelling(FormulaOp op);
/// Operands a node of `op` reads (0 for Input, Const, Attr).
unsigned arity(FormulaOp op);

struct FormulaNode {
  FormulaOp op = FormulaOp::Const;
  int a = -1, b = -1, c = -1; // earlier nodes
  int index = 0;              // Input: the operand
  double value = 0;           // Const
  const char *attr = nullptr; // Attr: a name with static storage (`value`: its default)
};

struct Formula {
  std::vector<FormulaNode> nodes;
  int result = -1;         // the node that is the (first) result
  std::vector<int> results; // every result's node, in the op's result order
  unsigned inputs = 0;      // operands read
  /// Attributes the formula reads, in node order (no repeats).
  std::vector<const char *> attrs() const;
};

/// Writes a formula node by node; each call returns the new node's index.
class FormulaBuilder {
public:
  int input(int index);
  int constant(double value);
  /// The op's attribute `name`, `otherwise` where the op has none.
  int attr(const char *name, double otherwise = 0);
  int unary(FormulaOp op, int a);
  int binary(FormulaOp op, int a, int b);
  int select(int cond, int ifTrue, int ifFalse);
  int neg(int a) { return unary(FormulaOp::Neg, a); }
  int exp(int a) { return unary(FormulaOp::Exp, a); }
  int tanh(int a) { return unary(FormulaOp::Tanh, a); }
  int add(int a, int b) { return binary(FormulaOp::Add, a, b); }
  int sub(int a, int b) { return binary(FormulaOp::Sub, a, b); }
  int mul(int a, int b) { return binary(FormulaOp::Mul, a, b); }
  int div(int a, int b) { return binary(FormulaOp::Div, a, b); }
  Formula done(int result);
  /// An op of several results (an optimizer update: parameter and states).
  Formula done(std::vector<int> results);

private:
  int push(FormulaNode n);
  Formula f;
};

/// The formula of an elementwise op kind, or null for an op that has none
/// (not elementwise, or elementwise in a way a formula does not say: cast's
/// rounding, dropout's random mask, a causal mask by position).
const Formula *formulaOf(OpKind kind);

/// The values of the formula's attributes on `attrs`, in Formula::attrs()
/// order: floats and integers as they are, booleans 1 or 0; a missing one
/// takes the default its Attr node gives.
std::vector<double> attrValues(const Formula &f, const AttrMap &attrs);

/// Evaluates `f` in f64 on `in` (broadcast to out's shape as NumPy does)
/// into `out`: the reference kernel of every op with a formula.
void evalFormula(const Formula &f, const AttrMap &attrs, llvm::ArrayRef<const Tensor *> in, Tensor &out);
/// Every result of `f` (all of one shape) into `out`, one per result.
void evalFormula(const Formula &f, const AttrMap &attrs, llvm::ArrayRef<const Tensor *> in,
                 llvm::MutableArrayRef<Tensor> out);

/// A node's operation on the values of its operands (0 for those it has not).
double applyFormulaOp(FormulaOp op, double a, double b, double c);

/// One element: the formula at inputs `x` (one value per operand).
double evalFormulaAt(const Formula &f, llvm::ArrayRef<double> attrValues, llvm::ArrayRef<double> x);

/// Writes formula `f` into `b` with its inputs read from the nodes
/// `inputNodes` (one per input of `f`) and its Attr nodes made constants
/// of `attrValues` (Formula::attrs() order); returns the node of its
/// (first) result, and with `results` every result's node. How fusion
/// composes the formulas of a chain of ops.
int inlineFormula(FormulaBuilder &b, const Formula &f, llvm::ArrayRef<double> attrValues,
                  llvm::ArrayRef<int> inputNodes, std::vector<int> *results = nullptr);

/// A formula without Attr nodes and of one result as text: its nodes in
/// order, separated by "; ", each its spelling and operands ("input 0",
/// "const 0.5", "add 0 1", "select 2 3 4" reading earlier nodes by index);
/// the last node is the result. What fused_elementwise keeps in its
/// `formula` attribute, so the textual IR carries the fused kernel whole.
std::string formulaText(const Formula &f);
/// Reads formulaText's form into `f`; "" or what is wrong with it.
std::string parseFormulaText(llvm::StringRef text, Formula &f);

} // namespace planc::ir

#endif
