# What `cmake --install` puts under the prefix, and the CMake package that
# lets another project use it (README.md, "Installing and embedding"):
#
#   bin/planc, bin/plan-opt
#   lib/libplanc_*.a            the compiler's libraries (static), imported as planc::<layer>;
#                               compiled executables link libplanc_runtime.a and libplanc_numerics.a
#   lib/libplanc.so             the C API (capi/), imported as planc::capi
#   include/planc/<layer>/*.h   the C++ headers, included as "frontend/Frontend.h"
#   include/planc/planc.h       the C API, included as <planc/planc.h>
#   share/planc/std/*.plan      the standard library's sources (planc has its
#                               own copy built in; `--stdlib` reads these)
#   lib/cmake/planc/            find_package(planc CONFIG): planc::compiler, planc::capi, ...
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(PLANC_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/planc)
set(PLANC_CXX_INCLUDE_DIR ${CMAKE_INSTALL_INCLUDEDIR}/planc)

# The library targets and the names they are imported under (planc::<name>).
# Static libraries carry their dependencies, so every one the compiler links
# is installed, the grammar and the embedded standard library included.
set(PLANC_EXPORTED_LIBRARIES
  planc_numerics:numerics planc_support:support planc_ir:ir planc_analysis:analysis planc_exec:exec planc_runtime:runtime
  plan_grammar:grammar planc_stdlib:stdlib planc_frontend:frontend planc_passes:passes
  planc_backend_c:backend_c planc_backend_host:backend_host planc_backend_cpu:backend_cpu planc_backend_interp:backend_interp planc_backend:backend planc_backend_registry:backend_registry
  planc_compiler:compiler planc_capi:capi)
set(PLANC_INSTALLED_TARGETS)
foreach(pair IN LISTS PLANC_EXPORTED_LIBRARIES)
  string(REPLACE ":" ";" pair "${pair}")
  list(GET pair 0 target)
  list(GET pair 1 name)
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  # The same name inside this build, so examples/embed links planc::compiler
  # whether it is built here or against an installed planc.
  add_library(planc::${name} ALIAS ${target})
  list(APPEND PLANC_INSTALLED_TARGETS ${target})
endforeach()

# In this build the headers are found from the repository root (the global
# include_directories); an installed consumer finds them under the prefix.
# numerics/, support/ and runtime/ are at the bottom of every library's links,
# so their interface reaches all of them.
target_include_directories(planc_numerics INTERFACE $<INSTALL_INTERFACE:${PLANC_CXX_INCLUDE_DIR}>)
target_include_directories(planc_support INTERFACE $<INSTALL_INTERFACE:${PLANC_CXX_INCLUDE_DIR}>)
target_include_directories(planc_runtime INTERFACE $<INSTALL_INTERFACE:${PLANC_CXX_INCLUDE_DIR}>)
target_compile_features(planc_numerics INTERFACE cxx_std_17)
target_compile_features(planc_support INTERFACE cxx_std_17)
target_compile_features(planc_runtime INTERFACE cxx_std_17)
# planc's headers include LLVM's: the LLVM planc was built with (its headers,
# its definitions) goes with them; planc-config.cmake finds LLVM's package for
# the static LLVMSupport the libraries link.
separate_arguments(PLANC_LLVM_DEFINES NATIVE_COMMAND "${LLVM_DEFINITIONS}")
list(TRANSFORM PLANC_LLVM_DEFINES REPLACE "^-D" "")
# (Quoted: a generator expression around a list must stay one argument.)
target_include_directories(planc_support SYSTEM INTERFACE "$<INSTALL_INTERFACE:${LLVM_INCLUDE_DIRS}>")
target_compile_definitions(planc_support INTERFACE "$<INSTALL_INTERFACE:${PLANC_LLVM_DEFINES}>")
target_include_directories(planc_capi INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)

install(TARGETS ${PLANC_INSTALLED_TARGETS} EXPORT planc-targets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS planc plan-opt RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

install(DIRECTORY numerics support ir analysis exec runtime frontend passes backend compiler
  DESTINATION ${PLANC_CXX_INCLUDE_DIR}
  FILES_MATCHING PATTERN "*.h" PATTERN "*.def")
install(FILES capi/planc.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/planc)
file(GLOB PLANC_STD_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/lib/std/*.plan)
install(FILES ${PLANC_STD_SOURCES} DESTINATION ${CMAKE_INSTALL_DATADIR}/planc/std)

install(EXPORT planc-targets NAMESPACE planc:: DESTINATION ${PLANC_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/planc-config.cmake.in
  ${PROJECT_BINARY_DIR}/planc-config.cmake INSTALL_DESTINATION ${PLANC_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_BINDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/planc-config-version.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/planc-config.cmake ${PROJECT_BINARY_DIR}/planc-config-version.cmake
  DESTINATION ${PLANC_CMAKE_DIR})
