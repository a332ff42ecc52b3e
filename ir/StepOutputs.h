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

#include <map>
#include <string>
#include <utility>

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

/// The outputs of a module by role and path, for a caller that asks for
/// those of many parameters: Module::outputFor scans every output, so asking
/// it for each parameter's gradient costs time quadratic in the model (10 %
/// of `planc check` at 4,800 layers). The first output of a role and path
/// wins, as with outputFor. It points into `m.outputs`: valid until they
/// change.
class OutputIndex {
public:
  explicit OutputIndex(const Module &m);
  const Output *find(OutputRole role, llvm::StringRef path) const;

private:
  std::map<std::pair<OutputRole, std::string>, const Output *> byRoleAndPath;
};

} // namespace planc::ir

#endif
