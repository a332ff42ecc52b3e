//===- compiler/ReportCharts.cpp - numbers, legends and axes of the report ===//

#include "compiler/ReportCharts.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

using namespace planc;
using namespace planc::chart;

std::string chart::num(double v) {
  std::ostringstream os;
  os.precision(6);
  os << std::fixed << (std::fabs(v) < 1e-9 ? 0.0 : v);
  std::string s = os.str();
  while (s.size() > 1 && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

std::string planc::htmlEscape(llvm::StringRef text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) switch (ch) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    case '\'': out += "&#39;"; break;
    default: out += ch;
    }
  return out;
}

double chart::textWidth(llvm::StringRef text) {
  // UTF-8 continuation bytes take no width of their own.
  size_t chars = 0;
  for (char ch : text) chars += (static_cast<unsigned char>(ch) & 0xC0) != 0x80;
  return kCharWidth * double(chars);
}

std::string chart::legend(const std::vector<Series> &items, double y, double &height, double x0) {
  std::string out;
  double x = x0, row = y;
  for (const Series &s : items) {
    double w = 16 + textWidth(s.name) + 14;
    if (x > x0 && x + w > kWidth - 10) x = x0, row += 18; // the next row
    out += "<rect x=\"" + num(x) + "\" y=\"" + num(row) + "\" width=\"12\" height=\"12\" fill=\"" + s.colour + "\"/>";
    out += "<text x=\"" + num(x + 16) + "\" y=\"" + num(row + 10) + "\">" + htmlEscape(s.name) + "</text>";
    x += w;
  }
  height = row - y + 18;
  return out;
}

namespace {

/// The unit of an axis whose largest value is `most`.
void chooseUnit(Axis &a, double most, Measure q) {
  if (q == Measure::Bytes) {
    static const char *names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int i = 0;
    while (i < 5 && most >= std::ldexp(1.0, 10 * (i + 1))) ++i;
    a.unit = names[i];
    a.unitSize = std::ldexp(1.0, 10 * i);
  } else {
    a.unit = most >= 1 ? "s" : most >= 1e-3 ? "ms" : "µs";
    a.unitSize = most >= 1 ? 1 : most >= 1e-3 ? 1e-3 : 1e-6;
  }
}

/// 1, 2, 2.5 or 5 times a power of ten: the smallest at least `x`.
double roundUp(double x) {
  if (x <= 0) return 1;
  double p = std::pow(10.0, std::floor(std::log10(x)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * p >= x * (1 - 1e-9)) return m * p;
  return 10 * p;
}

} // namespace

double Axis::place(double v, double from, double to) const {
  double t;
  if (log) {
    v = std::max(v, lo);
    t = (std::log(v) - std::log(lo)) / (std::log(hi) - std::log(lo));
  } else {
    t = (v - lo) / (hi - lo);
  }
  t = std::min(1.0, std::max(0.0, t));
  return from + t * (to - from);
}

std::string Axis::tickText(double v) const {
  double x = v / unitSize;
  char buf[32];
  // Round ticks need at most three significant digits.
  std::snprintf(buf, sizeof buf, "%.3g", x);
  std::string s = buf;
  if (s.find('e') != std::string::npos) s = num(x); // 1000 and up: plain digits
  return s;
}

Axis chart::linearAxis(double most, Measure q) {
  Axis a;
  if (!(most > 0)) most = 1;
  chooseUnit(a, most, q);
  // Four to six intervals of a round step.
  double step = roundUp(most / a.unitSize / 5) * a.unitSize;
  a.lo = 0;
  a.hi = std::ceil(most / step * (1 - 1e-9)) * step;
  for (double t = 0; t <= a.hi * (1 + 1e-9); t += step) a.ticks.push_back(t);
  return a;
}

Axis chart::logAxis(double least, double most, Measure q) {
  Axis a;
  a.log = true;
  if (!(least > 0)) least = 1;
  if (!(most > least)) most = least * 2;
  // The unit of the middle of the range (in log terms): the small values
  // stay whole numbers, the large ones a few digits.
  chooseUnit(a, std::sqrt(least * most), q);
  // A little room at each end, so that no point sits on the frame.
  a.lo = least / 1.15;
  a.hi = most * 1.15;
  const double lo = a.lo / a.unitSize, hi = a.hi / a.unitSize;
  for (const std::vector<double> &mantissas : {std::vector<double>{1, 2, 5}, std::vector<double>{1, 2, 3, 5, 7}}) {
    a.ticks.clear();
    for (int e = int(std::floor(std::log10(lo))); e <= int(std::ceil(std::log10(hi))); ++e)
      for (double m : mantissas) {
        double t = m * std::pow(10.0, e);
        if (t >= lo && t <= hi) a.ticks.push_back(t * a.unitSize);
      }
    if (a.ticks.size() >= 3) break;
  }
  return a;
}
