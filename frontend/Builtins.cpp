//===- frontend/Builtins.cpp - the table of primitive operations ---------===//

#include "frontend/Builtins.h"

using namespace planc;

namespace {
using K = BuiltinParamKind;
const std::vector<BuiltinOp> &table() {
  static const std::vector<BuiltinOp> ops = {
      {"exp", {{"x", K::Any, nullptr}}, false, "e^x, elementwise"},
      {"log", {{"x", K::Any, nullptr}}, false, "natural logarithm, elementwise"},
      {"sqrt", {{"x", K::Any, nullptr}}, false, "square root, elementwise"},
      {"rsqrt", {{"x", K::Any, nullptr}}, false, "1/sqrt(x), elementwise"},
      {"tanh", {{"x", K::Any, nullptr}}, false, "hyperbolic tangent, elementwise"},
      {"relu", {{"x", K::Tensor, nullptr}}, false, "max(x, 0), elementwise"},
      {"gelu", {{"x", K::Tensor, nullptr}}, false, "GELU (tanh approximation), elementwise"},
      {"silu", {{"x", K::Tensor, nullptr}}, false, "x * sigmoid(x), elementwise"},
      {"sigmoid", {{"x", K::Tensor, nullptr}}, false, "1/(1+e^-x), elementwise"},
      {"abs", {{"x", K::Any, nullptr}}, false, "absolute value, elementwise"},
      {"pow", {{"x", K::Tensor, nullptr}, {"p", K::Float, nullptr}}, false, "x^p, elementwise"},
      {"min", {{"a", K::Any, nullptr}, {"b", K::Any, nullptr}}, false, "the smaller of two constants"},
      {"max", {{"a", K::Any, nullptr}, {"b", K::Any, nullptr}}, false, "the larger of two constants"},
      {"sum", {{"x", K::Tensor, nullptr}, {"dim", K::Int, nullptr}, {"keepdim", K::Bool, "false"}}, false, "sum over one dimension"},
      {"mean", {{"x", K::Tensor, nullptr}, {"dim", K::Int, nullptr}, {"keepdim", K::Bool, "false"}}, false, "mean over one dimension"},
      {"amax", {{"x", K::Tensor, nullptr}, {"dim", K::Int, nullptr}, {"keepdim", K::Bool, "false"}}, false, "maximum over one dimension"},
      {"softmax", {{"x", K::Tensor, nullptr}, {"dim", K::Int, "-1"}}, false, "softmax over one dimension"},
      {"log_softmax", {{"x", K::Tensor, nullptr}, {"dim", K::Int, "-1"}}, false, "log-softmax over one dimension"},
      {"layer_norm", {{"x", K::Tensor, nullptr}, {"weight", K::Tensor, nullptr}, {"bias", K::Tensor, nullptr}, {"eps", K::Float, "1e-5"}}, false, "layer normalisation over the last dimension"},
      {"rms_norm", {{"x", K::Tensor, nullptr}, {"weight", K::Tensor, nullptr}, {"eps", K::Float, "1e-6"}}, false, "RMS normalisation over the last dimension"},
      {"gather", {{"table", K::Tensor, nullptr}, {"indices", K::Tensor, nullptr}}, false, "rows of table at integer indices (embedding lookup)"},
      {"dropout", {{"x", K::Tensor, nullptr}, {"p", K::Float, nullptr}}, false, "zeroes elements with probability p and scales the rest by 1/(1-p)"},
      {"rope", {{"x", K::Tensor, nullptr}, {"theta", K::Float, "10000.0"}}, false, "rotary position embedding of [b, s, heads, d]"},
      {"causal_mask", {{"x", K::Tensor, nullptr}}, false, "-inf above the diagonal of the last two dimensions"},
      {"reshape", {{"x", K::Tensor, nullptr}, {"shape", K::IntList, nullptr}}, false, "same elements, new shape (one entry may be -1)"},
      {"transpose", {{"x", K::Tensor, nullptr}, {"dim0", K::Int, "-2"}, {"dim1", K::Int, "-1"}}, false, "swaps two dimensions"},
      {"slice", {{"x", K::Tensor, nullptr}, {"dim", K::Int, nullptr}, {"start", K::Int, nullptr}, {"end", K::Int, nullptr}}, false, "elements start..end-1 of one dimension"},
      {"concat", {{"dim", K::Int, nullptr}}, true, "joins tensors along one dimension"},
      {"cast", {{"x", K::Tensor, nullptr}, {"dtype", K::DType, nullptr}}, false, "converts to another dtype"},
      {"repeat_interleave", {{"x", K::Tensor, nullptr}, {"n", K::Int, nullptr}, {"dim", K::Int, nullptr}}, false, "repeats each slice of one dimension n times"},
      {"cross_entropy", {{"logits", K::Tensor, nullptr}, {"targets", K::Tensor, nullptr}}, false, "mean cross-entropy of logits [..., V] against integer targets [...]"},
  };
  return ops;
}
} // namespace

llvm::ArrayRef<BuiltinOp> planc::builtinOps() { return table(); }

const BuiltinOp *planc::findBuiltinOp(llvm::StringRef name) {
  for (const BuiltinOp &op : table())
    if (name == op.name) return &op;
  return nullptr;
}

bool planc::isBuiltinOp(llvm::StringRef name) { return findBuiltinOp(name) != nullptr; }

std::string planc::signatureOf(const BuiltinOp &op) {
  std::string out;
  for (const BuiltinParam &p : op.params) {
    static const char *const kinds[] = {"tensor", "int", "float", "bool", "dtype", "[int]", nullptr}; // the enum's order
    if (!out.empty()) out += ", ";
    out += p.name;
    if (const char *kind = kinds[unsigned(p.kind)]) out += std::string(": ") + kind;
    if (p.defaultValue) out += std::string(" = ") + p.defaultValue;
  }
  if (op.variadicTensors) out = "x, ..." + (out.empty() ? "" : ", " + out); // concat(a, b, c, dim = 0)
  return out;
}

llvm::ArrayRef<std::string> planc::dtypeNames() {
  static const std::vector<std::string> names = {"f64", "f32", "bf16", "f16", "fp8_e4m3", "fp8_e5m2",
                                                 "i32", "i64", "u8", "u16", "u32", "bool"};
  return names;
}

bool planc::isDTypeName(llvm::StringRef name) {
  for (const std::string &n : dtypeNames())
    if (name == n) return true;
  return false;
}

bool planc::isFloatDType(llvm::StringRef name) {
  return name == "f64" || name == "f32" || name == "bf16" || name == "f16" || name == "fp8_e4m3" || name == "fp8_e5m2";
}

bool planc::isIntDType(llvm::StringRef name) {
  return name == "i32" || name == "i64" || name == "u8" || name == "u16" || name == "u32";
}
