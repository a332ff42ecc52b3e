//===- frontend/Verify.cpp - matching diagnostics against expectations ---===//

#include "frontend/Verify.h"

#include "llvm/Support/SourceMgr.h"

#include <regex>

using namespace planc;

namespace {

struct Expectation {
  Severity severity;
  unsigned buffer;
  int line;         // -1: anywhere in the file
  std::string text;
  unsigned commentLine;
  bool matched = false;
};

const char *label(Severity s) {
  return s == Severity::Error ? "error" : s == Severity::Warning ? "warning" : s == Severity::Note ? "note" : "remark";
}

std::vector<Expectation> collect(llvm::SourceMgr &sm, llvm::raw_ostream &os, bool &ok) {
  static const std::regex directive(R"(expected-(error|warning|note|remark)(@(\*|[+-]?[0-9]+))?\s*\{\{(.*?)\}\})");
  std::vector<Expectation> out;
  for (unsigned id = 1; id <= sm.getNumBuffers(); ++id) {
    llvm::StringRef name = sm.getMemoryBuffer(id)->getBufferIdentifier();
    if (name.startswith("std/") || name.startswith("<--set")) continue;
    llvm::StringRef text = sm.getMemoryBuffer(id)->getBuffer();
    unsigned lineNo = 0;
    while (!text.empty()) {
      auto [line, rest] = text.split('\n');
      text = rest;
      ++lineNo;
      if (!line.contains("expected-")) continue;
      std::string s = line.str();
      bool any = false;
      for (std::sregex_iterator it(s.begin(), s.end(), directive), end; it != end; ++it) {
        any = true;
        const std::smatch &m = *it;
        Expectation e;
        std::string kind = m[1];
        e.severity = kind == "error" ? Severity::Error : kind == "warning" ? Severity::Warning
                     : kind == "note" ? Severity::Note : Severity::Remark;
        e.buffer = id;
        e.commentLine = lineNo;
        e.text = m[4];
        std::string where = m[3];
        if (where == "*") e.line = -1;
        else if (where.empty()) e.line = int(lineNo);
        else {
          // @+N and @-N are relative to the comment's line, @N is line N (as clang).
          bool relative = where[0] == '+' || where[0] == '-';
          int n = 0;
          if (llvm::StringRef(where[0] == '+' ? where.substr(1) : where).getAsInteger(10, n) || n < -1000000 ||
              n > 1000000) {
            os << name << ":" << lineNo << ": error: bad line in expected-* directive: @" << where << "\n";
            ok = false;
            continue;
          }
          e.line = relative ? int(lineNo) + n : n;
        }
        out.push_back(e);
      }
      if (!any && line.contains("expected-error") + line.contains("expected-warning") + line.contains("expected-note")) {
        os << name << ":" << lineNo << ": error: cannot parse expected-* directive (write expected-error {{text}})\n";
        ok = false;
      }
    }
  }
  return out;
}

} // namespace

bool planc::verifyDiagnostics(const std::vector<Diagnostic> &diagnostics, llvm::SourceMgr &sm, llvm::raw_ostream &os) {
  bool ok = true;
  std::vector<Expectation> expected = collect(sm, os, ok);
  std::vector<std::string> unexpected;
  auto match = [&](const Diagnostic &d) {
    unsigned buffer = d.loc.isValid() ? sm.FindBufferContainingLoc(d.loc) : 0;
    int line = buffer ? int(sm.getLineAndColumn(d.loc, buffer).first) : -1;
    for (Expectation &e : expected) {
      if (e.matched || e.severity != d.severity) continue;
      bool placeOk = e.line == -1 ? (buffer == 0 || buffer == e.buffer) : (buffer == e.buffer && line == e.line);
      if (placeOk && d.message.find(e.text) != std::string::npos) {
        e.matched = true;
        return;
      }
    }
    std::string where = buffer ? (sm.getMemoryBuffer(buffer)->getBufferIdentifier() + ":" + std::to_string(line)).str()
                               : std::string("(no location)");
    unexpected.push_back(std::string(label(d.severity)) + " at " + where + ": " + d.message);
  };
  for (const Diagnostic &d : diagnostics) {
    match(d);
    for (const Diagnostic &n : d.notes) match(n);
  }
  for (const Expectation &e : expected) {
    if (e.matched) continue;
    ok = false;
    os << sm.getMemoryBuffer(e.buffer)->getBufferIdentifier() << ":" << e.commentLine << ": error: expected "
       << label(e.severity) << " not seen";
    if (e.line >= 0) os << " on line " << e.line;
    os << ": " << e.text << "\n";
  }
  for (const std::string &u : unexpected) {
    ok = false;
    os << "error: unexpected " << u << "\n";
  }
  return ok;
}
