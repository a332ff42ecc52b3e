//===- support/Units.cpp - quantities with units -------------------------===//

#include "support/Units.h"

#include "llvm/ADT/STLExtras.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace planc;

namespace {
constexpr double kKi = 1024.0, kMi = kKi * 1024, kGi = kMi * 1024, kTi = kGi * 1024;

// The lexer's UNIT fragment (grammar/Plan.g4) lists the same spellings. Decimal
// prefixes are powers of 1000 and binary ones powers of 1024, as in IEC 80000-13;
// a lower-case `b` is bits, so link speeds quoted in Gb/s divide by 8.
const UnitInfo unitTable[] = {
    {"KiB", UnitDim::Bytes, kKi},
    {"MiB", UnitDim::Bytes, kMi},
    {"GiB", UnitDim::Bytes, kGi},
    {"TiB", UnitDim::Bytes, kTi},
    {"KB", UnitDim::Bytes, 1e3},
    {"MB", UnitDim::Bytes, 1e6},
    {"GB", UnitDim::Bytes, 1e9},
    {"TB", UnitDim::Bytes, 1e12},
    {"MB/s", UnitDim::Bandwidth, 1e6},
    {"GB/s", UnitDim::Bandwidth, 1e9},
    {"TB/s", UnitDim::Bandwidth, 1e12},
    {"GiB/s", UnitDim::Bandwidth, kGi},
    {"Mb/s", UnitDim::Bandwidth, 1e6 / 8},
    {"Gb/s", UnitDim::Bandwidth, 1e9 / 8},
    {"Tb/s", UnitDim::Bandwidth, 1e12 / 8},
    {"GFLOPS", UnitDim::FlopRate, 1e9},
    {"TFLOPS", UnitDim::FlopRate, 1e12},
    {"PFLOPS", UnitDim::FlopRate, 1e15},
    {"ns", UnitDim::Time, 1e-9},
    {"us", UnitDim::Time, 1e-6},
    {"ms", UnitDim::Time, 1e-3},
};

/// Prints `value / scale` with one decimal and the unit name.
std::string withUnit(double value, double scale, const char *unit) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f %s", value / scale, unit);
  return buf;
}

/// Picks the largest unit not above `value` from an ascending ladder, moving up
/// one more when rounding to one decimal would print 1024.0 KiB instead of 1.0 MiB.
std::string onLadder(double value, llvm::ArrayRef<std::pair<double, const char *>> ladder) {
  size_t pick = 0;
  for (size_t i = 0; i < ladder.size(); ++i)
    if (value >= ladder[i].first) pick = i;
  if (pick + 1 < ladder.size() && std::round(value / ladder[pick].first * 10) / 10 >=
                                      ladder[pick + 1].first / ladder[pick].first)
    ++pick;
  return withUnit(value, ladder[pick].first, ladder[pick].second);
}
} // namespace

llvm::ArrayRef<UnitInfo> planc::allUnits() { return unitTable; }

const UnitInfo *planc::findUnit(llvm::StringRef name) {
  for (const UnitInfo &u : unitTable)
    if (name == u.name) return &u;
  return nullptr;
}

std::optional<Quantity> planc::toBaseUnits(double number, llvm::StringRef unit) {
  const UnitInfo *u = findUnit(unit);
  if (!u) return std::nullopt;
  return Quantity{number * u->scale, u->dim};
}

std::optional<Quantity> planc::parseQuantity(llvm::StringRef text) {
  text = text.trim();
  // The number is what strtod accepts; the rest, after blanks, must be a unit.
  std::string digits;
  for (char c : text) {
    if (std::isalpha((unsigned char)c) && c != 'e' && c != 'E') break;
    if (c == '_') continue;
    digits += c;
  }
  // "1e3GB": the 'e' of an exponent is followed by a digit or a sign; a unit's is not.
  size_t end = 0;
  const char *begin = digits.c_str();
  char *stop = nullptr;
  double number = std::strtod(begin, &stop);
  end = size_t(stop - begin);
  if (end == 0 || !std::isfinite(number)) return std::nullopt;
  // Map the digits consumed back to the original text, skipping underscores.
  size_t consumed = 0, i = 0;
  for (; i < text.size() && consumed < end; ++i)
    if (text[i] != '_') ++consumed;
  llvm::StringRef unit = text.substr(i).trim();
  return toBaseUnits(number, unit);
}

const char *planc::describeDimension(UnitDim dim) {
  switch (dim) {
  case UnitDim::Bytes: return "a size such as 80 GiB";
  case UnitDim::Bandwidth: return "a bandwidth such as 300 GB/s";
  case UnitDim::FlopRate: return "a FLOP rate such as 312 TFLOPS";
  case UnitDim::Time: return "a time such as 5 us";
  }
  return "a quantity";
}

std::string planc::formatBytes(uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  static const std::pair<double, const char *> ladder[] = {
      {kKi, "KiB"}, {kMi, "MiB"}, {kGi, "GiB"}, {kTi, "TiB"}, {kTi * 1024, "PiB"}, {kTi * kMi, "EiB"}};
  return onLadder(double(bytes), ladder);
}

std::string planc::formatBandwidth(double bytesPerSecond) {
  static const std::pair<double, const char *> ladder[] = {
      {1, "B/s"}, {1e3, "KB/s"}, {1e6, "MB/s"}, {1e9, "GB/s"}, {1e12, "TB/s"}};
  return onLadder(bytesPerSecond, ladder);
}

std::string planc::formatFlops(double flopsPerSecond) {
  static const std::pair<double, const char *> ladder[] = {
      {1, "FLOPS"}, {1e9, "GFLOPS"}, {1e12, "TFLOPS"}, {1e15, "PFLOPS"}};
  return onLadder(flopsPerSecond, ladder);
}

std::string planc::formatTime(double seconds) {
  static const std::pair<double, const char *> ladder[] = {
      {1e-9, "ns"}, {1e-6, "us"}, {1e-3, "ms"}, {1, "s"}};
  return onLadder(seconds, ladder);
}
