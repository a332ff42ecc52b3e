//===- numerics/ElementType.h - the element types and their table -*- C++ -*-===//
//
// The one table of element types: the runtime's element types
// (runtime::ElementType) are this enum and the IR's dtypes (ir::DType) are
// its values in the same order (ir/Type.cpp checks each at compile time), so
// a value crosses from the compiler to an executable by value, and the
// names and sizes are written once, here.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_NUMERICS_ELEMENTTYPE_H
#define PLANC_NUMERICS_ELEMENTTYPE_H

#include <cstdint>
#include <optional>
#include <string_view>

namespace planc::numerics {

enum class ElementType : uint8_t { F64, F32, BF16, F16, F8E4M3, F8E5M2, I32, I64, U8, U16, U32, Bool };
constexpr unsigned kNumElementTypes = 12;

/// "f64", "bf16", "fp8_e4m3", ... as the IR and the .plan language spell them;
/// "?" for a value outside the enum.
const char *spelling(ElementType t);
std::optional<ElementType> parseElementType(std::string_view name);
/// Bytes one element takes (0 outside the enum).
unsigned byteSize(ElementType t);
bool isFloat(ElementType t);
/// The integer types; bool is neither a float nor an integer.
bool isInteger(ElementType t);

} // namespace planc::numerics

#endif
