//===- frontend/ParserLiterals.cpp - the values of literal tokens ---------===//

#include "frontend/ParserLiterals.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <vector>

using namespace planc;
using namespace planc::parser;

namespace {

/// Whether the literal `digits` (a mantissa with a non-zero digit) was read
/// as 0 or a subnormal: `1e-400` is not zero, and a double below 2.2e-308
/// has lost its digits.
bool underflows(const std::string &digits, double value) {
  size_t mantissaEnd = digits.find_first_of("eE");
  bool nonZero = digits.substr(0, mantissaEnd).find_first_of("123456789") != std::string::npos;
  return nonZero && std::fabs(value) < std::numeric_limits<double>::min();
}

} // namespace

std::string parser::unescape(llvm::StringRef quoted) {
  std::string out;
  for (size_t i = 1; i + 1 < quoted.size(); ++i) {
    char c = quoted[i];
    if (c == '\\' && i + 2 < quoted.size()) {
      char n = quoted[++i];
      out += n == 'n' ? '\n' : n == 't' ? '\t' : n;
    } else {
      out += c;
    }
  }
  return out;
}

LiteralError parser::readNumber(llvm::StringRef text, ast::NumberExpr &n) {
  n.text = text.str();
  std::string digits;
  for (char c : text)
    if (c != '_') digits += c;
  bool isInt = digits.find_first_of(".eE") == std::string::npos;
  if (isInt) {
    n.isInteger = true;
    errno = 0;
    char *end = nullptr;
    unsigned long long v = std::strtoull(digits.c_str(), &end, 10);
    LiteralError error = LiteralError::None;
    if (errno == ERANGE || v > uint64_t(INT64_MAX)) {
      n.overflow = true;
      error = LiteralError::IntegerTooLarge;
    }
    n.intValue = int64_t(std::min<unsigned long long>(v, uint64_t(INT64_MAX)));
    n.floatValue = double(n.intValue);
    return error;
  }
  n.floatValue = std::strtod(digits.c_str(), nullptr);
  if (!std::isfinite(n.floatValue)) {
    n.floatValue = 0;
    return LiteralError::NotFinite;
  }
  return underflows(digits, n.floatValue) ? LiteralError::NotFinite : LiteralError::None;
}

LiteralError parser::readQuantity(llvm::StringRef text, ast::QuantityExpr &q) {
  q.text = text.str();
  size_t unitStart = text.size();
  while (unitStart > 0 && (std::isalpha((unsigned char)text[unitStart - 1]) || text[unitStart - 1] == '/'))
    --unitStart;
  q.unit = text.substr(unitStart).str();
  std::string digits;
  for (char c : text.substr(0, unitStart))
    if (c != '_' && c != ' ' && c != '\t') digits += c;
  q.number = std::strtod(digits.c_str(), nullptr);
  if (!std::isfinite(q.number)) {
    q.number = 0;
    return LiteralError::NotFinite;
  }
  return underflows(digits, q.number) ? LiteralError::NotFinite : LiteralError::None;
}

void planc::parser::takeRepeatCountPostfix(ast::RepeatItem &r) {
  std::vector<ast::Annotation> trailing;
  while (r.count) {
    if (auto *a = llvm::dyn_cast<ast::AnnotatedExpr>(r.count.get())) {
      trailing.insert(trailing.begin(), std::move(a->annotation));
      ast::ExprPtr inner = std::move(a->inner);
      r.count = std::move(inner);
    } else if (auto *n = llvm::dyn_cast<ast::NamedExpr>(r.count.get()); n && r.label.empty()) {
      r.label = n->name;
      r.labelRange = n->nameRange;
      ast::ExprPtr inner = std::move(n->inner);
      r.count = std::move(inner);
    } else {
      break;
    }
  }
  r.annotations.insert(r.annotations.begin(), std::make_move_iterator(trailing.begin()),
                       std::make_move_iterator(trailing.end()));
}

planc::ast::LayerParam::Kind planc::parser::scalarParamKind(llvm::StringRef typeName) {
  using K = ast::LayerParam::Kind;
  return typeName == "int"     ? K::Int
         : typeName == "float" ? K::Float
         : typeName == "bool"  ? K::Bool
         : typeName == "dtype" ? K::DType
                               : K::Unknown;
}
