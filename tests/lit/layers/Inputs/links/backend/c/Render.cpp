#include "ir/IR.h"
#include "exec/ExecutionPlan.h"
#include "runtime/Data.h"
