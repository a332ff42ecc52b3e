//===- ir/Builder.cpp - appending ops with their types inferred ----------===//

#include "ir/Builder.h"
#include "ir/OpDef.h"

#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/raw_ostream.h"

using namespace planc;
using namespace planc::ir;

Op *Builder::create(OpKind kind, std::vector<Value *> operands, AttrMap attrs, const std::string &name) {
  std::vector<TensorType> resultTypes;
  std::string error = inferResultTypes(kind, operands, attrs, resultTypes);
  if (!error.empty()) {
    // The frontend has checked the plan, so an op that does not type here is
    // a compiler bug: say where it came from, with its operands, and stop.
    std::string msg;
    llvm::raw_string_ostream os(msg);
    if (loc.isKnown()) os << loc.file << ":" << loc.line << ":" << loc.column << ": ";
    os << "internal error: cannot build '" << spelling(kind) << "'";
    if (!path.empty()) os << " in '" << path << "'";
    os << ": " << error << " (operands:";
    for (size_t i = 0; i < operands.size(); ++i) {
      os << (i ? ", %" : " %");
      if (operands[i]) os << operands[i]->name << " : " << toString(operands[i]->type);
      else os << "<null>";
    }
    os << ")";
    llvm::errs() << os.str() << "\n";
    llvm::report_fatal_error("IR builder: an op failed its type rule", /*gen_crash_diag=*/false);
  }
  Op *op = module.append(kind, std::move(operands), std::move(resultTypes), std::move(attrs), name);
  op->loc = loc;
  op->path = path;
  return op;
}

Value *Builder::sumTo(Value *v, const Shape &shape) {
  if (v->type.shape == shape) return v;
  return value(OpKind::SumTo, {v}, {{"shape", shape}});
}

Value *Builder::reshape(Value *v, const Shape &shape) {
  if (v->type.shape == shape) return v;
  return value(OpKind::Reshape, {v}, {{"shape", shape}});
}
