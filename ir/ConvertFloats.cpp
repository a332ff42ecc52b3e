//===- ir/ConvertFloats.cpp - one float dtype for a whole module ---------===//

#include "ir/ConvertFloats.h"

using namespace planc;
using namespace planc::ir;

void ir::convertFloatTypes(Module &m, DType to) {
  for (auto &v : m.allValues())
    if (isFloat(v->type.dtype)) v->type.dtype = to;
  for (auto &op : m.ops) {
    auto it = op->attrs.find("dtype");
    if (it == op->attrs.end()) continue;
    auto *name = std::get_if<std::string>(&it->second);
    if (!name) continue;
    std::optional<DType> d = parseDType(*name);
    if (d && isFloat(*d)) *name = spelling(to);
  }
}
