//===- frontend/DeadStatements.h - statements lowering can leave out -*- C++ -*-===//
//
// A statement whose value nothing reads makes ops that the first pass
// (canonicalize) removes again. In a repeated layer that costs once per
// iteration: 3,000 dead statements in a 96-layer model were 288,000 ops
// lowered only to be deleted. Lowering runs after the checks, which reported
// whatever such a statement gets wrong, so it leaves the statement out.
//
// Dead here is judged from the text alone, conservatively: an assignment whose
// value is names, literals and operators (no call, which could declare
// parameters or draw dropout streams; no `as` name, no annotation), and none
// of whose names is read anywhere in the program, nor is `loss`.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_FRONTEND_DEADSTATEMENTS_H
#define PLANC_FRONTEND_DEADSTATEMENTS_H

#include "frontend/AST.h"
#include "frontend/Program.h"

#include <string>
#include <unordered_set>

namespace planc::sema {

class DeadStatements {
public:
  explicit DeadStatements(const Program &program);
  /// Whether lowering may leave `item` out.
  bool isDead(const ast::Item &item) const;

private:
  std::unordered_set<std::string> read; // every name an expression reads
};

} // namespace planc::sema

#endif
