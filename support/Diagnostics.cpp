//===- support/Diagnostics.cpp - diagnostic engine and renderers --------===//

#include "support/Diagnostics.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>

using namespace planc;

namespace {
struct DiagInfo {
  const char *name;
  Severity severity;
  const char *format;
};
const DiagInfo diagTable[] = {
#define DIAG(ID, SEVERITY, TEXT) {#ID, Severity::SEVERITY, TEXT},
#include "support/Diagnostics.def"
#undef DIAG
};
} // namespace

llvm::StringRef planc::diagName(DiagID id) { return diagTable[unsigned(id)].name; }
Severity planc::defaultSeverity(DiagID id) { return diagTable[unsigned(id)].severity; }
llvm::StringRef planc::diagFormat(DiagID id) { return diagTable[unsigned(id)].format; }

const char *planc::severityName(Severity s) {
  switch (s) {
  case Severity::Error: return "error";
  case Severity::Warning: return "warning";
  case Severity::Note: return "note";
  case Severity::Remark: return "remark";
  }
  return "error";
}

namespace {

/// Arguments longer than kMaxArgumentBytes are quoted as an excerpt, their
/// first kArgumentHeadBytes and last kArgumentTailBytes around "...(N bytes in
/// all)...", cut at character boundaries: a 10 MB literal is not echoed whole.
constexpr size_t kMaxArgumentBytes = 1024, kArgumentHeadBytes = 640, kArgumentTailBytes = 160;

std::string excerpt(llvm::StringRef text) {
  if (text.size() <= kMaxArgumentBytes) return text.str();
  // Cut at a character boundary: never inside a UTF-8 sequence.
  size_t head = kArgumentHeadBytes, tail = text.size() - kArgumentTailBytes;
  while (head > 0 && (static_cast<unsigned char>(text[head]) & 0xC0) == 0x80) --head;
  while (tail < text.size() && (static_cast<unsigned char>(text[tail]) & 0xC0) == 0x80) ++tail;
  return (text.take_front(head) + "...(" + llvm::Twine(text.size()) + " bytes in all)..." + text.drop_front(tail))
      .str();
}

} // namespace

std::string planc::formatDiagnostic(llvm::StringRef format, llvm::ArrayRef<std::string> args) {
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    char c = format[i];
    if (c == '%' && i + 1 < format.size() && std::isdigit((unsigned char)format[i + 1])) {
      unsigned index = format[i + 1] - '0';
      out += index < args.size() ? excerpt(args[index]) : std::string("<?>");
      ++i;
      continue;
    }
    out += c;
  }
  return out;
}

std::string planc::closestMatch(llvm::StringRef name, llvm::ArrayRef<std::string> candidates) {
  // clang's rule of thumb: a typo changes at most about a third of the name.
  unsigned best = (name.size() + 2) / 3, bestDistance = best + 1;
  std::string bestName;
  for (const std::string &c : candidates) {
    if (c == name) continue;
    // The lengths alone bound the distance from below: a huge name is
    // compared with nothing (the edit distance costs the product of the two).
    if (c.size() > name.size() + best || name.size() > c.size() + best) continue;
    unsigned d = name.edit_distance(c, /*AllowReplacements=*/true, best);
    if (d <= best && d < bestDistance) {
      bestDistance = d;
      bestName = c;
    }
  }
  return bestName;
}

//===----------------------------------------------------------------------===//
// DiagBuilder
//===----------------------------------------------------------------------===//

DiagBuilder::DiagBuilder(DiagnosticEngine *engine, DiagID id, llvm::SMRange range)
    : engine(engine) {
  diag.id = id;
  diag.severity = defaultSeverity(id);
  diag.loc = range.Start;
  if (range.isValid() && range.Start != range.End) diag.ranges.push_back(range);
}

DiagBuilder::DiagBuilder(DiagBuilder &&other) noexcept
    : engine(other.engine), diag(std::move(other.diag)), args(std::move(other.args)),
      trailing(std::move(other.trailing)) {
  other.engine = nullptr;
}

DiagBuilder::~DiagBuilder() {
  if (!engine) return;
  diag.message = formatDiagnostic(diagFormat(diag.id), args);
  for (Diagnostic &n : trailing) diag.notes.push_back(std::move(n));
  engine->emit(std::move(diag));
}

DiagBuilder &DiagBuilder::operator<<(llvm::StringRef s) {
  args.push_back(s.str());
  return *this;
}
DiagBuilder &DiagBuilder::operator<<(int64_t v) {
  args.push_back(std::to_string(v));
  return *this;
}
DiagBuilder &DiagBuilder::operator<<(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  args.push_back(buf);
  return *this;
}

DiagBuilder &DiagBuilder::note(DiagID id, llvm::SMRange range, llvm::ArrayRef<std::string> noteArgs) {
  Diagnostic n;
  n.id = id;
  n.severity = Severity::Note;
  n.loc = range.Start;
  if (range.isValid() && range.Start != range.End) n.ranges.push_back(range);
  n.message = formatDiagnostic(diagFormat(id), noteArgs);
  diag.notes.push_back(std::move(n));
  return *this;
}

DiagBuilder &DiagBuilder::fixit(llvm::SMRange range, llvm::StringRef replacement) {
  // A fix-it belongs to the last note if there is one ("did you mean 'x'?"), as in clang.
  auto &target = diag.notes.empty() ? diag.fixits : diag.notes.back().fixits;
  target.push_back({range, replacement.str()});
  return *this;
}

DiagBuilder &DiagBuilder::suggest(llvm::StringRef name, llvm::ArrayRef<std::string> candidates,
                                  llvm::SMRange range, llvm::StringRef prefix) {
  std::string guess = closestMatch(name, candidates);
  if (guess.empty()) return *this;
  std::string shown = (prefix + guess).str();
  return note(DiagID::note_did_you_mean, range, {shown}).fixit(range, shown);
}

DiagBuilder &DiagBuilder::trailingNotes(const std::vector<Diagnostic> &notes) {
  trailing.insert(trailing.end(), notes.begin(), notes.end());
  return *this;
}

DiagBuilder &DiagBuilder::range(llvm::SMRange extra) {
  if (extra.isValid()) diag.ranges.push_back(extra);
  return *this;
}

//===----------------------------------------------------------------------===//
// DiagnosticEngine
//===----------------------------------------------------------------------===//

DiagnosticEngine::DiagnosticEngine(llvm::SourceMgr &sm) : sm(sm) {}
DiagnosticEngine::~DiagnosticEngine() = default;

void DiagnosticEngine::setConsumer(std::unique_ptr<DiagnosticConsumer> c) { consumer = std::move(c); }

DiagBuilder DiagnosticEngine::report(DiagID id, llvm::SMRange range) {
  return DiagBuilder(this, id, range);
}

void DiagnosticEngine::emit(Diagnostic &&diag) {
  if (stopped) return;
  if (deduplicate &&
      !seen.insert({unsigned(diag.id), diag.loc.getPointer(), diag.message}).second)
    return;
  if (diag.severity == Severity::Warning) {
    if (suppressWarnings) return;
    if (warningsAsErrors) diag.severity = Severity::Error;
  }
  // As clang: the error past the limit is replaced by one last message, and
  // only then do callers learn to stop.
  if (diag.severity == Severity::Error && errorLimit && numErrors >= errorLimit) {
    Diagnostic limit;
    limit.id = DiagID::err_too_many_errors;
    limit.severity = Severity::Error;
    limit.message = diagFormat(limit.id).str();
    if (consumer) consumer->handle(limit);
    stopped = true;
    return;
  }
  if (diag.severity == Severity::Error) ++numErrors;
  else if (diag.severity == Severity::Warning) ++numWarnings;
  if (consumer) consumer->handle(diag);
}

void DiagnosticEngine::finish() {
  if (consumer) consumer->finish();
}

//===----------------------------------------------------------------------===//
// Renderers
//===----------------------------------------------------------------------===//

namespace {
llvm::SourceMgr::DiagKind toKind(Severity s) {
  switch (s) {
  case Severity::Error: return llvm::SourceMgr::DK_Error;
  case Severity::Warning: return llvm::SourceMgr::DK_Warning;
  case Severity::Note: return llvm::SourceMgr::DK_Note;
  case Severity::Remark: return llvm::SourceMgr::DK_Remark;
  }
  return llvm::SourceMgr::DK_Error;
}

class TextConsumer : public DiagnosticConsumer {
public:
  TextConsumer(llvm::SourceMgr &sm, llvm::raw_ostream &os, bool colors)
      : sm(sm), os(os), colors(colors) {}
  void handle(const Diagnostic &d) override {
    print(d);
    for (const Diagnostic &n : d.notes) print(n);
  }

private:
  void print(const Diagnostic &d) {
    std::vector<llvm::SMFixIt> fixits;
    for (const FixIt &f : d.fixits) fixits.emplace_back(f.range, f.replacement);
    // SourceMgr draws ranges only on the caret's line, which is what clang does too.
    std::vector<llvm::SMRange> ranges;
    for (llvm::SMRange r : d.ranges)
      if (r.isValid()) ranges.push_back(r);
    if (!d.loc.isValid() || !sm.FindBufferContainingLoc(d.loc)) {
      llvm::SMDiagnostic plain("", toKind(d.severity), d.message);
      sm.PrintMessage(os, plain, colors);
      return;
    }
    llvm::SMDiagnostic full = sm.GetMessage(d.loc, toKind(d.severity), d.message, ranges, fixits);
    if (full.getLineContents().size() <= kMaxShownLine) {
      sm.PrintMessage(os, full, colors);
      return;
    }
    // A huge line (generated or hostile input) is shown as a window around the caret.
    llvm::StringRef line = full.getLineContents();
    size_t col = std::min<size_t>(full.getColumnNo(), line.size());
    size_t start = col > kMaxShownLine / 2 ? col - kMaxShownLine / 2 : 0;
    std::string window = (start ? "..." : "") + line.substr(start, kMaxShownLine).str() +
                         (start + kMaxShownLine < line.size() ? "..." : "");
    int shownCol = int(col - start + (start ? 3 : 0));
    // The header keeps the real column; only the caret moves into the window.
    os << full.getFilename() << ":" << full.getLineNo() << ":" << (full.getColumnNo() + 1) << ": ";
    llvm::SMDiagnostic clipped(sm, d.loc, "", 0, shownCol, full.getKind(), full.getMessage(), window, {}, {});
    clipped.print(nullptr, os, colors, /*ShowKindLabel=*/true);
  }
  static constexpr size_t kMaxShownLine = 200;
  llvm::SourceMgr &sm;
  llvm::raw_ostream &os;
  bool colors;
};

class JsonConsumer : public DiagnosticConsumer {
public:
  JsonConsumer(llvm::SourceMgr &sm, llvm::raw_ostream &os) : sm(sm), os(os) {}
  void handle(const Diagnostic &d) override {
    os << toJson(d).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    os.flush();
  }

private:
  nlohmann::json position(llvm::SMLoc loc) {
    if (!loc.isValid() || !sm.FindBufferContainingLoc(loc)) return nullptr;
    unsigned id = sm.FindBufferContainingLoc(loc);
    auto [line, col] = sm.getLineAndColumn(loc, id);
    return {{"file", sm.getMemoryBuffer(id)->getBufferIdentifier().str()},
            {"line", line},
            {"column", col}};
  }
  nlohmann::json toJson(const Diagnostic &d) {
    nlohmann::json j;
    j["severity"] = severityName(d.severity);
    j["id"] = diagName(d.id).str();
    j["message"] = d.message;
    j["location"] = position(d.loc);
    j["ranges"] = nlohmann::json::array();
    for (llvm::SMRange r : d.ranges)
      j["ranges"].push_back({{"start", position(r.Start)}, {"end", position(r.End)}});
    j["fixits"] = nlohmann::json::array();
    for (const FixIt &f : d.fixits)
      j["fixits"].push_back({{"start", position(f.range.Start)},
                             {"end", position(f.range.End)},
                             {"replacement", f.replacement}});
    if (d.severity != Severity::Note) {
      j["notes"] = nlohmann::json::array();
      for (const Diagnostic &n : d.notes) j["notes"].push_back(toJson(n));
    }
    return j;
  }
  llvm::SourceMgr &sm;
  llvm::raw_ostream &os;
};
} // namespace

std::unique_ptr<DiagnosticConsumer>
planc::makeTextConsumer(llvm::SourceMgr &sm, llvm::raw_ostream &os, bool colors) {
  return std::make_unique<TextConsumer>(sm, os, colors);
}

std::unique_ptr<DiagnosticConsumer> planc::makeJsonConsumer(llvm::SourceMgr &sm, llvm::raw_ostream &os) {
  return std::make_unique<JsonConsumer>(sm, os);
}
