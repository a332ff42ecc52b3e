//===- exec/PlanWords.cpp - the words of the plan's text form ------------===//

#include "exec/PlanWords.h"

#include <algorithm>
#include <array>

using namespace planc;
using namespace planc::exec;

llvm::StringRef exec::categoryWord(memory::Category c) {
  // Made once: the printer writes one per buffer.
  static const std::array<std::string, memory::kNumCategories> words = [] {
    std::array<std::string, memory::kNumCategories> all;
    for (size_t i = 0; i < all.size(); ++i) {
      all[i] = memory::spelling(memory::Category(i));
      std::replace(all[i].begin(), all[i].end(), ' ', '_');
    }
    return all;
  }();
  return size_t(c) < words.size() ? llvm::StringRef(words[size_t(c)]) : llvm::StringRef();
}

std::optional<memory::Category> exec::parseCategoryWord(llvm::StringRef word) {
  for (size_t c = 0; c < memory::kNumCategories; ++c)
    if (categoryWord(memory::Category(c)) == word) return memory::Category(c);
  return std::nullopt;
}

std::string exec::categoryWords() {
  std::string list;
  for (size_t c = 0; c < memory::kNumCategories; ++c)
    list += (c ? ", " : "") + categoryWord(memory::Category(c)).str();
  return list;
}

namespace {
constexpr ir::OutputRole kRoles[] = {ir::OutputRole::Other, ir::OutputRole::Loss, ir::OutputRole::ParamGradient,
                                     ir::OutputRole::ParamUpdate, ir::OutputRole::StateUpdate};
} // namespace

const char *exec::outputRoleWord(ir::OutputRole r) {
  switch (r) {
  case ir::OutputRole::Other: return "other";
  case ir::OutputRole::Loss: return "loss";
  case ir::OutputRole::ParamGradient: return "param_gradient";
  case ir::OutputRole::ParamUpdate: return "param_update";
  case ir::OutputRole::StateUpdate: return "state_update";
  }
  return "other";
}

std::optional<ir::OutputRole> exec::parseOutputRoleWord(llvm::StringRef word) {
  for (ir::OutputRole r : kRoles)
    if (word == outputRoleWord(r)) return r;
  return std::nullopt;
}

std::string exec::outputRoleWords() {
  std::string list;
  for (ir::OutputRole r : kRoles) list += (list.empty() ? "" : ", ") + std::string(outputRoleWord(r));
  return list;
}

std::optional<ir::Work> exec::parseWorkWord(llvm::StringRef word) {
  for (ir::Work w : {ir::Work::Forward, ir::Work::Backward, ir::Work::WeightGrad, ir::Work::Optimizer})
    if (word == ir::spelling(w)) return w;
  return std::nullopt;
}

std::optional<BufferRole> exec::parseBufferRoleWord(llvm::StringRef word) {
  for (BufferRole r : {BufferRole::Param, BufferRole::Input, BufferRole::Internal})
    if (word == spelling(r)) return r;
  return std::nullopt;
}

std::optional<Stream> exec::parseStreamWord(llvm::StringRef word) {
  for (Stream s : {Stream::Compute, Stream::Communication})
    if (word == spelling(s)) return s;
  return std::nullopt;
}
