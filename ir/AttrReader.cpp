//===- ir/AttrReader.cpp - an op's attributes, read with their kinds ------===//

#include "ir/AttrReader.h"

using namespace planc;
using namespace planc::ir;

const Attr *AttrReader::find(llvm::StringRef name, bool required) {
  auto it = attrs.find(name.str());
  if (it != attrs.end()) return &it->second;
  if (required) fail("missing attribute '" + name.str() + "'");
  return nullptr;
}

int64_t AttrReader::getInt(llvm::StringRef name, std::optional<int64_t> otherwise) {
  const Attr *a = find(name, !otherwise);
  if (!a) return otherwise.value_or(0);
  if (auto *i = std::get_if<int64_t>(a)) return *i;
  fail("attribute '" + name.str() + "' must be an integer");
  return otherwise.value_or(0);
}

double AttrReader::getFloat(llvm::StringRef name, std::optional<double> otherwise) {
  const Attr *a = find(name, !otherwise);
  if (!a) return otherwise.value_or(0);
  if (auto *d = std::get_if<double>(a)) return *d;
  if (auto *i = std::get_if<int64_t>(a)) return double(*i);
  fail("attribute '" + name.str() + "' must be a number");
  return otherwise.value_or(0);
}

bool AttrReader::getBool(llvm::StringRef name, std::optional<bool> otherwise) {
  const Attr *a = find(name, !otherwise);
  if (!a) return otherwise.value_or(false);
  if (auto *b = std::get_if<bool>(a)) return *b;
  fail("attribute '" + name.str() + "' must be a boolean");
  return otherwise.value_or(false);
}

std::string AttrReader::getString(llvm::StringRef name, std::optional<std::string> otherwise) {
  const Attr *a = find(name, !otherwise);
  if (!a) return otherwise.value_or("");
  if (auto *s = std::get_if<std::string>(a)) return *s;
  fail("attribute '" + name.str() + "' must be a string");
  return otherwise.value_or("");
}

std::vector<int64_t> AttrReader::getInts(llvm::StringRef name, std::optional<std::vector<int64_t>> otherwise) {
  const Attr *a = find(name, !otherwise);
  if (!a) return otherwise.value_or(std::vector<int64_t>{});
  if (auto *v = std::get_if<std::vector<int64_t>>(a)) return *v;
  fail("attribute '" + name.str() + "' must be a list of integers");
  return otherwise.value_or(std::vector<int64_t>{});
}

DType AttrReader::getDType(llvm::StringRef name, std::optional<DType> otherwise) {
  std::optional<std::string> spelled;
  if (otherwise) spelled = spelling(*otherwise);
  std::string s = getString(name, spelled);
  if (!ok()) return DType::F32;
  if (auto t = parseDType(s)) return *t;
  fail("attribute '" + name.str() + "' names no dtype: '" + s + "'");
  return DType::F32;
}
