//===- numerics/ElementType.cpp - names and sizes of the element types ----===//

#include "numerics/ElementType.h"

#include <iterator>

using namespace planc::numerics;

namespace {

struct ElementInfo {
  const char *name;
  unsigned bytes;
  bool isFloat;
};

// Indexed by ElementType; the names are the IR's (and the .plan language's).
const ElementInfo kElementTable[] = {
    {"f64", 8, true},      {"f32", 4, true},      {"bf16", 2, true}, {"f16", 2, true},
    {"fp8_e4m3", 1, true}, {"fp8_e5m2", 1, true}, {"i32", 4, false}, {"i64", 8, false},
    {"u8", 1, false},      {"u16", 2, false},     {"u32", 4, false}, {"bool", 1, false},
};
static_assert(std::size(kElementTable) == kNumElementTypes, "one row per element type");
static_assert(unsigned(ElementType::Bool) + 1 == kNumElementTypes, "kNumElementTypes counts the enum");

} // namespace

const char *planc::numerics::spelling(ElementType t) {
  return unsigned(t) < kNumElementTypes ? kElementTable[unsigned(t)].name : "?";
}

std::optional<ElementType> planc::numerics::parseElementType(std::string_view name) {
  for (unsigned i = 0; i < kNumElementTypes; ++i)
    if (name == kElementTable[i].name) return ElementType(i);
  return std::nullopt;
}

unsigned planc::numerics::byteSize(ElementType t) {
  return unsigned(t) < kNumElementTypes ? kElementTable[unsigned(t)].bytes : 0;
}

bool planc::numerics::isFloat(ElementType t) {
  return unsigned(t) < kNumElementTypes && kElementTable[unsigned(t)].isFloat;
}

bool planc::numerics::isInteger(ElementType t) {
  return unsigned(t) < kNumElementTypes && !kElementTable[unsigned(t)].isFloat && t != ElementType::Bool;
}
