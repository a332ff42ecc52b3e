//===- exec/PlanParser.cpp - reading the execution plan's text -----------===//
//
// Recursive descent over the grammar of docs/exec.md, on the IR's lexer
// (with '#' and '->') and its parsers of types, attributes and locations
// (ir/TextParser.h). Each line's clauses come in the printer's order; the
// optional ones are left out by the printer when they hold their default.
//
//===----------------------------------------------------------------------===//

#include "exec/PlanParser.h"
#include "exec/PlanPrinter.h"
#include "exec/Groups.h"
#include "exec/PlanWords.h"
#include "ir/MeshLayout.h"
#include "ir/Parser.h"
#include "ir/TextParser.h"
#include "support/Plural.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"

#include <unordered_map>

#include <climits>

using namespace planc;
using namespace planc::exec;
using ir::Token;

namespace {

class PlanParser : public ir::TextParser {
public:
  PlanParser(const llvm::SourceMgr &sm, unsigned bufferId) : TextParser(sm, bufferId, /*execTokens=*/true) {}

  llvm::Expected<ExecutionPlan> run() {
    if (!parsePlan()) return llvm::make_error<ir::IRParseError>(std::move(diags));
    return std::move(plan);
  }

private:
  bool parsePlan();
  bool parseHeader();
  bool parseProgram();
  bool parseBuffer(RankProgram &p);
  bool parseStep(RankProgram &p);
  bool parseOutput(RankProgram &p);
  bool parseAnnotations(const Step &s);

  bool parseU64(uint64_t &value, const char *what);
  bool parseSmallInt(int &value, const char *what);
  bool parseNumbered(llvm::StringRef prefix, int64_t &value, const char *what);
  bool parseSlot(int &slot);
  bool parseBufferRef(int64_t &index);
  bool parseRefList(std::vector<int64_t> &refs);
  bool parseLiveEnd(int64_t &step);
  bool parseName(std::string &name, const char *what);
  bool parseString(std::string &s, const char *what);
  bool parseWordOf(llvm::StringRef &word, const char *what);

  ExecutionPlan plan;
  int64_t rank = -1; // the rank form's rank
  std::unordered_map<std::string, std::shared_ptr<BufferValue>> values; // the program's, by name
};

bool PlanParser::parsePlan() {
  if (!parseHeader()) return false;
  while (tok.isWord("program")) {
    if (rank >= 0) return error(tok, "the rank form holds one program, of its rank");
    Token programTok = tok;
    if (!parseProgram()) return false;
    if (rank >= 0 && plan.programs.size() > 1)
      return error(programTok, "a program of the rank form follows other programs");
  }
  if (!tok.is(Token::Eof)) return expected("'program' or end of input");
  return true;
}

bool PlanParser::parseHeader() {
  if (!expectWord("plan")) return false;
  if (!tok.is(Token::ModuleName)) return expected("the plan's name such as '@model'");
  plan.name = tok.text;
  consume();
  Token meshTok = tok;
  if (!expectWord("mesh") || !expect(Token::LBracket)) return false;
  bool seen[kNumMeshAxes] = {};
  if (!tok.is(Token::RBracket)) {
    do {
      Token axisTok = tok;
      std::optional<MeshAxis> axis = tok.is(Token::Word) ? parseMeshAxis(tok.spelling) : std::nullopt;
      if (!axis) return expected("a mesh axis (dp, pp, tp, cp or ep)");
      if (seen[unsigned(*axis)]) return error(axisTok, "mesh axis '" + axisTok.spelling + "' given twice");
      seen[unsigned(*axis)] = true;
      consume();
      if (!expect(Token::Equal)) return false;
      Token sizeTok = tok;
      int64_t size;
      if (!parseInt(size, "a mesh axis size")) return false;
      if (size < 1) return error(sizeTok, "a mesh axis has at least one rank");
      plan.mesh[unsigned(*axis)] = size;
    } while (consumeIf(Token::Comma));
  }
  if (!expect(Token::RBracket)) return false;
  if (!hasValidMesh(plan)) return error(meshTok, "the mesh has more than 4194304 (2^22) ranks");

  if (!expectWord("schedule")) return false;
  Token styleTok = tok;
  llvm::StringRef style;
  if (!parseWordOf(style, "a schedule style")) return false;
  std::optional<ScheduleStyle> s = parseKind<ScheduleStyle>(style);
  if (!s) return error(styleTok, "unknown schedule style '" + style + "' (" + kindList<ScheduleStyle>() + ")");
  plan.schedule.style = *s;
  if (!expectWord("stages") || !parseSmallInt(plan.schedule.stages, "the number of stages")) return false;
  if (!expectWord("micro_batches") || !parseSmallInt(plan.schedule.microBatches, "the number of micro-batches"))
    return false;
  if (!expectWord("chunks") || !parseSmallInt(plan.schedule.virtualStages, "the number of chunks")) return false;
  return expectWord("alignment") && parseU64(plan.alignment, "the alignment in bytes");
}

bool PlanParser::parseProgram() {
  consume(); // program
  RankProgram p;
  if (!expectWord("stage") || !parseSmallInt(p.stage, "the program's pipeline stage")) return false;
  if (!expectWord("ranks") || !parseIntList(p.ranks)) return false;
  if (tok.isWord("rank")) {
    consume();
    Token rankTok = tok;
    if (!parseInt(rank, "the rank the program is printed for")) return false;
    MeshLayout layout(plan.mesh);
    if (rank < 0 || rank >= layout.numRanks())
      return error(rankTok, "rank " + llvm::Twine(rank) + " is not in the mesh of " + counted(layout.numRanks(), "rank"));
    int64_t stage = layout.coordinates(rank)[unsigned(MeshAxis::PP)];
    if (stage != p.stage)
      return error(rankTok, "rank " + llvm::Twine(rank) + " runs stage " + llvm::Twine(stage) + ", not stage " +
                                llvm::Twine(p.stage));
  }
  if (!expectWord("arena") || !parseU64(p.arenaSize, "the arena's size in bytes")) return false;
  if (!expectWord("events") || !parseInt(p.events, "the number of events")) return false;
  if (!expect(Token::LBrace)) return false;
  while (!tok.is(Token::RBrace)) {
    bool ok;
    if (tok.is(Token::Hash)) ok = parseBuffer(p);
    else if (tok.is(Token::Integer)) ok = parseStep(p);
    else if (tok.isWord("output")) ok = parseOutput(p);
    else ok = expected("a buffer '#<i>', a step '<i>:', an 'output' or '}'");
    if (!ok) return false;
  }
  consume();
  plan.programs.push_back(std::move(p));
  return true;
}

bool PlanParser::parseBuffer(RankProgram &p) {
  consume(); // #
  Token indexTok = tok;
  int64_t index;
  if (!parseInt(index, "the buffer's index")) return false;
  if (index != int64_t(p.buffers.size()))
    return error(indexTok, "expected buffer #" + llvm::Twine(p.buffers.size()) + " here, buffers are numbered in order");
  Buffer b;
  BufferValue held;
  if (!parseName(b.name, "the buffer's name such as '%x.mb0'")) return false;
  if (!expect(Token::Colon) || !parseType(held.type)) return false;
  if (!expectWord("local") || !parseIntList(held.local)) return false;
  if (!parseSlot(b.slot)) return false;
  if (!expectWord("at") || !parseU64(b.offset, "the buffer's offset in bytes")) return false;
  if (!expectWord("size") || !parseU64(b.size, "the buffer's size in bytes")) return false;
  Token categoryTok = tok;
  llvm::StringRef word;
  if (!parseWordOf(word, "a memory category")) return false;
  std::optional<memory::Category> category = parseCategoryWord(word);
  if (!category) return error(categoryTok, "unknown memory category '" + word + "' (" + categoryWords() + ")");
  b.category = *category;
  Token roleTok = tok;
  if (!parseWordOf(word, "a buffer role")) return false;
  std::optional<BufferRole> role = parseBufferRoleWord(word);
  if (!role) return error(roleTok, "unknown buffer role '" + word + "' (param, input or internal)");
  b.role = *role;
  // The value is left out where it is the name without the slot's suffix.
  held.name = b.name;
  std::string suffix = ".mb" + std::to_string(b.slot);
  if (b.slot >= 0 && llvm::StringRef(b.name).endswith(suffix)) held.name.resize(b.name.size() - suffix.size());
  if (tok.isWord("value")) {
    consume();
    if (!parseName(held.name, "the value's name such as '%x'")) return false;
  }
  // The buffers of one value share what they hold, as the builder's do.
  if (index == 0) values.clear();
  std::shared_ptr<BufferValue> &shared = values[held.name];
  if (!shared || !(*shared == held)) shared = std::make_shared<BufferValue>(std::move(held));
  b.setValue(shared);
  if (tok.isWord("path")) {
    consume();
    if (!parseString(b.path, "a quoted path")) return false;
  }
  if (tok.isWord("alias")) {
    consume();
    if (!parseBufferRef(b.aliasOf)) return false;
  }
  if (!expectWord("live") || !expect(Token::LBracket) || !parseLiveEnd(b.firstStep) || !expect(Token::Comma) ||
      !parseLiveEnd(b.lastStep) || !expect(Token::RBracket))
    return false;
  p.buffers.push_back(std::move(b));
  return true;
}

bool PlanParser::parseStep(RankProgram &p) {
  Token indexTok = tok;
  int64_t index;
  if (!parseInt(index, "the step's index")) return false;
  if (index != int64_t(p.steps.size()))
    return error(indexTok, "expected step " + llvm::Twine(p.steps.size()) + " here, steps are numbered in order");
  if (!expect(Token::Colon)) return false;
  Step s;
  Token wordTok = tok;
  llvm::StringRef word;
  if (!parseWordOf(word, "the step's work (forward, backward, weight_grad or optimizer)")) return false;
  std::optional<ir::Work> work = parseWorkWord(word);
  if (!work) return error(wordTok, "unknown work '" + word + "' (forward, backward, weight_grad or optimizer)");
  s.work = *work;
  if (!parseSlot(s.microBatch)) return false;
  Token chunkTok = tok;
  int64_t chunk;
  if (!parseNumbered("c", chunk, "the model chunk such as 'c0'")) return false;
  if (chunk < INT_MIN || chunk > INT_MAX) return error(chunkTok, "the chunk does not fit in 32 bits");
  s.chunk = int(chunk);
  wordTok = tok;
  if (!parseWordOf(word, "a stream (compute or comm)")) return false;
  std::optional<Stream> stream = parseStreamWord(word);
  if (!stream) return error(wordTok, "unknown stream '" + word + "' (compute or comm)");
  s.stream = *stream;
  Token opTok = tok;
  if (!tok.is(Token::Word)) return expected("an op name");
  std::optional<ir::OpKind> kind = ir::parseOpKind(tok.spelling);
  if (!kind) {
    std::vector<llvm::StringRef> names;
    for (unsigned k = 0; k < unsigned(ir::OpKind::NumOps); ++k) names.push_back(ir::spelling(ir::OpKind(k)));
    return error(opTok, "unknown op '" + tok.spelling + "'" + ir::didYouMean(ir::closestMatch(tok.spelling, names)));
  }
  s.kind = *kind;
  consume();
  if (!parseRefList(s.inputs) || !expect(Token::Arrow) || !parseRefList(s.outputs)) return false;
  if (tok.is(Token::LBrace)) {
    ir::AttrMap attrs;
    if (!parseAttrDict(attrs)) return false;
    s.attrs = std::move(attrs);
  }
  if (tok.isWord("accumulate")) {
    consume();
    std::vector<int64_t> which;
    Token at = tok;
    if (!parseIntList(which)) return false;
    s.accumulate.assign(s.outputs.size(), false);
    for (int64_t k : which) {
      if (k < 0 || size_t(k) >= s.outputs.size())
        return error(at, "accumulate names output " + std::to_string(k) + ", but the step has " +
                             std::to_string(s.outputs.size()));
      s.accumulate[size_t(k)] = true;
    }
  }
  if (tok.isWord("event")) {
    consume();
    if (!parseNumbered("e", s.event, "an event such as 'e0'")) return false;
  }
  if (tok.isWord("waits")) {
    consume();
    if (!expect(Token::LBracket)) return false;
    if (!tok.is(Token::RBracket)) {
      do {
        int64_t e;
        if (!parseNumbered("e", e, "an event such as 'e0'")) return false;
        s.waits.push_back(e);
      } while (consumeIf(Token::Comma));
    }
    if (!expect(Token::RBracket)) return false;
  }
  if (!parseAnnotations(s)) return false;
  if (tok.isWord("loc") && !parseLocation(s.loc)) return false;
  if (tok.isWord("path")) {
    consume();
    if (!parseString(s.path, "a quoted path")) return false;
  }
  p.steps.push_back(std::move(s));
  return true;
}

/// The rank form's `group [..]` and `peer r`, checked against exec/Groups.h.
bool PlanParser::parseAnnotations(const Step &s) {
  bool talks = isCommunicationStep(s.kind);
  if (!tok.isWord("group")) {
    if (rank >= 0 && talks) return expected("the step's 'group [ranks]' (the rank form annotates communication)");
    return true;
  }
  if (rank < 0) return error(tok, "'group' annotates the rank form only ('rank' in the program line)");
  if (!talks) return error(tok, "'group' annotates communication steps only");
  consume();
  Token listTok = tok;
  std::vector<int64_t> group;
  if (!parseIntList(group)) return false;
  std::vector<int64_t> expectedGroup = groupOf(plan, s, rank);
  if (group != expectedGroup) {
    std::string want;
    for (int64_t r : expectedGroup) want += (want.empty() ? "" : ", ") + std::to_string(r);
    return error(listTok, "the group of rank " + llvm::Twine(rank) + " for this step is [" + want + "]" +
                              (axisOf(s) ? "" : " (the step names no mesh axis)"));
  }
  if (s.kind != ir::OpKind::Send && s.kind != ir::OpKind::Recv) return true;
  if (!expectWord("peer")) return false;
  Token peerTok = tok;
  int64_t peer;
  if (!parseInt(peer, "the peer rank")) return false;
  int64_t expectedPeer = peerOf(plan, s, rank);
  if (peer != expectedPeer)
    return error(peerTok, "the peer of rank " + llvm::Twine(rank) + " for this step is " + llvm::Twine(expectedPeer) +
                              " ((c + peer_offset) mod n along its axis)");
  return true;
}

bool PlanParser::parseOutput(RankProgram &p) {
  consume(); // output
  OutputBinding o;
  if (!parseString(o.name, "the output's name as a quoted string")) return false;
  Token roleTok = tok;
  llvm::StringRef word;
  if (!parseWordOf(word, "an output role")) return false;
  std::optional<ir::OutputRole> role = parseOutputRoleWord(word);
  if (!role) return error(roleTok, "unknown output role '" + word + "' (" + outputRoleWords() + ")");
  o.role = *role;
  if (tok.isWord("path")) {
    consume();
    if (!parseString(o.path, "a quoted path")) return false;
  }
  if (tok.isWord("owner")) {
    consume();
    if (!parseString(o.owner, "the quoted path of the parameter the state is kept for")) return false;
  }
  if (!parseBufferRef(o.buffer)) return false;
  p.outputs.push_back(std::move(o));
  return true;
}

// ---- pieces

bool PlanParser::parseU64(uint64_t &value, const char *what) {
  if (!tok.is(Token::Integer)) return expected(what);
  if (tok.spelling.startswith("-")) return error(tok, llvm::Twine(what) + " is not negative");
  if (tok.spelling.getAsInteger(10, value)) return error(tok, "integer '" + tok.spelling + "' does not fit in 64 bits");
  consume();
  return true;
}

bool PlanParser::parseSmallInt(int &value, const char *what) {
  Token at = tok;
  int64_t v;
  if (!parseInt(v, what)) return false;
  if (v < INT_MIN || v > INT_MAX) return error(at, "integer '" + at.spelling + "' does not fit in 32 bits");
  value = int(v);
  return true;
}

/// `<prefix><n>` as one word (`e3`), or the prefix and a negative integer
/// right after it (`e-2`), as the printer spells any number.
bool PlanParser::parseNumbered(llvm::StringRef prefix, int64_t &value, const char *what) {
  if (!tok.is(Token::Word) || !tok.spelling.startswith(prefix)) return expected(what);
  Token at = tok;
  llvm::StringRef digits = tok.spelling.drop_front(prefix.size());
  if (digits.empty()) {
    consume();
    if (!tok.is(Token::Integer) || tok.spelling.data() != at.spelling.end())
      return error(at, "expected " + llvm::Twine(what) + ", found '" + at.spelling + "'");
    return parseInt(value, what);
  }
  uint64_t magnitude;
  if (!llvm::all_of(digits, llvm::isDigit)) return error(at, "expected " + llvm::Twine(what) + ", found '" + at.spelling + "'");
  if (digits.getAsInteger(10, magnitude) || magnitude > uint64_t(INT64_MAX))
    return error(at, "'" + at.spelling + "' does not fit in 64 bits");
  value = int64_t(magnitude);
  consume();
  return true;
}

bool PlanParser::parseSlot(int &slot) {
  if (tok.isWord("once")) {
    slot = -1;
    consume();
    return true;
  }
  Token at = tok;
  int64_t j;
  if (!parseNumbered("mb", j, "a micro-batch 'mb<j>' or 'once'")) return false;
  if (j < INT_MIN || j > INT_MAX) return error(at, "the micro-batch does not fit in 32 bits");
  slot = int(j);
  return true;
}

bool PlanParser::parseBufferRef(int64_t &index) {
  if (tok.isWord("none")) {
    index = -1;
    consume();
    return true;
  }
  if (!tok.is(Token::Hash)) return expected("a buffer such as '#3' or 'none'");
  consume();
  return parseInt(index, "the buffer's index after '#'");
}

bool PlanParser::parseRefList(std::vector<int64_t> &refs) {
  if (!expect(Token::LParen)) return false;
  if (!tok.is(Token::RParen)) {
    do {
      int64_t r;
      if (!parseBufferRef(r)) return false;
      refs.push_back(r);
    } while (consumeIf(Token::Comma));
  }
  return expect(Token::RParen);
}



bool PlanParser::parseLiveEnd(int64_t &step) {
  if (tok.isWord("before") || tok.isWord("after")) {
    step = tok.isWord("before") ? kBeforeSteps : kAfterSteps;
    consume();
    return true;
  }
  if (!tok.is(Token::Integer)) return expected("a step index, 'before' or 'after'");
  return parseInt(step, "a step index");
}

bool PlanParser::parseName(std::string &name, const char *what) {
  if (!tok.is(Token::ValueName)) return expected(what);
  name = tok.text;
  consume();
  return true;
}

bool PlanParser::parseString(std::string &s, const char *what) {
  if (!tok.is(Token::String)) return expected(what);
  s = tok.text;
  consume();
  return true;
}

/// A word, joined with the words and integers written right against it: the
/// schedule style `1f1b` lexes as an integer and a word.
bool PlanParser::parseWordOf(llvm::StringRef &word, const char *what) {
  if (!tok.is(Token::Word) && !tok.is(Token::Integer)) return expected(what);
  const char *begin = tok.spelling.begin(), *end = tok.spelling.end();
  consume();
  while ((tok.is(Token::Word) || tok.is(Token::Integer)) && tok.spelling.begin() == end) {
    end = tok.spelling.end();
    consume();
  }
  word = llvm::StringRef(begin, size_t(end - begin));
  return true;
}

} // namespace

llvm::Expected<ExecutionPlan> exec::parsePlan(llvm::StringRef text, llvm::StringRef fileName) {
  llvm::SourceMgr sm;
  unsigned id = sm.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, fileName), llvm::SMLoc());
  return PlanParser(sm, id).run();
}

std::string exec::roundTripProblem(const ExecutionPlan &plan) {
  const std::string text = toText(plan);
  auto parsed = parsePlan(text, "<exec>");
  if (!parsed) return "the execution plan's text does not parse back: " + llvm::toString(parsed.takeError());
  const std::string again = toText(*parsed);
  if (again != text) {
    size_t at = 0, line = 1;
    while (at < text.size() && at < again.size() && text[at] == again[at]) line += text[at++] == '\n';
    auto lineAt = [&](const std::string &t) {
      size_t begin = t.rfind('\n', at == 0 ? 0 : at - 1);
      begin = begin == std::string::npos || at == 0 ? 0 : begin + 1;
      return t.substr(begin, t.find('\n', begin) - begin);
    };
    return "the execution plan's text parses back to another text: line " + std::to_string(line) + " '" +
           lineAt(text) + "' became '" + lineAt(again) + "'";
  }
  if (!(*parsed == plan)) return "the execution plan's text parses back to another plan with the same text";
  return "";
}
