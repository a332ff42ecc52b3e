//===- ir/LocalAttrs.cpp - an op's attributes on one rank's blocks --------===//

#include "ir/LocalAttrs.h"
#include "ir/LocalBlocks.h"
#include "ir/OpDef.h"

using namespace planc;
using namespace planc::ir;

AttrMap ir::localAttrs(const Op &op, const MeshLayout &mesh) {
  AttrMap attrs = op.attrs;
  if (op.results.empty()) return attrs;
  Shape local = localShape(op.results[0]->type, mesh);
  // The attributes the op table names as holding the result's shape.
  const OpDef &def = opDef(op.kind);
  if (def.shapeAttr && attrs.count(def.shapeAttr)) attrs[def.shapeAttr] = std::vector<int64_t>(local.begin(), local.end());
  if (def.rowsAttr && !local.empty()) attrs[def.rowsAttr] = local[0];
  return attrs;
}
