//===- frontend/BuiltinRules.h - the shape rules of the primitive operations -*- C++ -*-===//
//
// Private to frontend/: a primitive's call with its arguments bound
// (Elaborator::callBuiltin, SemaBuiltins.cpp) and the shape rule that gives
// its result's shape and dtype, or reports why there is none. The rules
// mirror what the IR ops will compute; the IR verifier checks the same facts
// again after lowering. One method per primitive or family of primitives.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_FRONTEND_BUILTINRULES_H
#define PLANC_FRONTEND_BUILTINRULES_H

#include "frontend/SemaImpl.h"

#include <optional>
#include <string>
#include <vector>

namespace planc::sema {

class BuiltinRules {
public:
  BuiltinRules(Elaborator &sema, const ast::CallExpr &call, std::string name)
      : sema(sema), call(call), name(std::move(name)) {}

  /// The arguments by parameter (Builtins.cpp's order) and where each was
  /// written (the call where defaulted); concat's tensors apart.
  std::vector<Value> args;
  std::vector<SMRange> ranges;
  std::vector<Value> tensors;
  std::vector<SMRange> tensorRanges;

  /// The result of the call (an error value after a diagnostic).
  Value apply();

private:
  Value foldMath();
  Value minMax();
  Value activation();
  Value pow();
  Value reduction();
  Value softmax();
  Value norm();
  Value gather();
  Value dropout();
  Value rope();
  Value causalMask();
  Value reshape();
  Value transpose();
  Value slice();
  Value concat();
  Value cast();
  Value repeatInterleave();
  Value crossEntropy();

  /// `v` as the call's result: made here, no parameter of its own.
  Value result(Value v) const;
  /// Whether argument `i` is a floating-point tensor (reported if not).
  bool needFloat(size_t i);
  /// Argument `dim` as a dim of argument `tensor` (negative from the end).
  std::optional<int64_t> dimArg(size_t tensor, size_t dim);
  DiagBuilder report(DiagID id, SMRange range) { return sema.report(id, range); }

  Elaborator &sema;
  const ast::CallExpr &call;
  const std::string name;
};

} // namespace planc::sema

#endif
