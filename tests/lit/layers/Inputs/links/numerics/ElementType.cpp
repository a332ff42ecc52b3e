#include "numerics/ElementType.h"
