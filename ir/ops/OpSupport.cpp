//===- ir/ops/OpSupport.cpp - what the op families share ------------------===//

#include "ir/ops/OpSupport.h"
#include "support/Plural.h"

#include <numeric>

using namespace planc;
using namespace planc::ir;

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
// Index walks and row reductions
//===----------------------------------------------------------------------===//

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
