//===- tests/unit/frontend/ConfigTestFixture.h - settings read from plan text -*- C++ -*-===//
//
// The fixture of the settings tests (ConfigTest.cpp: train; ConfigParallelTest.cpp:
// cluster and parallel): a plan parsed from text, --set options applied, the
// settings interpreted, every diagnostic rendered one a line as
// `line:col: severity: message`.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_TESTS_UNIT_FRONTEND_CONFIGTESTFIXTURE_H
#define PLANC_TESTS_UNIT_FRONTEND_CONFIGTESTFIXTURE_H

#include "frontend/Config.h"
#include "frontend/Parser.h"
#include "support/Units.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <gtest/gtest.h>

namespace planc {
namespace {

class Collector : public DiagnosticConsumer {
public:
  void handle(const Diagnostic &d) override { diags.push_back(d); }
  std::vector<Diagnostic> diags;
};

class ConfigTest : public ::testing::Test {
protected:
  ConfigTest() : engine(sm) {
    auto c = std::make_unique<Collector>();
    collector = c.get();
    engine.setConsumer(std::move(c));
  }

  /// Parses `text` as test.plan, applies the --set options and interprets.
  PlanConfig interpret(llvm::StringRef text, std::vector<std::string> sets = {}, bool check = true) {
    unsigned id = sm.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, "test.plan"), llvm::SMLoc());
    file = parseFile(sm, id, engine);
    if (!file) {
      ADD_FAILURE() << "does not parse:\n" << text.str() << "\n" << messages();
      return PlanConfig();
    }
    const ast::ConfigBlock *blocks[3] = {nullptr, nullptr, nullptr};
    for (const auto &b : file->blocks) blocks[unsigned(b->kind)] = b.get();
    std::vector<SetOverride *> raw;
    for (const std::string &s : sets) {
      auto o = parseSetOverride(s, sm, engine);
      if (!o) {
        ADD_FAILURE() << "bad --set " << s << "\n" << messages();
        continue;
      }
      raw.push_back(o.get());
      overrides.push_back(std::move(o));
    }
    PlanConfig config = interpretConfig(blocks[0], blocks[1], blocks[2], raw, engine);
    if (check) checkConfig(config, engine);
    return config;
  }

  std::string position(llvm::SMLoc loc) {
    if (!loc.isValid()) return "";
    unsigned id = sm.FindBufferContainingLoc(loc);
    if (!id) return "?:";
    auto [line, col] = sm.getLineAndColumn(loc, id);
    llvm::StringRef name = sm.getMemoryBuffer(id)->getBufferIdentifier();
    std::string prefix = name == "test.plan" ? "" : name.str() + ":";
    return prefix + std::to_string(line) + ":" + std::to_string(col) + ": ";
  }

  void render(const Diagnostic &d, std::string &out) {
    out += position(d.loc) + severityName(d.severity) + ": " + d.message;
    for (const FixIt &f : d.fixits) out += " [fix-it: '" + f.replacement + "']";
    out += "\n";
  }

  /// Every diagnostic so far, notes included, one a line.
  std::string messages() {
    std::string out;
    for (const Diagnostic &d : collector->diags) {
      render(d, out);
      for (const Diagnostic &n : d.notes) render(n, out);
    }
    return out;
  }

  /// The source text a range covers.
  static std::string text(llvm::SMRange r) {
    if (!r.isValid()) return "<default>";
    return std::string(r.Start.getPointer(), r.End.getPointer());
  }

  llvm::SourceMgr sm;
  DiagnosticEngine engine;
  Collector *collector = nullptr;
  std::unique_ptr<ast::SourceFile> file;
  std::vector<std::unique_ptr<SetOverride>> overrides;
};

constexpr double kGiB = 1073741824.0;

} // namespace
} // namespace planc

#endif
