//===- support/Diagnostics.h - clang-style diagnostics ---------*- C++ -*-===//
//
// Every message planc can print is declared once in Diagnostics.def. Code reports
// a diagnostic by id with a source range and arguments; a consumer renders it
// (clang-style text through llvm::SourceMgr, or JSON lines) or collects it (the
// `--verify` mode of the lit tests).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_SUPPORT_DIAGNOSTICS_H
#define PLANC_SUPPORT_DIAGNOSTICS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SMLoc.h"

#include <cstdint>
#include <memory>
#include <set>
#include <tuple>
#include <string>
#include <vector>

namespace llvm {
class SourceMgr;
class raw_ostream;
} // namespace llvm

namespace planc {

enum class DiagID : unsigned {
#define DIAG(ID, SEVERITY, TEXT) ID,
#include "support/Diagnostics.def"
#undef DIAG
  NumDiagnostics
};

enum class Severity { Error, Warning, Note, Remark };

struct FixIt {
  llvm::SMRange range;     // the text to replace (empty range: insert at start)
  std::string replacement;
};

struct Diagnostic {
  DiagID id;
  Severity severity;
  llvm::SMLoc loc;                 // the caret; invalid for a message with no place
  std::vector<llvm::SMRange> ranges;
  std::string message;
  std::vector<FixIt> fixits;
  std::vector<Diagnostic> notes;
};

/// The identifier of a diagnostic as written in Diagnostics.def ("err_unknown_name").
llvm::StringRef diagName(DiagID id);
Severity defaultSeverity(DiagID id);
llvm::StringRef diagFormat(DiagID id);
const char *severityName(Severity s);

/// Receives finished diagnostics (a top-level one with its notes).
class DiagnosticConsumer {
public:
  virtual ~DiagnosticConsumer() = default;
  virtual void handle(const Diagnostic &diag) = 0;
  virtual void finish() {}
};

/// clang-style text: `file:line:col: error: msg`, the line, the caret and ranges.
std::unique_ptr<DiagnosticConsumer>
makeTextConsumer(llvm::SourceMgr &sm, llvm::raw_ostream &os, bool colors);
/// One JSON object per line, for tools and editors.
std::unique_ptr<DiagnosticConsumer>
makeJsonConsumer(llvm::SourceMgr &sm, llvm::raw_ostream &os);

class DiagnosticEngine;

/// Collects arguments, notes and fix-its; the diagnostic is emitted when the
/// builder goes out of scope.
class DiagBuilder {
public:
  DiagBuilder(DiagnosticEngine *engine, DiagID id, llvm::SMRange range);
  DiagBuilder(DiagBuilder &&other) noexcept;
  DiagBuilder(const DiagBuilder &) = delete;
  ~DiagBuilder();

  DiagBuilder &operator<<(llvm::StringRef s);
  DiagBuilder &operator<<(const char *s) { return *this << llvm::StringRef(s); }
  DiagBuilder &operator<<(const std::string &s) { return *this << llvm::StringRef(s); }
  DiagBuilder &operator<<(int64_t v);
  DiagBuilder &operator<<(int v) { return *this << int64_t(v); }
  DiagBuilder &operator<<(unsigned v) { return *this << int64_t(v); }
  DiagBuilder &operator<<(uint64_t v) { return *this << std::to_string(v); }
  DiagBuilder &operator<<(double v);

  /// A note at a related place; arguments follow as a list.
  DiagBuilder &note(DiagID id, llvm::SMRange range, llvm::ArrayRef<std::string> args = {});
  /// A note that points at a place ("... here"): dropped when the place is
  /// unknown (a default setting, a predeclared name).
  DiagBuilder &noteAt(DiagID id, llvm::SMRange range, llvm::ArrayRef<std::string> args = {}) {
    return range.isValid() ? note(id, range, args) : *this;
  }
  DiagBuilder &fixit(llvm::SMRange range, llvm::StringRef replacement);
  /// "did you mean 'x'?" at `range` with a fix-it writing `prefix + x` there,
  /// when a candidate is close enough to `name` to be a misspelling of it.
  DiagBuilder &suggest(llvm::StringRef name, llvm::ArrayRef<std::string> candidates, llvm::SMRange range,
                       llvm::StringRef prefix = "");
  DiagBuilder &range(llvm::SMRange extra);
  /// Notes printed after every other note: the layer-call backtrace.
  DiagBuilder &trailingNotes(const std::vector<Diagnostic> &notes);

private:
  DiagnosticEngine *engine;
  Diagnostic diag;
  std::vector<std::string> args;
  std::vector<Diagnostic> trailing;
};

/// Owns the consumer and counts what was reported. Error recovery is the
/// callers' business; the engine only stops after too many errors.
class DiagnosticEngine {
public:
  explicit DiagnosticEngine(llvm::SourceMgr &sm);
  ~DiagnosticEngine();

  void setConsumer(std::unique_ptr<DiagnosticConsumer> consumer);
  DiagnosticConsumer *getConsumer() { return consumer.get(); }
  llvm::SourceMgr &getSourceMgr() { return sm; }

  DiagBuilder report(DiagID id, llvm::SMRange range);
  DiagBuilder report(DiagID id, llvm::SMLoc loc) { return report(id, llvm::SMRange(loc, loc)); }

  void setWarningsAsErrors(bool on) { warningsAsErrors = on; }
  void setSuppressWarnings(bool on) { suppressWarnings = on; }
  void setErrorLimit(unsigned n) { errorLimit = n; }
  /// Drops a diagnostic identical (id, place, text) to one already emitted:
  /// a layer called from many places reports a fault of its own body once.
  void setDeduplicate(bool on) { deduplicate = on; }

  unsigned getNumErrors() const { return numErrors; }
  unsigned getNumWarnings() const { return numWarnings; }
  bool hasErrors() const { return numErrors != 0; }
  /// True once the error limit was reached: callers may stop early.
  bool hitErrorLimit() const { return stopped; }
  void finish();

private:
  friend class DiagBuilder;
  void emit(Diagnostic &&diag);

  llvm::SourceMgr &sm;
  std::unique_ptr<DiagnosticConsumer> consumer;
  unsigned numErrors = 0, numWarnings = 0;
  unsigned errorLimit = 50;
  bool warningsAsErrors = false, suppressWarnings = false, stopped = false;
  bool deduplicate = true;
  std::set<std::tuple<unsigned, const char *, std::string>> seen;
};

/// Formats a message: %0, %1, ... are replaced by the arguments.
std::string formatDiagnostic(llvm::StringRef format, llvm::ArrayRef<std::string> args);

/// The candidate closest to `name` by edit distance, or "" when none is close enough
/// to be a plausible misspelling.
std::string closestMatch(llvm::StringRef name, llvm::ArrayRef<std::string> candidates);

} // namespace planc

#endif
