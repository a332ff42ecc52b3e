//===- frontend/Frontend.h - the frontend as one library call ---*- C++ -*-===//
//
// `Compilation` is what the driver and embedders use: it owns the source
// manager, the diagnostics, the parsed files (the main one and its imports,
// including the embedded standard library), the interpreted settings and the
// elaborated model.
//
//   planc::FrontendOptions opts;
//   planc::Compilation c(opts);
//   c.setDiagnosticOutput(llvm::errs(), /*json=*/false, /*colors=*/false);
//   bool ok = c.loadString("inline.plan", text) && c.check();
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_FRONTEND_FRONTEND_H
#define PLANC_FRONTEND_FRONTEND_H

#include "frontend/AST.h"
#include "frontend/Config.h"
#include "frontend/NameMaps.h"
#include "support/Diagnostics.h"
#include "frontend/Parser.h"
#include "frontend/Program.h"
#include "frontend/Sema.h"
#include "ir/IR.h"

#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace planc {

struct FrontendOptions {
  std::vector<std::string> setOverrides;  // "parallel.zero=2"
  std::vector<std::string> dimOverrides;  // "hidden=64": a model-level `let` replaced (shrinking a model)
  std::string stdlibDir;                  // empty: the library built into planc
  bool warningsAsErrors = false;
  bool suppressWarnings = false;
  /// The mesh is what the caller replaces (planc auto searches the
  /// cluster's meshes): a written mesh that does not cover the cluster is
  /// no error, and the batch and schedule are not checked against it.
  bool meshReplaced = false;
  unsigned errorLimit = 50;
  uint64_t maxFileBytes = 16ull << 20;    // larger files are rejected, not read
  ParseLimits limits;
};

class Compilation {
public:
  explicit Compilation(FrontendOptions options = {});
  ~Compilation();

  /// Diagnostics go to `os` as clang-style text (or JSON lines).
  void setDiagnosticOutput(llvm::raw_ostream &os, bool json, bool colors);
  /// Diagnostics are only collected (for --verify); see Verify.h.
  void setDiagnosticConsumer(std::unique_ptr<DiagnosticConsumer> consumer);

  /// Reads and parses the main file and, transitively, its imports.
  bool loadFile(llvm::StringRef path);
  bool loadString(llvm::StringRef name, llvm::StringRef text);
  /// Settings, overrides and model elaboration. Call after a successful load.
  bool check();

  llvm::SourceMgr &getSourceMgr() { return sm; }
  DiagnosticEngine &getDiagnostics() { return diags; }
  const Program &getProgram() const { return program; }
  const PlanConfig &getConfig() const { return config; }
  const ModelInfo &getModel() const { return model; }
  /// The name map the plan follows (`names = ...`), resolved; empty if none.
  const ResolvedNameMap &getNameMap() const { return nameMap; }
  const FrontendOptions &getOptions() const { return options; }
  /// The buffer id of the main file (0 if none was loaded).
  unsigned getMainBuffer() const { return mainBuffer; }
  /// Reads a file into the source manager, diagnosing unreadable, directory,
  /// empty, oversized and binary files. Returns 0 on failure.
  unsigned addFile(llvm::StringRef path, llvm::SMRange importedFrom);

private:
  bool loadImports(ast::SourceFile &file, std::vector<std::string> &stack);
  bool registerDecls(const ast::SourceFile &file, bool isMain);
  /// The --dim options into config.dimOverrides; false after an error.
  bool readDimOverrides();
  unsigned addBuffer(llvm::StringRef name, llvm::StringRef text, llvm::SMRange from);

  FrontendOptions options;
  llvm::SourceMgr sm;
  DiagnosticEngine diags;
  Program program;
  PlanConfig config;
  ModelInfo model;
  ResolvedNameMap nameMap;
  unsigned mainBuffer = 0;
  std::map<std::string, const ast::SourceFile *> loadedByKey;
  std::map<std::string, std::string> displayNames; // key -> the path as the user wrote it
  std::vector<std::unique_ptr<SetOverride>> overrides;
  bool loaded = false;
};

/// The standard library built into planc: module name ("gpt") -> text.
const std::map<std::string, std::string> &embeddedStdlib();

/// The checked model as an IR module (forward graph, parameters, inputs and
/// the `loss` output). Call after a successful check(); null if it failed.
/// (frontend/Lowering.h lowers without a Compilation.)
std::unique_ptr<ir::Module> lowerToIR(Compilation &c);
/// The same with `batch` for the model's `batch` dim instead of the
/// micro-batch: the partitioner lowers the global program of all dp ranks
/// (micro_batch x dp rows, split over dp again by sharding propagation).
std::unique_ptr<ir::Module> lowerToIR(Compilation &c, int64_t batch);

/// The one-screen summary `planc check` prints.
void printSummary(const Compilation &c, llvm::raw_ostream &os);
/// `planc emit --emit=ast`: a stable, indented dump of every parsed file.
void dumpAST(const ast::SourceFile &file, const llvm::SourceMgr &sm, llvm::raw_ostream &os);

} // namespace planc

#endif
