#include "ir/IR.h"
