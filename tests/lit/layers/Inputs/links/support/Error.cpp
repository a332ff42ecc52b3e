#include "support/Error.h"
