//===- backend/host/HostText.cpp - the host program's words ---------------===//

#include "backend/host/HostText.h"
#include "support/Plural.h"

#include <cstdio>

using namespace planc;

std::string host::cString(llvm::StringRef s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c >= 0x20 && c < 0x7f && c != '?') {
      out += char(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03o", c); // octal: never runs into a following digit beyond three
      out += buf;
    }
  }
  return out + "\"";
}

const char *host::elementTypeName(ir::DType t) {
  switch (t) {
  case ir::DType::F64: return "F64";
  case ir::DType::F32: return "F32";
  case ir::DType::BF16: return "BF16";
  case ir::DType::F16: return "F16";
  case ir::DType::F8E4M3: return "F8E4M3";
  case ir::DType::F8E5M2: return "F8E5M2";
  case ir::DType::I32: return "I32";
  case ir::DType::I64: return "I64";
  case ir::DType::U8: return "U8";
  case ir::DType::U16: return "U16";
  case ir::DType::U32: return "U32";
  case ir::DType::Bool: return "Bool";
  }
  return "F32";
}

const char *host::elementTypeName(runtime::ElementType t) {
  using E = runtime::ElementType;
  switch (t) {
  case E::F64: return "F64";
  case E::F32: return "F32";
  case E::BF16: return "BF16";
  case E::F16: return "F16";
  case E::F8E4M3: return "F8E4M3";
  case E::F8E5M2: return "F8E5M2";
  case E::I32: return "I32";
  case E::I64: return "I64";
  case E::U8: return "U8";
  case E::U16: return "U16";
  case E::U32: return "U32";
  case E::Bool: return "Bool";
  }
  return "F32";
}

std::string host::ints(const Shape &s) {
  std::string t = "{";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "}";
}

/// "pipeline stage 0 (rank 0)" / "pipeline stage 1 (ranks 2, 3)".
std::string host::rankClassOf(const exec::RankProgram &p) {
  std::string s = "pipeline stage " + std::to_string(p.stage) + " (" + pluralOf(int64_t(p.ranks.size()), "rank") + " ";
  for (size_t i = 0; i < p.ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(p.ranks[i]);
  return s + ")";
}

