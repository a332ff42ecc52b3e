//===- compiler/Build.cpp - `planc build` ----------------------------------===//

#include "compiler/Build.h"
#include "compiler/Pipeline.h"

#include "support/Error.h"

using namespace planc;

namespace {

/// The main file's name, as the banner and the messages say it.
std::string mainFileName(Compilation &c) {
  return c.getMainBuffer() ? c.getSourceMgr().getMemoryBuffer(c.getMainBuffer())->getBufferIdentifier().str() : "";
}

} // namespace

llvm::Expected<std::string> planc::generateSource(Compilation &c, backend::TargetKind target,
                                                  std::optional<ir::DType> floatType, const std::string &sourceName) {
  CompileOptions options;
  options.stopAfter = CompileStage::CodeGenerated;
  options.target = target;
  options.floatType = floatType;
  options.sourceName = sourceName;
  auto compiled = compile(c, options);
  if (!compiled) return compiled.takeError();
  return std::move(compiled->code);
}

llvm::Error planc::buildExecutable(Compilation &c, const BuildOptions &options, llvm::raw_ostream &log) {
  if (options.output.empty()) return makeError("no output file; give one with -o");
  const backend::Target &target = backend::targetOf(options.target);
  if (!target.emitsCode()) return makeError(std::string("--target=") + target.name() + " builds no executable");
  const std::string sourceName = mainFileName(c);
  log << "planc build: generating C++ for " << sourceName << "\n";
  log.flush();
  auto source = generateSource(c, options.target, options.floatType, sourceName);
  if (!source) return source.takeError();
  return target.build(*source, sourceName, options, log);
}
