// Beside the folder, but not named by the header.
#include "ir/IR.h"
#include "ir/ops/Support.h"
