//===- ir/LocalAttrs.cpp - an op's attributes on one rank's blocks --------===//

#include "ir/LocalAttrs.h"
#include "ir/LocalBlocks.h"

using namespace planc;
using namespace planc::ir;

AttrMap ir::localAttrs(const Op &op, const MeshLayout &mesh) {
  AttrMap attrs = op.attrs;
  if (op.results.empty()) return attrs;
  Shape local = localShape(op.results[0]->type, mesh);
  switch (op.kind) {
  case OpKind::Reshape:
  case OpKind::BroadcastTo:
  case OpKind::SumTo:
  case OpKind::Fill:
  case OpKind::Recv:
    if (attrs.count("shape")) attrs["shape"] = std::vector<int64_t>(local.begin(), local.end());
    break;
  case OpKind::ScatterAdd:
    if (!local.empty()) attrs["rows"] = local[0];
    break;
  default:
    break;
  }
  return attrs;
}
