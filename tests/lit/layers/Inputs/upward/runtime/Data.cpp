// A runtime file that reaches into the IR and LLVM.
#include "ir/Tensor.h"
#include <llvm/Support/Error.h>
#include "runtime/Status.h"
