#include "backend/c/Render.h"
#include "ir/IR.h"
#include "exec/ExecutionPlan.h"
