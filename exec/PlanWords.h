//===- exec/PlanWords.h - the words of the plan's text form -----*- C++ -*-===//
//
// One table per enum the text form of exec/PlanPrinter.h spells, read back
// by exec/PlanParser.cpp: each word is a single lexer word (no spaces), so
// a printed plan parses with the IR's lexer.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_EXEC_PLANWORDS_H
#define PLANC_EXEC_PLANWORDS_H

#include "exec/ExecutionPlan.h"

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace planc::exec {

/// memory::spelling with '_' for ' ': "optimizer_state".
llvm::StringRef categoryWord(memory::Category c);
std::optional<memory::Category> parseCategoryWord(llvm::StringRef word);

/// "other", "loss", "param_gradient", "param_update", "state_update".
const char *outputRoleWord(ir::OutputRole r);
std::optional<ir::OutputRole> parseOutputRoleWord(llvm::StringRef word);

std::optional<ir::Work> parseWorkWord(llvm::StringRef word);
std::optional<BufferRole> parseBufferRoleWord(llvm::StringRef word);
std::optional<Stream> parseStreamWord(llvm::StringRef word);

/// The lists for "expected ..." messages.
std::string categoryWords();
std::string outputRoleWords();

} // namespace planc::exec

#endif
