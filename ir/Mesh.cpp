//===- ir/Mesh.cpp - mesh axis names -------------------------------------===//

#include "ir/Mesh.h"

#include <iterator>

using namespace planc;

const char *planc::spelling(MeshAxis axis) {
  static const char *const names[] = {"dp", "pp", "tp", "cp", "ep"};
  static_assert(std::size(names) == kNumMeshAxes, "one name per axis");
  return names[unsigned(axis)];
}

std::optional<MeshAxis> planc::parseMeshAxis(llvm::StringRef name) {
  for (unsigned i = 0; i < kNumMeshAxes; ++i)
    if (name == spelling(MeshAxis(i))) return MeshAxis(i);
  return std::nullopt;
}
