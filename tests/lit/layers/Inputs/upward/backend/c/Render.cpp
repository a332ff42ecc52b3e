// A backend may include ir/, but not what ir/ops/ keeps private.
#include "ir/OpDef.h"
#include "ir/ops/Support.h"
