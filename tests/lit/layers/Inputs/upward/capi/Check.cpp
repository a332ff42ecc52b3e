// The C API calls compiler/ (and its frontend's Compilation), not the passes.
#include "compiler/MemoryCheck.h"
#include "passes/Passes.h"
