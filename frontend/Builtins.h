//===- frontend/Builtins.h - the primitive operations of the language -*- C++ -*-===//
//
// The names and parameters of the built-in operations (matmul is the `@`
// operator; `+ - * /` are elementwise). Sema checks calls against this table;
// the IR's Ops.def is the single source of truth for what each op computes.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_FRONTEND_BUILTINS_H
#define PLANC_FRONTEND_BUILTINS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace planc {

enum class BuiltinParamKind { Tensor, Int, Float, Bool, DType, IntList, Any };

struct BuiltinParam {
  const char *name;
  BuiltinParamKind kind;
  const char *defaultValue; // nullptr: required; otherwise a literal in .plan syntax
};

struct BuiltinOp {
  const char *name;
  std::vector<BuiltinParam> params;
  bool variadicTensors = false; // concat(a, b, c, dim = 0)
  const char *summary;
};

/// "x: tensor, dim: int = -1": the op's parameters, for messages.
std::string signatureOf(const BuiltinOp &op);

llvm::ArrayRef<BuiltinOp> builtinOps();
const BuiltinOp *findBuiltinOp(llvm::StringRef name);
bool isBuiltinOp(llvm::StringRef name);

/// Names of the dtypes a tensor may have.
llvm::ArrayRef<std::string> dtypeNames();
bool isDTypeName(llvm::StringRef name);
bool isFloatDType(llvm::StringRef name);
bool isIntDType(llvm::StringRef name);

} // namespace planc

#endif
