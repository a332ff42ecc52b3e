#include "ir/IR.h"
#include "compiler/Pipeline.h"
