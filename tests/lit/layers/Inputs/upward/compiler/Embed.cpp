// The compiler may not use the C API built on top of it.
#include "capi/planc.h"
#include "frontend/Frontend.h"
