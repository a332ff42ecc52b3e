#include "analysis/MemoryPlan.h"
