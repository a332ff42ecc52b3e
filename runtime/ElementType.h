//===- runtime/ElementType.h - element types of raw buffers -----*- C++ -*-===//
//
// What executables link knows tensors only as typed bytes. The element
// types are the IR's dtypes in the same order (backend/interp checks that
// with a static_assert), so a backend converts one to the other by value;
// runtime/ itself never includes ir/.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_ELEMENTTYPE_H
#define PLANC_RUNTIME_ELEMENTTYPE_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace planc::runtime {

enum class ElementType : uint8_t { F64, F32, BF16, F16, F8E4M3, F8E5M2, I32, I64, U8, U16, U32, Bool };
constexpr unsigned kNumElementTypes = 12;

/// "f64", "bf16", ... as the IR spells them.
const char *spelling(ElementType t);
std::optional<ElementType> parseElementType(std::string_view name);
/// Bytes one element takes.
unsigned byteSize(ElementType t);
bool isFloat(ElementType t);

} // namespace planc::runtime

#endif
