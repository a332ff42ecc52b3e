//===- tests/unit/support/UnitsTest.cpp - quantities with units -------------------===//
//
// Every unit converts to the right base unit and dimension, the unit table
// agrees with the lexer's UNIT fragment, and the formatters print what the
// summaries show.
//
//===----------------------------------------------------------------------===//

#include "support/Units.h"
#include "frontend/ConfigReader.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <limits>
#include <set>
#include <string>

using namespace planc;

namespace {

struct UnitCase {
  const char *unit;
  UnitDim dim;
  double baseUnitsPerUnit;
};

// One row per unit of the language, with the factor written out by hand.
const UnitCase unitCases[] = {
    {"KiB", UnitDim::Bytes, 1024.0},
    {"MiB", UnitDim::Bytes, 1048576.0},
    {"GiB", UnitDim::Bytes, 1073741824.0},
    {"TiB", UnitDim::Bytes, 1099511627776.0},
    {"KB", UnitDim::Bytes, 1e3},
    {"MB", UnitDim::Bytes, 1e6},
    {"GB", UnitDim::Bytes, 1e9},
    {"TB", UnitDim::Bytes, 1e12},
    {"MB/s", UnitDim::Bandwidth, 1e6},
    {"GB/s", UnitDim::Bandwidth, 1e9},
    {"TB/s", UnitDim::Bandwidth, 1e12},
    {"GiB/s", UnitDim::Bandwidth, 1073741824.0},
    {"Mb/s", UnitDim::Bandwidth, 125e3},   // bits: divided by 8
    {"Gb/s", UnitDim::Bandwidth, 125e6},
    {"Tb/s", UnitDim::Bandwidth, 125e9},
    {"GFLOPS", UnitDim::FlopRate, 1e9},
    {"TFLOPS", UnitDim::FlopRate, 1e12},
    {"PFLOPS", UnitDim::FlopRate, 1e15},
    {"ns", UnitDim::Time, 1e-9},
    {"us", UnitDim::Time, 1e-6},
    {"ms", UnitDim::Time, 1e-3},
};

TEST(UnitsTest, EveryUnitConvertsToItsBaseUnit) {
  for (const UnitCase &c : unitCases) {
    SCOPED_TRACE(c.unit);
    auto q = toBaseUnits(2.5, c.unit);
    ASSERT_TRUE(q.has_value());
    EXPECT_EQ(q->dim, c.dim);
    EXPECT_DOUBLE_EQ(q->value, 2.5 * c.baseUnitsPerUnit);
    const UnitInfo *info = findUnit(c.unit);
    ASSERT_NE(info, nullptr);
    EXPECT_STREQ(info->name, c.unit);
  }
  EXPECT_EQ(allUnits().size(), std::size(unitCases));
}

TEST(UnitsTest, QuantityExprUsesItsNumberAndUnit) {
  ast::QuantityExpr q{llvm::SMRange()};
  q.text = "8 x 200 Gb/s";
  q.number = 200;
  q.unit = "Gb/s";
  auto v = toBaseUnits(q);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->dim, UnitDim::Bandwidth);
  EXPECT_DOUBLE_EQ(v->value, 25e9); // 200 Gb/s is 25 GB/s
}

TEST(UnitsTest, UnitsAreCaseSensitive) {
  // Gb/s (bits) and GB/s (bytes) differ by 8x, so near-misses must not match.
  for (const char *bad : {"gb", "GB/S", "gib", "s", "B", "Tflops", "", "GiBs"})
    EXPECT_FALSE(toBaseUnits(1, bad).has_value()) << bad;
}

TEST(UnitsTest, UnitTableMatchesTheGrammar) {
  // The build passes the source tree's location; the environment may override it.
  const char *root = std::getenv("PLANC_SOURCE_DIR");
  if (!root) root = PLANC_SOURCE_DIR;
  auto buffer = llvm::MemoryBuffer::getFile(std::string(root) + "/grammar/Plan.g4");
  ASSERT_TRUE(bool(buffer));
  llvm::StringRef text = (*buffer)->getBuffer();
  size_t start = text.find("fragment UNIT");
  ASSERT_TRUE(start != llvm::StringRef::npos);
  llvm::StringRef rule = text.substr(start, text.find(';', start) - start);
  std::set<std::string> inGrammar;
  for (size_t q = rule.find('\''); q != llvm::StringRef::npos; q = rule.find('\'', q + 1)) {
    size_t end = rule.find('\'', q + 1);
    inGrammar.insert(rule.substr(q + 1, end - q - 1).str());
    q = end;
  }
  std::set<std::string> inTable;
  for (const UnitInfo &u : allUnits()) inTable.insert(u.name);
  EXPECT_EQ(inGrammar, inTable);
}

TEST(UnitsTest, ParseQuantityFromText) {
  auto q = parseQuantity("70GiB");
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->dim, UnitDim::Bytes);
  EXPECT_DOUBLE_EQ(q->value, 70.0 * 1073741824.0);

  q = parseQuantity("  1.5e3 MB/s ");
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->dim, UnitDim::Bandwidth);
  EXPECT_DOUBLE_EQ(q->value, 1.5e9);

  q = parseQuantity("1_000 GB");
  ASSERT_TRUE(q.has_value());
  EXPECT_DOUBLE_EQ(q->value, 1e12);

  q = parseQuantity("5us");
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->dim, UnitDim::Time);
  EXPECT_DOUBLE_EQ(q->value, 5e-6);

  for (const char *bad : {"", "GiB", "70", "70 parsecs", "abc", "nan GiB", "1e GiB"})
    EXPECT_FALSE(parseQuantity(bad).has_value()) << bad;
}

TEST(UnitsTest, DescribeDimensionGivesAnExample) {
  EXPECT_STREQ(describeDimension(UnitDim::Bytes), "a size such as 80 GiB");
  EXPECT_STREQ(describeDimension(UnitDim::Bandwidth), "a bandwidth such as 300 GB/s");
  EXPECT_STREQ(describeDimension(UnitDim::FlopRate), "a FLOP rate such as 312 TFLOPS");
  EXPECT_STREQ(describeDimension(UnitDim::Time), "a time such as 5 us");
}

TEST(UnitsTest, FormatBytes) {
  EXPECT_EQ(formatBytes(0), "0 B");
  EXPECT_EQ(formatBytes(1023), "1023 B");
  EXPECT_EQ(formatBytes(1024), "1.0 KiB");
  EXPECT_EQ(formatBytes(1536), "1.5 KiB");
  EXPECT_EQ(formatBytes(25ull << 20), "25.0 MiB");
  EXPECT_EQ(formatBytes(80ull << 30), "80.0 GiB");
  EXPECT_EQ(formatBytes(uint64_t(97.4 * 1073741824.0)), "97.4 GiB");
  EXPECT_EQ(formatBytes(3ull << 39), "1.5 TiB");
  // Rounding up to the next unit prints that unit, not "1024.0 GiB".
  EXPECT_EQ(formatBytes((1ull << 40) - 1), "1.0 TiB");
  EXPECT_EQ(formatBytes(std::numeric_limits<uint64_t>::max()), "16.0 EiB");
}

TEST(UnitsTest, FormatRatesAndTimes) {
  EXPECT_EQ(formatBandwidth(300e9), "300.0 GB/s");
  EXPECT_EQ(formatBandwidth(3.35e12), "3.4 TB/s");
  EXPECT_EQ(formatBandwidth(25e9), "25.0 GB/s");
  EXPECT_EQ(formatBandwidth(500), "500.0 B/s");
  EXPECT_EQ(formatFlops(989.4e12), "989.4 TFLOPS");
  EXPECT_EQ(formatFlops(1978.9e12), "2.0 PFLOPS");
  EXPECT_EQ(formatFlops(384e9), "384.0 GFLOPS");
  EXPECT_EQ(formatTime(5e-6), "5.0 us");
  EXPECT_EQ(formatTime(1.34e-3), "1.3 ms");
  EXPECT_EQ(formatTime(3.4), "3.4 s");
  EXPECT_EQ(formatTime(20e-9), "20.0 ns");
}

} // namespace
