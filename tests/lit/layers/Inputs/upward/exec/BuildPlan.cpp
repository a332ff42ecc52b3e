// The execution plan may not use a backend.
#include "backend/interp/Executor.h"
#include "analysis/MemoryPlan.h"
