// A driver may call compiler/, never the C API built beside it.
#include "compiler/Build.h"
#include "capi/planc.h"
