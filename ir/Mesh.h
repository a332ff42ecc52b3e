//===- ir/Mesh.h - named device-mesh axes -----------------------*- C++ -*-===//
//
// The axes a plan's `parallel { mesh(...) }` can name. Shared by the frontend
// (settings, @shard) and the IR (shardings, collectives).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_IR_MESH_H
#define PLANC_IR_MESH_H

#include "llvm/ADT/StringRef.h"

#include <optional>

namespace planc {

enum class MeshAxis { DP, PP, TP, CP, EP };
constexpr unsigned kNumMeshAxes = 5;
const char *spelling(MeshAxis axis);
std::optional<MeshAxis> parseMeshAxis(llvm::StringRef name);

} // namespace planc

#endif
