//===- support/Units.h - quantities with units ----------------*- C++ -*-===//
//
// The units a plan may write after a number (`80 GiB`, `450 GB/s`, `989 TFLOPS`,
// `5 us`) and their conversion to base units: bytes, bytes per second, FLOP per
// second and seconds. A setting asks for one dimension, so `memory = 300 GB/s`
// is reported instead of being read as a size. The formatters print the values
// back for summaries and messages.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_SUPPORT_UNITS_H
#define PLANC_SUPPORT_UNITS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace planc {

/// What a unit measures. Every quantity converts to one base unit per dimension.
enum class UnitDim {
  Bytes,     // bytes
  Bandwidth, // bytes per second (bits per second are divided by 8)
  FlopRate,  // floating-point operations per second
  Time,      // seconds
};

/// One unit as the lexer spells it.
struct UnitInfo {
  const char *name;   // "GiB", "Gb/s", "TFLOPS", ...
  UnitDim dim;
  double scale;       // base units per unit
};

/// Every unit the language knows, for messages and documentation.
llvm::ArrayRef<UnitInfo> allUnits();
/// The unit spelled exactly `name` (units are case-sensitive: Gb/s is bits).
const UnitInfo *findUnit(llvm::StringRef name);

/// A value in base units with its dimension.
struct Quantity {
  double value = 0;
  UnitDim dim = UnitDim::Bytes;
};

/// `80 GiB` -> {85899345920, Bytes}. None if the unit is unknown.
std::optional<Quantity> toBaseUnits(double number, llvm::StringRef unit);
/// Parses text such as "70GiB", "70 GiB" or "1.5e3 MB/s" (the driver's --budget).
std::optional<Quantity> parseQuantity(llvm::StringRef text);

/// "a size such as 80 GiB": what a setting of this dimension expects, for messages.
const char *describeDimension(UnitDim dim);

/// "80.0 GiB", "512 B", "1.5 TiB": binary units with one decimal.
std::string formatBytes(uint64_t bytes);
/// "300.0 GB/s", "25.0 GB/s": decimal units, as vendors quote bandwidth.
std::string formatBandwidth(double bytesPerSecond);
/// "989.4 TFLOPS".
std::string formatFlops(double flopsPerSecond);
/// "5.0 us", "1.2 ms", "3.4 s".
std::string formatTime(double seconds);

} // namespace planc

#endif
