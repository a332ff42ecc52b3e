//===- tests/unit/support/DiagnosticsTest.cpp - the diagnostic engine ------------===//

#include "support/Diagnostics.h"
#include "frontend/Verify.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

using namespace planc;
using llvm::SMLoc;
using llvm::SMRange;

namespace {

struct Fixture {
  llvm::SourceMgr sm;
  DiagnosticEngine diags{sm};
  unsigned buffer;
  llvm::StringRef text;
  explicit Fixture(llvm::StringRef source) {
    buffer = sm.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(source, "t.plan"), SMLoc());
    text = sm.getMemoryBuffer(buffer)->getBuffer();
  }
  SMRange range(size_t begin, size_t end) {
    return {SMLoc::getFromPointer(text.data() + begin), SMLoc::getFromPointer(text.data() + end)};
  }
};

TEST(DiagnosticsTest, FormatsArgumentsInOrder) {
  EXPECT_EQ(formatDiagnostic("a %1 b %0", {"x", "y"}), "a y b x");
  EXPECT_EQ(formatDiagnostic("missing %2", {"x"}), "missing <?>");
  EXPECT_EQ(formatDiagnostic("100% sure", {}), "100% sure");
}

TEST(DiagnosticsTest, LongArgumentsAreQuotedAsBoundedExcerpts) {
  // Up to 1,024 bytes an argument is quoted whole (a long import cycle's
  // paths are one argument).
  std::string atLimit(1024, 'x');
  EXPECT_EQ(formatDiagnostic("'%0'", {atLimit}), "'" + atLimit + "'");
  // 10 MB: its first 640 and last 160 bytes around the count.
  std::string huge = "<" + std::string(10000000, 'a') + ">";
  EXPECT_EQ(formatDiagnostic("name '%0' is unknown", {huge}),
            "name '<" + std::string(639, 'a') + "...(10000002 bytes in all)..." + std::string(159, 'a') + ">' is unknown");
  // Never inside a UTF-8 sequence: a 2-byte character across the cut is kept
  // whole or left out whole.
  std::string text = "x"; // so that byte 640 is in the middle of a character
  while (text.size() < 2001) text += "\xc3\xa9"; // "é"
  std::string cut = formatDiagnostic("%0", {text});
  EXPECT_LT(cut.size(), size_t(1024));
  ASSERT_NE(cut.find("...(2001 bytes in all)..."), std::string::npos) << cut;
  for (size_t i = 0; i < cut.size(); ++i)
    if ((static_cast<unsigned char>(cut[i]) & 0xC0) == 0x80) // a continuation byte follows its lead byte
      EXPECT_TRUE(i > 0 && static_cast<unsigned char>(cut[i - 1]) == 0xc3) << "byte " << i << " of " << cut;
    else if (static_cast<unsigned char>(cut[i]) == 0xc3)
      EXPECT_TRUE(i + 1 < cut.size() && static_cast<unsigned char>(cut[i + 1]) == 0xa9) << "byte " << i;
  // A huge name is compared with no candidate (the cost would be its length
  // times theirs), and matches none.
  EXPECT_EQ(closestMatch(std::string(1000000, 'a'), {"attention", "mlp"}), "");
}

TEST(DiagnosticsTest, TextRendersLocationCaretRangeAndFixit) {
  Fixture f("model m {\n  x = attentoin(y)\n}\n");
  std::string out;
  llvm::raw_string_ostream os(out);
  f.diags.setConsumer(makeTextConsumer(f.sm, os, /*colors=*/false));
  SMRange callee = f.range(16, 25); // "attentoin"
  f.diags.report(DiagID::err_unknown_callee, callee)
      .note(DiagID::note_did_you_mean, callee, {"attention"})
      .fixit(callee, "attention")
      << "attentoin";
  os.flush();
  EXPECT_NE(out.find("t.plan:2:7: error: unknown layer or operation 'attentoin'\n"), std::string::npos) << out;
  EXPECT_NE(out.find("  x = attentoin(y)\n      ^~~~~~~~~\n"), std::string::npos) << out;
  EXPECT_NE(out.find("t.plan:2:7: note: did you mean 'attention'?"), std::string::npos) << out;
  // The fix-it line shows the replacement under the range.
  EXPECT_NE(out.find("      attention\n"), std::string::npos) << out;
  EXPECT_EQ(f.diags.getNumErrors(), 1u);
}

TEST(DiagnosticsTest, JsonHasPositionsRangesAndNotes) {
  Fixture f("let a = 1\n");
  std::string out;
  llvm::raw_string_ostream os(out);
  f.diags.setConsumer(makeJsonConsumer(f.sm, os));
  f.diags.report(DiagID::err_division_by_zero, f.range(8, 9)).note(DiagID::note_declared_here, f.range(4, 5), {"a"});
  os.flush();
  EXPECT_NE(out.find("\"severity\":\"error\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"id\":\"err_division_by_zero\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"location\":{\"column\":9,\"file\":\"t.plan\",\"line\":1}"), std::string::npos) << out;
  EXPECT_NE(out.find("\"message\":\"'a' declared here\""), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << "one line per diagnostic";
}

TEST(DiagnosticsTest, WerrorPromotesAndSuppressDrops) {
  Fixture f("x\n");
  CollectingConsumer *c = new CollectingConsumer;
  f.diags.setConsumer(std::unique_ptr<DiagnosticConsumer>(c));
  f.diags.report(DiagID::warn_tp_across_nodes, f.range(0, 1)) << 16 << 8;
  EXPECT_EQ(f.diags.getNumWarnings(), 1u);
  EXPECT_EQ(f.diags.getNumErrors(), 0u);
  f.diags.setWarningsAsErrors(true);
  f.diags.report(DiagID::warn_tp_across_nodes, f.range(0, 1)) << 32 << 8;
  EXPECT_EQ(f.diags.getNumErrors(), 1u);
  ASSERT_EQ(c->diagnostics.size(), 2u);
  EXPECT_EQ(c->diagnostics[1].severity, Severity::Error);
  f.diags.setWarningsAsErrors(false);
  f.diags.setSuppressWarnings(true);
  f.diags.report(DiagID::warn_tp_across_nodes, f.range(0, 1)) << 64 << 8;
  EXPECT_EQ(c->diagnostics.size(), 2u);
}

TEST(DiagnosticsTest, IdenticalDiagnosticsAreReportedOnce) {
  Fixture f("abc\n");
  auto *c = new CollectingConsumer;
  f.diags.setConsumer(std::unique_ptr<DiagnosticConsumer>(c));
  for (int i = 0; i < 3; ++i) f.diags.report(DiagID::err_unknown_name, f.range(0, 3)) << "abc";
  f.diags.report(DiagID::err_unknown_name, f.range(1, 3)) << "bc"; // another place: kept
  EXPECT_EQ(c->diagnostics.size(), 2u);
  EXPECT_EQ(f.diags.getNumErrors(), 2u);
}

TEST(DiagnosticsTest, StopsAfterTheErrorLimit) {
  Fixture f("abcdefghij\n");
  auto *c = new CollectingConsumer;
  f.diags.setConsumer(std::unique_ptr<DiagnosticConsumer>(c));
  f.diags.setErrorLimit(3);
  for (size_t i = 0; i < 8; ++i) f.diags.report(DiagID::err_unknown_name, f.range(i, i + 1)) << "x";
  EXPECT_TRUE(f.diags.hitErrorLimit());
  ASSERT_EQ(c->diagnostics.size(), 4u);
  EXPECT_EQ(c->diagnostics.back().id, DiagID::err_too_many_errors);
}

TEST(DiagnosticsTest, ExactlyTheLimitIsNoOverflow) {
  Fixture f("abc\n");
  auto *c = new CollectingConsumer;
  f.diags.setConsumer(std::unique_ptr<DiagnosticConsumer>(c));
  f.diags.setErrorLimit(3);
  for (size_t i = 0; i < 3; ++i) f.diags.report(DiagID::err_unknown_name, f.range(i, i + 1)) << "x";
  EXPECT_FALSE(f.diags.hitErrorLimit());
  EXPECT_EQ(c->diagnostics.size(), 3u);
}

TEST(DiagnosticsTest, ClosestMatchFindsPlausibleTyposOnly) {
  EXPECT_EQ(closestMatch("attentoin", {"attention", "mlp", "layernorm"}), "attention");
  EXPECT_EQ(closestMatch("tq", {"dp", "tp", "pp"}), "tp"); // one edit; dp and pp are two
  EXPECT_EQ(closestMatch("zzzzzz", {"attention", "mlp"}), "");
  EXPECT_EQ(closestMatch("mlp", {"mlp"}), "") << "the name itself is no suggestion";
}

TEST(DiagnosticsTest, VerifyMatchesExpectationsByLineAndText) {
  Fixture f("a // expected-error {{bad a}}\n// expected-note@+1 {{see b}}\nb\n");
  std::vector<Diagnostic> ds;
  Diagnostic d;
  d.id = DiagID::err_unknown_name;
  d.severity = Severity::Error;
  d.loc = f.range(0, 1).Start;
  d.message = "very bad a here";
  Diagnostic n;
  n.id = DiagID::note_declared_here;
  n.severity = Severity::Note;
  n.loc = f.range(60, 61).Start; // the 'b' on line 3
  n.message = "see b";
  d.notes.push_back(n);
  ds.push_back(d);
  std::string out;
  llvm::raw_string_ostream os(out);
  EXPECT_TRUE(verifyDiagnostics(ds, f.sm, os)) << os.str();

  // A diagnostic on another line is unexpected, and the expectation is unmet.
  ds[0].loc = f.range(60, 61).Start;
  out.clear();
  EXPECT_FALSE(verifyDiagnostics(ds, f.sm, os));
  os.flush();
  EXPECT_NE(out.find("expected error not seen on line 1: bad a"), std::string::npos) << out;
  EXPECT_NE(out.find("unexpected error at t.plan:3"), std::string::npos) << out;
}

} // namespace
