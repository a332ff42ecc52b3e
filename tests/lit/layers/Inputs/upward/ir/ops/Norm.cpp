// Inside the folder a private header names: allowed.
#include "ir/ops/Support.h"
