#include "support/Error.h"
#include "numerics/ElementType.h"
