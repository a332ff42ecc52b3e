//===- compiler/TooLargeToPlan.cpp - a dim too large to plan, at its place ===//

#include "compiler/TooLargeToPlan.h"

#include "compiler/PlanDiagnostics.h"
#include "frontend/AST.h"
#include "ir/PlanError.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SourceMgr.h"

#include <algorithm>
#include <optional>
#include <vector>

using namespace planc;

namespace {

/// The dims of a shape as ir::toString prints it: "[8, 1000000000, 14336]".
std::vector<int64_t> dimsOf(llvm::StringRef shape) {
  std::vector<int64_t> dims;
  llvm::SmallVector<llvm::StringRef, 8> parts;
  shape.trim("[] ").split(parts, ',', -1, false);
  for (llvm::StringRef p : parts) {
    int64_t d = 0;
    if (!p.trim().getAsInteger(10, d)) dims.push_back(d);
  }
  return dims;
}

bool contains(const std::vector<int64_t> &dims, int64_t v) {
  return std::find(dims.begin(), dims.end(), v) != dims.end();
}

/// Where a dim's value was written: a --dim option, or a model-level `let`.
struct DimPlace {
  std::string name;
  int64_t value = 0;
  llvm::SMRange range;
};

/// The largest of the tensor's dims that a --dim option or a model-level
/// integer `let` wrote, with its place; none when no such dim is found.
std::optional<DimPlace> blamedDim(Compilation &c, const std::vector<int64_t> &dims) {
  std::optional<DimPlace> best;
  auto consider = [&](DimPlace p) {
    if (p.value > 1 && contains(dims, p.value) && (!best || p.value > best->value)) best = std::move(p);
  };
  llvm::SourceMgr &sm = c.getSourceMgr();
  // A --dim option replaces the `let` it names, so it is the place to change.
  for (const auto &[name, value] : c.getConfig().dimOverrides)
    for (unsigned id = 1; id <= sm.getNumBuffers(); ++id) {
      const llvm::MemoryBuffer *buf = sm.getMemoryBuffer(id);
      llvm::StringRef text = buf->getBuffer();
      if (!buf->getBufferIdentifier().startswith("<--dim ") || text.split('=').first.trim() != name) continue;
      consider({name, value, {llvm::SMLoc::getFromPointer(text.begin()), llvm::SMLoc::getFromPointer(text.end())}});
    }
  if (best || !c.getProgram().model) return best;
  for (const auto &item : c.getProgram().model->body)
    if (auto *let = llvm::dyn_cast<ast::LetItem>(item.get()))
      for (const auto &b : let->bindings)
        if (auto *n = llvm::dyn_cast_or_null<ast::NumberExpr>(b.value.get()); n && n->isInteger)
          consider({b.name, n->intValue, {b.nameRange.Start, n->range.End}});
  return best;
}

} // namespace

llvm::Error planc::reportTooLargeToPlan(Compilation &c, llvm::Error e) {
  return llvm::handleErrors(std::move(e), [&](std::unique_ptr<ir::PlanError> p) -> llvm::Error {
    const ir::Finding &f = p->getFinding();
    if (f.id != DiagID::err_buffer_too_large || f.args.size() < 3) return llvm::Error(std::move(p));
    llvm::SMLoc at = findLocation(c.getSourceMgr(), f.loc);
    auto dim = blamedDim(c, dimsOf(f.args[0]));
    if (!dim) {
      reportFinding(c, f);
      return llvm::Error(std::move(p));
    }
    // "this makes a tensor of shape ..." at the dim; where the tensor is
    // made follows as a note naming its place.
    DiagBuilder diag = c.getDiagnostics().report(DiagID::err_buffer_too_large, dim->range);
    for (const std::string &arg : f.args) diag << arg;
    if (at.isValid()) diag.note(DiagID::note_declared_here, llvm::SMRange(at, at), {"the tensor of shape " + f.args[0]});
    return llvm::Error(std::move(p));
  });
}
