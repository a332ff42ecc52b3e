//===- compiler/ReportCharts.h - the pieces of the report's SVG charts -*- C++ -*-===//
//
// What every chart of `planc report` (compiler/Report.cpp) draws with:
// numbers for SVG coordinates, the width a label takes, legends that wrap
// inside the chart, and axes whose ticks are round numbers of one unit that
// the axis title names ("peak memory per rank (GiB)": 40, 80, 120), on a
// linear or a logarithmic scale. Every label is placed so that it stays
// inside the chart: tests/e2e/report-layout.sh measures the rendered page.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_COMPILER_REPORTCHARTS_H
#define PLANC_COMPILER_REPORTCHARTS_H

#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace planc {

/// Text made safe for HTML (& < > " ').
std::string htmlEscape(llvm::StringRef text);

} // namespace planc

namespace planc::chart {

constexpr double kWidth = 1100;   // every chart's width in CSS pixels
constexpr double kFontSize = 12;  // the charts' text, sans-serif
constexpr double kCharWidth = 7.2; // an upper bound of a 12 px sans-serif character's advance

/// Plain decimals for SVG coordinates (no exponents).
std::string num(double v);

/// The width `text` takes at the charts' font size, at most.
double textWidth(llvm::StringRef text);

struct Series {
  std::string name, colour;
};

/// Rows of coloured squares and names from `y` down, wrapped to stay within
/// [x, kWidth - 10]; `height` is set to the rows' height.
std::string legend(const std::vector<Series> &items, double y, double &height, double x = 10);

/// What an axis measures: its unit is chosen from the values (bytes in B,
/// KiB, MiB, GiB or TiB; seconds in µs, ms or s).
enum class Measure { Bytes, Seconds };

/// An axis from `lo` to `hi` (base units: bytes, seconds) with its ticks.
struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  std::string unit;        // "GiB", "s"
  double unitSize = 1;     // base units in one `unit`
  std::vector<double> ticks; // base units, inside [lo, hi]
  /// Where `v` lies between pixel `from` (at lo) and `to` (at hi), clamped.
  double place(double v, double from, double to) const;
  /// A tick's text in the axis unit: "40", "2.5", "1000".
  std::string tickText(double v) const;
  /// "peak memory per rank (GiB)"
  std::string title(llvm::StringRef what) const { return what.str() + " (" + unit + ")"; }
};

/// A linear axis from 0 to at least `most`, ending at a round tick.
Axis linearAxis(double most, Measure q);
/// A logarithmic axis around [least, most] (both > 0) with a little room
/// at each end, ticks at 1, 2 and 5 times powers of ten of the unit.
Axis logAxis(double least, double most, Measure q);

} // namespace planc::chart

#endif
