//===- passes/PassOptionTable.h - pass options from key=value text -*- C++ -*-===//
//
// plan-opt's `--pass-option key=value`: one table per options struct, each
// row a key, the parser of its value and a line of help. The tables are the
// only place a key is spelled; --help lists them.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_PASSES_PASSOPTIONTABLE_H
#define PLANC_PASSES_PASSOPTIONTABLE_H

#include "passes/PassPipelineOptions.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <string>

namespace planc {

/// One key of an options struct `Options`.
template <class Options> struct PassOptionRow {
  const char *key;
  std::string help; // one line: what it is, its values
  /// Sets the field from `value`; a bad value is an error naming the key.
  std::function<llvm::Error(Options &, llvm::StringRef value)> set;
  /// The field's value as `set` reads it (the default, for --help).
  std::function<std::string(const Options &)> show;
};

llvm::ArrayRef<PassOptionRow<TrainingOptions>> trainingOptionTable();
llvm::ArrayRef<PassOptionRow<PartitionOptions>> partitionOptionTable();

/// Success if some table has `key`, else an error that lists the keys.
llvm::Error checkPassOptionKey(llvm::StringRef key);

/// Sets the option `key` of `options` from `value`: an unknown key is
/// checkPassOptionKey's error; a bad value one that says what it must be.
llvm::Error setPassOption(PassPipelineOptions &options, llvm::StringRef key, llvm::StringRef value);

/// The value of option `key` as setPassOption reads it ("" for an unknown
/// key or an unset optional one).
std::string passOptionValue(const PassPipelineOptions &options, llvm::StringRef key);

/// Every key with its help line and its default, a table per struct, for --help.
void printPassOptionHelp(llvm::raw_ostream &os);

} // namespace planc

#endif
