#include "ir/IR.h"
#include "analysis/MemoryPlan.h"
