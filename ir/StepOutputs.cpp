//===- ir/StepOutputs.cpp - the roles of a training step's outputs -------===//

#include "ir/StepOutputs.h"

#include <map>

using namespace planc;
using namespace planc::ir;

namespace {

constexpr llvm::StringLiteral kLoss = "loss";
constexpr llvm::StringLiteral kGradient = "grad.";
constexpr llvm::StringLiteral kUpdate = "new.";

std::string pathOf(const Value &p) { return p.path.empty() ? p.name : p.path; }

Output make(std::string name, Value *v, OutputRole role, llvm::StringRef path, llvm::StringRef owner = "") {
  return Output{std::move(name), v, role, path.str(), owner.str()};
}

} // namespace

std::string ir::gradientName(llvm::StringRef path) { return kGradient.str() + path.str(); }

std::string ir::updateName(llvm::StringRef path) { return kUpdate.str() + path.str(); }

Output ir::lossOutput(Value *v) { return make(kLoss.str(), v, OutputRole::Loss, ""); }

Output ir::gradientOutput(llvm::StringRef paramPath, Value *v) {
  return make(gradientName(paramPath), v, OutputRole::ParamGradient, paramPath);
}

Output ir::paramUpdateOutput(llvm::StringRef paramPath, Value *v) {
  return make(updateName(paramPath), v, OutputRole::ParamUpdate, paramPath);
}

Output ir::stateUpdateOutput(llvm::StringRef statePath, llvm::StringRef owner, Value *v) {
  return make(updateName(statePath), v, OutputRole::StateUpdate, statePath, owner);
}

void ir::rolesFromNames(Module &m) {
  std::map<std::string, const Value *> paramAt;
  for (const Value *p : m.params) paramAt.emplace(pathOf(*p), p);
  for (Output &out : m.outputs) {
    llvm::StringRef n(out.name);
    if (n == kLoss) {
      out = lossOutput(out.value);
    } else if (n.consume_front(kGradient)) {
      out = gradientOutput(n, out.value);
    } else if (n.consume_front(kUpdate)) {
      auto p = paramAt.find(n.str());
      if (p != paramAt.end() && !p->second->frozen) {
        out = paramUpdateOutput(n, out.value);
        continue;
      }
      // An optimizer's state is a frozen parameter named <param>.<state>.
      size_t dot = n.rfind('.');
      llvm::StringRef owner = dot == llvm::StringRef::npos ? "" : n.take_front(dot);
      bool ofParam = p != paramAt.end() && !owner.empty() && paramAt.count(owner.str());
      out = stateUpdateOutput(n, ofParam ? owner : "", out.value);
    }
  }
}

ir::OutputIndex::OutputIndex(const Module &m) {
  for (const Output &out : m.outputs) byRoleAndPath.emplace(std::make_pair(out.role, out.path), &out);
}

const Output *ir::OutputIndex::find(OutputRole role, llvm::StringRef path) const {
  auto it = byRoleAndPath.find({role, path.str()});
  return it == byRoleAndPath.end() ? nullptr : it->second;
}
