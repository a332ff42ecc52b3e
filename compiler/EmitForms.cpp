//===- compiler/EmitForms.cpp - the forms `planc emit` prints -------------===//

#include "compiler/EmitForms.h"

using namespace planc;

const std::vector<EmitFormInfo> &planc::emitForms() {
  static const std::vector<EmitFormInfo> table = {
      {EmitForm::Tokens, "tokens", false, false},
      {EmitForm::Ast, "ast", false, false},
      {EmitForm::Ir, "ir", false, false},
      {EmitForm::IrTrain, "ir-train", true, false},
      {EmitForm::IrPartitioned, "ir-partitioned", true, false},
      {EmitForm::Exec, "exec", true, true},
      {EmitForm::Kernels, "kernels", false, true},
      {EmitForm::KernelsCuda, "kernels-cuda", false, true},
      {EmitForm::Cpp, "cpp", false, false},
      {EmitForm::Comm, "comm", true, false},
      {EmitForm::Memory, "memory", false, false},
      {EmitForm::Fusion, "fusion", false, false},
      {EmitForm::Names, "names", false, false},
      {EmitForm::Mesh, "mesh", false, false},
      {EmitForm::Schedule, "schedule", false, false},
      {EmitForm::ScheduleSvg, "schedule-svg", false, false},
  };
  return table;
}

const EmitFormInfo &planc::emitFormInfo(EmitForm form) { return emitForms()[size_t(form)]; }

const char *planc::spelling(EmitForm form) { return emitFormInfo(form).spelling; }

std::optional<EmitForm> planc::parseEmitForm(llvm::StringRef text) {
  for (const EmitFormInfo &f : emitForms())
    if (text == f.spelling) return f.form;
  return std::nullopt;
}

std::string planc::emitFormList(bool (*which)(const EmitFormInfo &), llvm::StringRef last) {
  std::vector<const char *> kept;
  for (const EmitFormInfo &f : emitForms())
    if (which(f)) kept.push_back(f.spelling);
  std::string text;
  for (size_t i = 0; i < kept.size(); ++i) {
    if (i) text += i + 1 == kept.size() ? last.str() : std::string(", ");
    text += kept[i];
  }
  return text;
}
