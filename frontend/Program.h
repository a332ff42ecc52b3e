//===- frontend/Program.h - the parsed files of one compilation -*- C++ -*-===//
//
// What parsing and import resolution hand to Sema and lowering: every file
// of the plan and the declarations registered from them. Compilation
// (frontend/Frontend.h) owns one; Sema and lowering only read it.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_FRONTEND_PROGRAM_H
#define PLANC_FRONTEND_PROGRAM_H

#include "frontend/AST.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace planc {

/// All parsed files of one compilation; layer names are global across them.
class Program {
public:
  const ast::SourceFile *mainFile = nullptr;
  std::vector<std::unique_ptr<ast::SourceFile>> files;   // main file first
  std::map<std::string, const ast::LayerDecl *> layers;
  std::map<std::string, const ast::NamesDecl *> nameMaps; // `names` declarations, of every file
  const ast::ModelDecl *model = nullptr;
  const ast::ConfigBlock *train = nullptr, *cluster = nullptr, *parallel = nullptr;
};

} // namespace planc

#endif
