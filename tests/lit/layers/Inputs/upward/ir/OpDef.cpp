// A file a private header names: allowed.
#include "ir/ops/Support.h"
