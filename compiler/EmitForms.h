//===- compiler/EmitForms.h - the forms `planc emit` prints -------*- C++ -*-===//
//
// The emit table: every --emit=<form> with its spelling and the options that
// go with it, in the order --help and the messages list them. The driver
// parses a form through it; compiler/Commands.h prints it.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_COMPILER_EMITFORMS_H
#define PLANC_COMPILER_EMITFORMS_H

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>
#include <vector>

namespace planc {

enum class EmitForm {
  Tokens, Ast, Ir, IrTrain, IrPartitioned, Exec, Kernels, KernelsCuda, Cpp, Comm, Memory, Fusion, Names, Mesh,
  Schedule, ScheduleSvg
};

struct EmitFormInfo {
  EmitForm form;
  const char *spelling;   // "ir-train"
  bool passOptions;       // --time-passes and --print-after-all go with it (it runs the passes)
  bool rankOption;        // --rank picks one rank's program
};

/// The table, in order.
const std::vector<EmitFormInfo> &emitForms();
const EmitFormInfo &emitFormInfo(EmitForm form);
const char *spelling(EmitForm form);
std::optional<EmitForm> parseEmitForm(llvm::StringRef text);

/// The spellings of the forms `which` keeps, joined as a sentence ends a
/// list: "a, b, c" + `last` + "d" (last: " and " or " or ").
std::string emitFormList(bool (*which)(const EmitFormInfo &), llvm::StringRef last);

} // namespace planc

#endif
