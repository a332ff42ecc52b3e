# Unity builds: each target's sources are compiled in batches of
# CMAKE_UNITY_BUILD_BATCH_SIZE, one translation unit per batch, so the headers
# they share (LLVM's, the STL's, GoogleTest's, planc's own) are parsed and
# instantiated once per batch instead of once per file. A cold build (CI: a
# fresh clone, an empty ccache, two builds on two cores) is what this is for;
# -DPLANC_UNITY=OFF compiles every file alone, which suits a long
# edit-compile session better (an edit recompiles its file, not its batch).
#
# A file joins no batch when a name of its file scope (in an anonymous
# namespace, or static) is also defined by another file of its target: the
# batch would not compile ("redefinition of ..."). PLANC_UNITY_ALONE names
# those files; a new such collision is a compile error of the unity build,
# and the fix is a name that says more, or the file's line here. The unit
# tests are not batched at all (tests/CMakeLists.txt): their files open
# namespaces at file scope (`using namespace ...`), which a batch would share.
option(PLANC_UNITY "Compile each target's sources in batches (unity build)" ON)
if(PLANC_UNITY)
  set(CMAKE_UNITY_BUILD ON)
  set(CMAKE_UNITY_BUILD_BATCH_SIZE 8)
endif()

# The files that compile alone, relative to the repository root.
set(PLANC_UNITY_ALONE
  # Its own object: the programs planc writes link the runtime library, and only
  # `planc calibrate`'s program calls this file (and so needs BLAS).
  runtime/Calibrate.cpp
  # A name of their file scope is another file's of the same target too.
  analysis/MessageReplay.cpp
  analysis/PipelineSchedule.cpp
  analysis/PipelineStructure.cpp
  analysis/SchedulePrinter.cpp
  exec/PlanParser.cpp
  exec/PlanPrinter.cpp
  exec/PlanVerifier.cpp
  frontend/ConfigParallel.cpp
  frontend/ConfigTrain.cpp
  frontend/SemaBuiltins.cpp
  frontend/SemaExpr.cpp
  frontend/Verify.cpp
  ir/Verifier.cpp
  ir/ops/Attention.cpp
  ir/ops/Elementwise.cpp
  ir/ops/MatMul.cpp
  ir/ops/Precision.cpp
  ir/ops/Shape.cpp
  passes/FuseElementwise.cpp
  passes/LossScaling.cpp
  passes/OptimizerLowering.cpp
  passes/ShardingPropagation.cpp
  runtime/Checkpoint.cpp
  runtime/CheckpointIndex.cpp
  runtime/Executable.cpp
  runtime/InProcessCommunicator.cpp
  runtime/MpiCommunicator.cpp
  runtime/NameMap.cpp
  runtime/Safetensors.cpp
  runtime/SlowStep.cpp
)

# Called once every target exists (the property is read from the folder that
# defines the target: every folder with a CMakeLists.txt is named).
function(planc_unity_mark_alone)
  if(NOT PLANC_UNITY)
    return()
  endif()
  set(dirs ${PROJECT_SOURCE_DIR})
  set(todo ${PROJECT_SOURCE_DIR})
  while(todo)
    list(POP_FRONT todo dir)
    get_property(subs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
    list(APPEND dirs ${subs})
    list(APPEND todo ${subs})
  endwhile()
  set(files "")
  foreach(f ${PLANC_UNITY_ALONE})
    list(APPEND files ${PROJECT_SOURCE_DIR}/${f})
  endforeach()
  set_source_files_properties(${files} DIRECTORY ${dirs} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
endfunction()
