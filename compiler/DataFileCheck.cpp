//===- compiler/DataFileCheck.cpp - the data file, before anything runs ---===//

#include "compiler/DataFileCheck.h"

#include "runtime/Data.h"

#include "llvm/Support/FileSystem.h"

using namespace planc;

void planc::warnMissingDataFile(Compilation &c) {
  const DataConfig &data = c.getConfig().train.data;
  if (data.kind == DataKind::Synthetic || data.path.empty()) return;
  llvm::sys::fs::file_status status;
  const char *problem = nullptr;
  if (llvm::sys::fs::status(data.path, status)) problem = "does not exist";
  else if (llvm::sys::fs::is_directory(status)) problem = "is a directory";
  const char *kind = data.kind == DataKind::Text ? "text" : "token";
  if (problem) {
    c.getDiagnostics().report(DiagID::warn_data_file_missing, data.source.range) << kind << data.path << problem;
    return;
  }
  // What the executable refuses (runtime/Data.h): it reads the file whole.
  std::string refused;
  if (!llvm::sys::fs::is_regular_file(status)) refused = "is not a regular file, which the executable refuses";
  else if (status.getSize() > runtime::kMaxDataFileBytes)
    refused = "is " + std::to_string(status.getSize()) + " bytes, more than the executable's limit of " +
              std::to_string(runtime::kMaxDataFileBytes >> 30) + " GiB";
  if (!refused.empty())
    c.getDiagnostics().report(DiagID::warn_data_file_missing, data.source.range) << kind << data.path << refused;
}
