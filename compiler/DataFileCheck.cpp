//===- compiler/DataFileCheck.cpp - the data file, before anything runs ---===//

#include "compiler/DataFileCheck.h"

#include "llvm/Support/FileSystem.h"

using namespace planc;

void planc::warnMissingDataFile(Compilation &c) {
  const DataConfig &data = c.getConfig().train.data;
  if (data.kind == DataKind::Synthetic || data.path.empty()) return;
  llvm::sys::fs::file_status status;
  const char *problem = nullptr;
  if (llvm::sys::fs::status(data.path, status)) problem = "does not exist";
  else if (llvm::sys::fs::is_directory(status)) problem = "is a directory";
  if (!problem) return;
  c.getDiagnostics().report(DiagID::warn_data_file_missing, data.source.range)
      << (data.kind == DataKind::Text ? "text" : "token") << data.path << problem;
}
