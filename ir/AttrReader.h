//===- ir/AttrReader.h - an op's attributes, read with their kinds -*- C++ -*-===//
//
// The op table's type rules and reference kernels read attributes through
// this, and so do the code generators that print them into a kernel's call:
// one reading, one message for an attribute of the wrong kind.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_IR_ATTRREADER_H
#define PLANC_IR_ATTRREADER_H

#include "ir/IR.h"

#include <optional>
#include <string>
#include <vector>

namespace planc::ir {

/// Reads attributes for infer and eval alike. A missing required attribute or
/// one of the wrong kind records the first error (infer returns it); eval runs
/// only on ops that passed infer, so it can ignore errors. An integer is
/// accepted where a float is expected (no information is lost).
class AttrReader {
public:
  explicit AttrReader(const AttrMap &attrs) : attrs(attrs) {}
  int64_t getInt(llvm::StringRef name, std::optional<int64_t> otherwise = std::nullopt);
  double getFloat(llvm::StringRef name, std::optional<double> otherwise = std::nullopt);
  bool getBool(llvm::StringRef name, std::optional<bool> otherwise = std::nullopt);
  std::string getString(llvm::StringRef name, std::optional<std::string> otherwise = std::nullopt);
  std::vector<int64_t> getInts(llvm::StringRef name, std::optional<std::vector<int64_t>> otherwise = std::nullopt);
  /// A `dtype` string attribute.
  DType getDType(llvm::StringRef name, std::optional<DType> otherwise = std::nullopt);
  bool ok() const { return error.empty(); }
  std::string error;

private:
  const Attr *find(llvm::StringRef name, bool required);
  void fail(std::string message) {
    if (error.empty()) error = std::move(message);
  }
  const AttrMap &attrs;
};

} // namespace planc::ir

#endif
