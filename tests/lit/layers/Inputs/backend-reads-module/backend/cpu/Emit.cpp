// A target that reads more than the execution plan.
#include "frontend/Config.h"
#include "exec/ExecutionPlan.h"

void emit(const planc::ir::Module &placed, const planc::exec::ExecutionPlan &plan);
bool fold(const planc::PlanConfig &config);
int initOf(const Module *m);
