#include "numerics/Philox.h"
