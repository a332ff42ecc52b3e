//===- ir/ops/OpSupport.cpp - what the op families share ------------------===//

#include "ir/ops/OpSupport.h"
#include "support/Plural.h"

#include <numeric>

using namespace planc;
using namespace planc::ir;

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// Operand checks
//===----------------------------------------------------------------------===//

std::string ir::checkArity(llvm::ArrayRef<TensorType> operands, size_t n) {
  if (operands.size() == n) return "";
  return "expects " + counted(int64_t(n), "operand") + ", got " + std::to_string(operands.size());
}

std::string ir::checkFloat(llvm::ArrayRef<TensorType> operands, size_t i) {
  if (isFloat(operands[i].dtype)) return "";
  return "operand " + std::to_string(i) + " must be floating-point, got " + toString(operands[i]);
}

std::string ir::checkSameDType(llvm::ArrayRef<TensorType> operands, size_t i, size_t j) {
  if (operands[i].dtype == operands[j].dtype) return "";
  return "operands " + std::to_string(i) + " and " + std::to_string(j) + " must have the same dtype, got " +
         toString(operands[i]) + " and " + toString(operands[j]);
}

//===----------------------------------------------------------------------===//
// Shapes
//===----------------------------------------------------------------------===//

std::optional<int64_t> ir::normalizeDim(int64_t dim, size_t rank) {
  int64_t r = int64_t(rank);
  if (dim < -r || dim >= r) return std::nullopt;
  return dim < 0 ? dim + r : dim;
}

std::optional<Shape> ir::broadcastShapes(const Shape &a, const Shape &b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Aligned at the right: dim i of the result is dim i - (rank - size) of each operand.
    int64_t da = i + a.size() >= rank ? a[i + a.size() - rank] : 1;
    int64_t db = i + b.size() >= rank ? b[i + b.size() - rank] : 1;
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

bool ir::broadcastsTo(const Shape &from, const Shape &to) {
  if (from.size() > to.size()) return false;
  size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[lead + i]) return false;
  return true;
}

int64_t ir::product(const Shape &s, size_t begin, size_t end) {
  end = std::min(end, s.size());
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= s[i];
  return n;
}

std::vector<int64_t> ir::rowMajorStrides(const Shape &s) {
  std::vector<int64_t> strides(s.size());
  int64_t stride = 1;
  for (size_t i = s.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= s[i];
  }
  return strides;
}

std::vector<int64_t> ir::broadcastStrides(const Shape &from, const Shape &to) {
  std::vector<int64_t> own = rowMajorStrides(from);
  std::vector<int64_t> strides(to.size(), 0);
  size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i) strides[lead + i] = from[i] == 1 && to[lead + i] != 1 ? 0 : own[i];
  return strides;
}

IndexWalker::IndexWalker(Shape s, std::vector<std::vector<int64_t>> st)
    : shape(std::move(s)), strides(std::move(st)), index(shape.size(), 0), offsets(strides.size(), 0),
      total(product(shape)) {}

bool IndexWalker::next() {
  // Odometer: bump the last dim; on wrap-around, rewind it and carry left.
  for (size_t d = shape.size(); d-- > 0;) {
    if (++index[d] < shape[d]) {
      for (size_t k = 0; k < strides.size(); ++k) offsets[k] += strides[k][d];
      return true;
    }
    for (size_t k = 0; k < strides.size(); ++k) offsets[k] -= strides[k][d] * (shape[d] - 1);
    index[d] = 0;
  }
  return false;
}

std::string ir::rowsOfLastDim(llvm::ArrayRef<Shape> operands, RowReduction &r) {
  if (operands.empty() || operands[0].empty()) return "no row to reduce";
  const Shape &x = operands[0];
  r.length = x.back();
  r.rows = r.length ? product(x) / r.length : 0;
  r.perColumn.assign(operands.size(), false);
  return "";
}

bool ir::alongLastDim(const AttrMap &attrs, size_t rank) {
  auto it = attrs.find("dim");
  int64_t dim = it != attrs.end() && std::holds_alternative<int64_t>(it->second) ? std::get<int64_t>(it->second) : -1;
  return dim == -1 || dim == int64_t(rank) - 1;
}

double ir::floatOr(const AttrMap &attrs, const char *name, double otherwise) {
  auto it = attrs.find(name);
  if (it == attrs.end()) return otherwise;
  if (const double *d = std::get_if<double>(&it->second)) return *d;
  if (const int64_t *i = std::get_if<int64_t>(&it->second)) return double(*i);
  return otherwise;
}
