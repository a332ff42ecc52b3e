//===- examples/embed/embed.cpp - planc as a library ---------------------===//
//
// Checks a plan held in a string and prints what the frontend found. Shows the
// whole public surface an embedder needs: Compilation, its diagnostics and the
// elaborated model.
//
//===----------------------------------------------------------------------===//

#include "frontend/Frontend.h"
#include "support/Plural.h"

#include "llvm/Support/raw_ostream.h"

static const char *kPlan = R"(
import std.nn

model toy {
  let hidden = 32, vocab = 128, seq = 16
  input tokens  : i32[batch, seq]
  input targets : i32[batch, seq]
  x = embedding(tokens, vocab, hidden) as wte
  x = layernorm(x)
  loss = cross_entropy(tied_linear(x, wte.weight), targets)
}

train { global_batch = 8, micro_batch = 4, steps = 10 }
cluster { nodes = 1, gpus_per_node = 2, device cpu }
parallel { mesh(dp = 2) }
)";

int main(int argc, char **argv) {
  planc::FrontendOptions options;
  // Extra arguments are --set style overrides: embed parallel.zero=1
  for (int i = 1; i < argc; ++i) options.setOverrides.push_back(argv[i]);
  planc::Compilation c(options);
  c.setDiagnosticOutput(llvm::errs(), /*json=*/false, /*colors=*/false);
  if (!c.loadString("inline.plan", kPlan) || !c.check()) {
    llvm::errs() << "the plan has " << planc::counted(c.getDiagnostics().getNumErrors(), "error") << "\n";
    return 1;
  }
  const planc::ModelInfo &m = c.getModel();
  llvm::outs() << "model " << m.name << ": " << planc::counted(int64_t(m.totalParams()), "parameter") << " in "
               << planc::counted(int64_t(m.params.size()), "tensor") << "\n";
  for (const planc::ParamInfo &p : m.params)
    llvm::outs() << "  " << p.path << " " << p.dtype << planc::formatShape(p.shape) << "\n";
  return 0;
}
