//===- backend/interp/BatchShape.cpp - tokens and targets of a model -----===//

#include "backend/interp/BatchShape.h"
#include "backend/interp/TensorAdapters.h"

#include "support/Error.h"

#include <algorithm>

using namespace planc;
using namespace planc::ir;

namespace {
/// "file:line:col: " of an input's declaration, where the IR knows it.
std::string at(const Value &v) {
  if (!v.loc.isKnown()) return "";
  return v.loc.text() + ": ";
}
} // namespace

llvm::Expected<runtime::BatchShape> interp::batchShapeOf(const Module &m) {
  const char *needed = "the training data fills 'input tokens : i32[batch, seq]' and 'input targets : i32[batch, seq]'";
  const Value *tokens = nullptr, *targets = nullptr;
  for (const Value *v : m.inputs) {
    if (v->name == "tokens") tokens = v;
    else if (v->name == "targets") targets = v;
    else return makeError(at(*v) + needed + "; model '" + m.name + "' has another input, '" + v->name + "'");
  }
  if (!tokens || !targets)
    return makeError(std::string(needed) + "; model '" + m.name + "' has no input '" + (tokens ? "targets" : "tokens") +
                     "'");
  for (const Value *v : {tokens, targets})
    if (v->type.rank() != 2 || !isInteger(v->type.dtype))
      return makeError(at(*v) + needed + "; input '" + v->name + "' of model '" + m.name + "' is " +
                       toString(v->type));
  if (tokens->type.shape != targets->type.shape || tokens->type.dtype != targets->type.dtype)
    return makeError(std::string(needed) + "; model '" + m.name + "' has tokens " + toString(tokens->type) +
                     " but targets " + toString(targets->type));
  runtime::BatchShape shape;
  shape.batch = tokens->type.shape[0];
  shape.seq = tokens->type.shape[1];
  shape.type = toElementType(tokens->type.dtype);
  shape.vocab = 0;
  for (const auto &op : m.ops)
    if (op->kind == OpKind::Gather && op->operands.size() == 2 && op->operands[1] == tokens)
      shape.vocab = std::max(shape.vocab, op->operands[0]->type.shape.empty() ? 0 : op->operands[0]->type.shape[0]);
  if (shape.vocab <= 0)
    return makeError("cannot tell the vocabulary of model '" + m.name + "': no embedding lookup reads its 'tokens'");
  return shape;
}
