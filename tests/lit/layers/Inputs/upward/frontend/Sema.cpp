#include "ir/IR.h"
#include "passes/Pass.h"
#include "llvm/ADT/StringRef.h"
