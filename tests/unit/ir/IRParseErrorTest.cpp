//===- tests/unit/ir/IRParseErrorTest.cpp - diagnostics of the IR parser -----===//
//
// Bad IR text gives one clang-style `file:line:col: error:` diagnostic at the
// offending token (with notes where another place matters), never a crash.
//
//===----------------------------------------------------------------------===//

#include "ir/Parser.h"

#include <gtest/gtest.h>

using namespace planc;
using namespace planc::ir;

namespace {

/// The rendered diagnostics of parsing `text` as t.ir, or "<parsed>".
std::string diagnose(llvm::StringRef text) {
  auto m = parseIR(text, "t.ir");
  if (m) return "<parsed>";
  return llvm::toString(m.takeError());
}

/// Only the first line: `t.ir:L:C: error: message`.
std::string firstLine(llvm::StringRef text) { return llvm::StringRef(diagnose(text)).split('\n').first.str(); }

/// A module with `body` after an input %x : f32[4] (so body starts on line 3).
std::string withX(llvm::StringRef body) { return "module @m {\n  input %x : f32[4]\n" + body.str() + "\n}\n"; }

TEST(IRParseErrorTest, UnknownOpSuggestsTheClosestWithACaret) {
  EXPECT_EQ(diagnose(withX("  %y = nag(%x) : f32[4]")),
            "t.ir:3:8: error: unknown op 'nag'; did you mean 'neg'?\n"
            "  %y = nag(%x) : f32[4]\n"
            "       ^~~");
  EXPECT_EQ(firstLine(withX("  %y = frobnicate(%x) : f32[4]")), "t.ir:3:8: error: unknown op 'frobnicate'");
}

TEST(IRParseErrorTest, UndefinedValues) {
  EXPECT_EQ(firstLine(withX("  %y = neg(%z) : f32[4]")),
            "t.ir:3:12: error: use of undefined value '%z'; did you mean '%x'?");
  // Operands must be defined above their use: there are no forward references.
  EXPECT_EQ(firstLine(withX("  %y = neg(%later) : f32[4]\n  %later = neg(%x) : f32[4]")),
            "t.ir:3:12: error: use of undefined value '%later'");
  EXPECT_EQ(firstLine(withX("  return %nope as \"out\"")), "t.ir:3:10: error: use of undefined value '%nope'");
}

TEST(IRParseErrorTest, RedefinitionPointsAtThePreviousDefinition) {
  EXPECT_EQ(diagnose(withX("  %x = neg(%x) : f32[4]")),
            "t.ir:3:3: error: redefinition of value '%x'\n"
            "  %x = neg(%x) : f32[4]\n"
            "  ^~\n"
            "t.ir:2:9: note: previous definition is here\n"
            "  input %x : f32[4]\n"
            "        ^");
  EXPECT_EQ(firstLine(withX("  %a, %a = layernorm_grad(%x, %x, %x, %x) : f32[4], f32[4]")),
            "t.ir:3:7: error: value '%a' defined twice by one op");
  EXPECT_EQ(firstLine("module @m {\n  input %\"\" : f32[1]\n}"), "t.ir:2:9: error: a value name is not empty");
  EXPECT_EQ(firstLine("module @m {\n  param %w : f32[1]\n  input %w : f32[1]\n}"),
            "t.ir:3:9: error: redefinition of value '%w'");
}

TEST(IRParseErrorTest, Types) {
  EXPECT_EQ(firstLine("module @m {\n  input %x : f33[4]\n}"),
            "t.ir:2:14: error: unknown dtype 'f33'; did you mean 'f32'?");
  EXPECT_EQ(firstLine("module @m {\n  input %x : f32[4, -1]\n}"), "t.ir:2:21: error: a dimension is not negative");
  EXPECT_EQ(firstLine("module @m {\n  input %x : f32(4)\n}"), "t.ir:2:17: error: expected '[', found '('");
  EXPECT_EQ(firstLine(withX("  %a, %b = layernorm_grad(%x, %x, %x, %x) : f32[4]\n  return")),
            "t.ir:4:3: error: expected a type for each of the 2 results, found 'return'");
  EXPECT_EQ(firstLine(withX("  %a = neg(%x) : f32[4], f32[4]")),
            "t.ir:3:26: error: more result types than results (1)");
}

TEST(IRParseErrorTest, Shardings) {
  EXPECT_EQ(firstLine("module @m {\n  input %x : f32[4]{shard(1, tp)}\n}"),
            "t.ir:2:27: error: shard dimension 1 is out of range for a rank-1 value");
  EXPECT_EQ(firstLine("module @m {\n  input %x : f32[4]{shard(0, xp)}\n}"),
            "t.ir:2:30: error: expected a mesh axis (dp, pp, tp, cp or ep), found 'xp'");
  EXPECT_EQ(firstLine("module @m {\n  input %x : f32[4]{shard(0, tp), shard(0, dp)}\n}"),
            "t.ir:2:41: error: dimension 0 is sharded twice");
  EXPECT_EQ(firstLine("module @m {\n  input %x : f32[4]{partial(tp), partial(dp)}\n}"),
            "t.ir:2:34: error: 'partial' given twice");
  EXPECT_EQ(firstLine("module @m {\n  input %x : f32[4]{replicated}\n}"),
            "t.ir:2:21: error: expected 'shard(dim, axes)' or 'partial(axes)', found 'replicated'");
}

TEST(IRParseErrorTest, Attributes) {
  EXPECT_EQ(firstLine(withX("  %y = scale(%x) {factor = 1, factor = 2} : f32[4]")),
            "t.ir:3:31: error: attribute 'factor' given twice");
  EXPECT_EQ(firstLine(withX("  %y = scale(%x) {factor = } : f32[4]")),
            "t.ir:3:28: error: expected an attribute value (integer, float, true, false, string or [integers]), "
            "found '}'");
  EXPECT_EQ(firstLine(withX("  %y = scale(%x) {n = 9223372036854775808} : f32[4]")),
            "t.ir:3:23: error: integer '9223372036854775808' does not fit in 64 bits");
  EXPECT_EQ(diagnose(withX("  %y = scale(%x) {n = -9223372036854775808} : f32[4]\n  return")), "<parsed>");
  EXPECT_EQ(firstLine(withX("  %y = scale(%x) {f = 1e999} : f32[4]")),
            "t.ir:3:23: error: float '1e999' is out of range");
  EXPECT_EQ(firstLine(withX("  %y = scale(%x) {l = [1, 2.5]} : f32[4]")),
            "t.ir:3:27: error: expected an integer, found '2.5'");
  EXPECT_EQ(firstLine(withX("  %y = scale(%x) {s = \"a\\qb\"} : f32[4]")),
            "t.ir:3:25: error: invalid escape in string (use \\\", \\\\, \\n, \\t or \\HH)");
}

TEST(IRParseErrorTest, LocationsAndPaths) {
  EXPECT_EQ(firstLine(withX("  %y = neg(%x) : f32[4] loc(\"a.plan\":0:1)")),
            "t.ir:3:38: error: line numbers start at 1 and fit in 32 bits");
  EXPECT_EQ(firstLine(withX("  %y = neg(%x) : f32[4] loc(a.plan:1:1)")),
            "t.ir:3:29: error: expected the quoted file name, found 'a'");
  EXPECT_EQ(firstLine(withX("  %y = neg(%x) : f32[4] path \"p\" path \"q\"")),
            "t.ir:3:34: error: 'path' given twice");
  EXPECT_EQ(firstLine(withX("  %y = neg(%x) : f32[4] path \"unterminated")),
            "t.ir:3:30: error: unterminated string");
}

TEST(IRParseErrorTest, OneWeightDecayChoicePerParam) {
  EXPECT_EQ(firstLine("module @m {\n  param %w : f32[4] weight_decay no_weight_decay\n}"),
            "t.ir:2:34: error: 'weight_decay' or 'no_weight_decay' given twice");
}

TEST(IRParseErrorTest, ModuleStructure) {
  EXPECT_EQ(firstLine(""), "t.ir:1:1: error: expected 'module', found end of input");
  EXPECT_EQ(firstLine("module m {}"), "t.ir:1:8: error: expected a module name such as '@model', found 'm'");
  EXPECT_EQ(firstLine("module @m {\n  input %x : f32[4]\n"),
            "t.ir:3:1: error: expected 'param', 'input', an op or 'return', found end of input");
  EXPECT_EQ(firstLine("module @m {\n  return\n  input %x : f32[4]\n}"),
            "t.ir:3:3: error: expected '}' after 'return', found 'input'");
  EXPECT_EQ(firstLine("module @m {\n}\nmodule @n {}"),
            "t.ir:3:1: error: expected end of input after the module, found 'module'");
  EXPECT_EQ(firstLine("module @m mesh(tp = 2, tp = 4) {}"), "t.ir:1:24: error: mesh axis 'tp' given twice");
  EXPECT_EQ(firstLine("module @m mesh(tp = 0) {}"), "t.ir:1:21: error: a mesh axis has at least one device");
  EXPECT_EQ(firstLine("module @m {\n  \x01\n}"), "t.ir:2:3: error: unexpected byte 0x01");
  EXPECT_EQ(firstLine("module @m {\n  # comment\n}"), "t.ir:2:3: error: unexpected character '#'");
  EXPECT_EQ(firstLine("module @m {\n  % = neg()\n}"), "t.ir:2:3: error: expected a name after '%'");
}

TEST(IRParseErrorTest, DiagnosticsAreStructured) {
  auto m = parseIR(withX("  %y = nag(%x) : f32[4]"), "t.ir");
  ASSERT_FALSE(bool(m));
  llvm::handleAllErrors(m.takeError(), [](const IRParseError &e) {
    ASSERT_EQ(e.diagnostics.size(), 1u);
    EXPECT_EQ(e.diagnostics[0].getFilename(), "t.ir");
    EXPECT_EQ(e.diagnostics[0].getLineNo(), 3);
    EXPECT_EQ(e.diagnostics[0].getColumnNo(), 7) << "0-based";
    EXPECT_EQ(e.diagnostics[0].getKind(), llvm::SourceMgr::DK_Error);
  });
}

TEST(IRParseErrorTest, ParsesFromASourceManagerBuffer) {
  llvm::SourceMgr sm;
  sm.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy("module @first {}", "a.ir"), llvm::SMLoc());
  unsigned id = sm.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy("module @second {\n  bogus\n}", "b.ir"),
                                      llvm::SMLoc());
  auto m = parseIR(sm, id);
  ASSERT_FALSE(bool(m));
  std::string text = llvm::toString(m.takeError());
  EXPECT_EQ(llvm::StringRef(text).split('\n').first.str(), "b.ir:2:3: error: unknown op 'bogus'");
}

} // namespace
