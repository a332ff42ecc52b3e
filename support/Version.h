//===- support/Version.h - planc's version and source revision -*- C++ -*-===//
//
// What `planc --version` and the C API's planc_version() report. The
// definitions are generated at build time (cmake/WriteRevision.cmake) from
// the project's version and `git describe` of the source tree.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_SUPPORT_VERSION_H
#define PLANC_SUPPORT_VERSION_H

namespace planc {

/// The release number of CMakeLists.txt's project(): "0.1.0".
const char *versionNumber();
/// `git describe --tags --always` of the tree planc was built from (a tag,
/// or a commit hash), or "unknown" when it was not built from a git checkout.
const char *sourceRevision();

} // namespace planc

#endif
