//===- backend/cpu/CppEmitter.cpp - a plan's programs as one C++ file -----===//

#include "backend/cpu/CppEmitter.h"

#include "backend/host/HostText.h"
#include "backend/host/StepSequence.h"
#include "support/Error.h"

#include <map>
#include <string>

using namespace planc;
using namespace planc::cpu;

llvm::Error cpu::emitCpuProgram(const exec::ExecutionPlan &plan, const CpuProgramSettings &settings,
                                llvm::raw_ostream &out, const exec::ExecutionPlan *inference) {
  if (plan.programs.empty()) return makeError("plan '" + plan.name + "' has no program to build");
  const bool stages = plan.programs.size() > 1;
  host::TargetCode target;

  // The kernels of every program: the first with the prelude, the others
  // named apart ("p1_s12_gelu") and calling an earlier program's kernel of
  // the same source rather than a copy. Every step must have its kernel, or
  // a call on the communicator.
  llvm::raw_string_ostream kernels(target.kernels);
  std::map<std::string, std::string> rendered;
  for (size_t p = 0; p < plan.programs.size(); ++p) {
    const exec::RankProgram &program = plan.programs[p];
    backend::RenderOptions render;
    render.prefix = p ? "p" + std::to_string(p) + "_" : "";
    render.prelude = p == 0;
    render.foldProducers = plan.foldProducers;
    render.rendered = &rendered;
    target.chosen.push_back(backend::renderProgramKernels(plan, program, backend::cpuLanguage(), kernels, render));
    if (std::string why = host::missingKernels(program, target.chosen.back()); !why.empty())
      return makeError("the CPU backend has no kernel for " + why + " of plan '" + plan.name + "'" +
                       (stages ? " (" + host::rankClassOf(program) + ")" : ""));
  }
  // The inference step's kernels, named apart ("is12_gelu"), after the
  // training step's prelude.
  if (inference) {
    if (inference->programs.size() != 1)
      return makeError("internal error: an inference plan of several programs");
    backend::RenderOptions render;
    render.prefix = "i";
    render.prelude = false;
    render.rendered = &rendered;
    target.inferenceChosen = backend::renderProgramKernels(*inference, inference->programs.front(),
                                                           backend::cpuLanguage(), kernels, render);
    if (std::string why = host::missingKernels(inference->programs.front(), target.inferenceChosen); !why.empty())
      return makeError("the CPU backend has no kernel for " + why + " of the inference step of plan '" + plan.name +
                       "'");
  }
  kernels.flush();

  // OpenMP's and OpenBLAS's threads.
  target.buildLine = "c++ -std=c++17 -O3 -fopenmp with the planc runtime, OpenBLAS and MPI (planc build does it).";
  target.headers = "#ifdef _OPENMP\n#include <omp.h>\n#endif\n";
  target.glue = "void planc_set_threads(int threads) {\n#ifdef _OPENMP\n  omp_set_num_threads(threads);\n#endif\n"
                "  openblas_set_num_threads(threads);\n}\n\n";
  return host::emitHostProgram(plan, settings, target, out, inference);
}
