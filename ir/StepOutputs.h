//===- ir/StepOutputs.h - the roles of a training step's outputs -*- C++ -*-===//
//
// The passes that build a training step give each output its role
// (ir::OutputRole) and make it here, so its name follows the one convention
// of the textual IR:
//
//   "loss"          Loss
//   "grad.<path>"   ParamGradient of the parameter at <path>
//   "new.<path>"    ParamUpdate of the trainable parameter at <path>, or
//                   StateUpdate of the state at <path> (a frozen parameter;
//                   an optimizer's is <param path>.<state>)
//   anything else   Other
//
// The text prints only names; the parser reads the roles back from them
// with rolesFromNames(), the one place that knows the convention backwards.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_IR_STEPOUTPUTS_H
#define PLANC_IR_STEPOUTPUTS_H

#include "ir/IR.h"

#include <string>

namespace planc::ir {

/// "grad.<path>": the name of a gradient (output and value).
std::string gradientName(llvm::StringRef path);
/// "new.<path>": the name of a value for the next step (output and value).
std::string updateName(llvm::StringRef path);

Output lossOutput(Value *v);
Output gradientOutput(llvm::StringRef paramPath, Value *v = nullptr);
Output paramUpdateOutput(llvm::StringRef paramPath, Value *v = nullptr);
/// `owner`: the path of the parameter the state is kept for, "" for state
/// of the whole step.
Output stateUpdateOutput(llvm::StringRef statePath, llvm::StringRef owner, Value *v = nullptr);

/// Gives every output of `m` the role its name gives it (the module's
/// parameters decide between a parameter's and a state's update).
void rolesFromNames(Module &m);

} // namespace planc::ir

#endif
