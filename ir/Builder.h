//===- ir/Builder.h - appending ops with their types inferred ---*- C++ -*-===//
//
// Builder appends ops to a module, computing result types with the op's
// OpDef and stamping every op with the current location and layer path.
// Lowering and the gradient rules use it; a type error here is a compiler bug
// (the frontend already checked the plan), reported as a fatal internal error
// with the op's location.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_IR_BUILDER_H
#define PLANC_IR_BUILDER_H

#include "ir/IR.h"

namespace planc::ir {

class Builder {
public:
  explicit Builder(Module &m) : module(m) {}
  Module &module;
  Location loc;
  std::string path;

  /// Appends `kind` with results typed by its OpDef; returns the op.
  Op *create(OpKind kind, std::vector<Value *> operands, AttrMap attrs = {}, const std::string &name = "");
  /// The single result of create().
  Value *value(OpKind kind, std::vector<Value *> operands, AttrMap attrs = {}, const std::string &name = "") {
    return create(kind, std::move(operands), std::move(attrs), name)->results[0];
  }

  // Shorthands the gradient rules read like formulas with.
  Value *add(Value *a, Value *b) { return value(OpKind::Add, {a, b}); }
  Value *sub(Value *a, Value *b) { return value(OpKind::Sub, {a, b}); }
  Value *mul(Value *a, Value *b) { return value(OpKind::Mul, {a, b}); }
  Value *div(Value *a, Value *b) { return value(OpKind::Div, {a, b}); }
  Value *neg(Value *a) { return value(OpKind::Neg, {a}); }
  Value *scale(Value *a, double f) { return value(OpKind::Scale, {a}, {{"factor", f}}); }
  Value *matmul(Value *a, Value *b, bool ta = false, bool tb = false) {
    return value(OpKind::MatMul, {a, b}, {{"transpose_a", ta}, {"transpose_b", tb}});
  }
  /// Sums `v` down to `shape` (undoing broadcasting); returns v itself if equal.
  Value *sumTo(Value *v, const Shape &shape);
  Value *reshape(Value *v, const Shape &shape);
};

/// Copies the location and path of `op` into the builder while it lives.
class BuilderScope {
public:
  BuilderScope(Builder &b, const Op &op) : b(b), savedLoc(b.loc), savedPath(b.path) {
    b.loc = op.loc;
    b.path = op.path;
  }
  ~BuilderScope() {
    b.loc = savedLoc;
    b.path = savedPath;
  }

private:
  Builder &b;
  Location savedLoc;
  std::string savedPath;
};

} // namespace planc::ir

#endif
