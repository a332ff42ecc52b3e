//===- analysis/SavedActivations.cpp - what the backward pass keeps -------===//

#include "analysis/SavedActivations.h"
#include "ir/Placement.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"

#include <unordered_set>

using namespace planc;
using namespace planc::ir;

bool planc::isForwardOp(const Op &op) { return phaseOf(op) == Phase::Forward; }

std::vector<const Value *> planc::savedActivations(const Module &m) {
  std::unordered_set<const Value *> read;
  for (const auto &op : m.ops)
    if (phaseOf(*op) == Phase::Backward)
      for (const Value *v : op->operands) read.insert(v);
  std::vector<const Value *> saved;
  for (const auto &op : m.ops)
    if (isForwardOp(*op))
      for (const Value *r : op->results)
        if (read.count(r)) saved.push_back(r);
  return saved;
}

std::string planc::repeatedLayerOf(llvm::StringRef path) {
  llvm::SmallVector<llvm::StringRef, 8> parts;
  path.split(parts, '.');
  for (size_t i = 1; i < parts.size(); ++i)
    if (!parts[i].empty() && llvm::all_of(parts[i], llvm::isDigit))
      return path.substr(0, parts[i].end() - path.begin()).str();
  return "";
}
