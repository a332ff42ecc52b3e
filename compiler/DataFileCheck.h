//===- compiler/DataFileCheck.h - the data file, before anything runs -*- C++ -*-===//
//
// A plan whose `data` setting names a text or token file that is not there
// checks and builds cleanly, and its executable stops when it starts. So
// `planc check` and `planc build` look for the file first (from the current
// directory, as the executable and `planc run` open it) and warn at the data
// setting when it does not exist or is a directory; the executable's own error
// stays, since the file may be made or copied before the run. A file the
// executable would refuse (not a regular file, such as /dev/zero or a pipe, or
// larger than runtime::kMaxDataFileBytes) gets the same warning, saying so.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_COMPILER_DATAFILECHECK_H
#define PLANC_COMPILER_DATAFILECHECK_H

#include "frontend/Frontend.h"

namespace planc {

/// Warns (warn_data_file_missing) at the data setting of the checked plan in
/// `c` when its file is missing, is a directory, or is one the executable
/// would refuse.
void warnMissingDataFile(Compilation &c);

} // namespace planc

#endif
