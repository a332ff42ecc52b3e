# lit configuration of the planc test suite.
#
# Run it on a build folder (`lit.py -sv build/tests/lit`), or on files or folders
# of this source tree (`lit.py -sv tests/lit/driver`): then the build folder is
# $PLANC_BUILD_DIR, or build/ beside this tree.
#
# Substitutions:
#   %planc      the planc driver of the build
#   %plan-opt   the plan-opt tool; %planc-embed-example the library example
#   %stdlib     lib/std (the .plan sources of the standard library)
#   %src-root   the root of this source tree
#   %obj-root   the build folder (what `cmake --install` installs from)
#   %examples   examples/
#   %python     the python that runs lit
#   %cxx        the C++ compiler that builds planc (generated kernels are
#               compiled with it); feature `nvcc` when CUDA's compiler is at
#               $CUDA_HOME/bin/nvcc (or /usr/local/cuda), with %nvcc its path
#   %expect-exit N   run a command and require exit status N (e.g. 2 for usage)
#   FileCheck, not, count   LLVM 14's tools. `not` is the real binary, not lit's
#               builtin: the builtin counts a crash as a failure to negate, so
#               `not %planc ...` would pass on a crash.

import os
import re

import lit.formats

if not hasattr(config, 'planc_obj_root'):
    # Loaded directly from the source tree: find the configured build.
    src_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    build_dir = os.environ.get('PLANC_BUILD_DIR', os.path.join(src_root, 'build'))
    site_cfg = os.path.join(build_dir, 'tests', 'lit', 'lit.site.cfg.py')
    if not os.path.exists(site_cfg):
        lit_config.fatal('no %s: configure the build first (scripts/build.sh)' % site_cfg)
    lit_config.load_config(config, site_cfg)
else:
    config.name = 'planc'
    config.test_format = lit.formats.ShTest(execute_external=False)
    config.suffixes = ['.test', '.plan']
    # Inputs/ folders hold files that tests read; they are not tests themselves.
    config.excludes = ['Inputs', 'CMakeLists.txt', 'README.md', 'lit.cfg.py']
    # .lit_test_times.txt beside this file: each test's seconds in a sanitized
    # run. lit reads it where a build has no times of its own yet (a fresh
    # clone, as in CI) and starts the slowest tests first, so that no long
    # test ends the run alone on one core; once a build has run the suite,
    # its own times take over. Refresh it from a build's
    # tests/lit/.lit_test_times.txt when tests are added or change pace.
    config.test_source_root = os.path.dirname(os.path.abspath(__file__))
    config.test_exec_root = os.path.join(config.planc_obj_root, 'tests', 'lit')

    planc = os.path.join(config.planc_tools_dir, 'planc')
    # Longer names first: lit replaces in list order.
    config.substitutions.append(('%planc-embed-example', os.path.join(config.planc_tools_dir, 'planc-embed-example')))
    config.substitutions.append(('%plan-opt', os.path.join(config.planc_tools_dir, 'plan-opt')))
    config.substitutions.append(('%planc', planc))
    config.substitutions.append(('%src-root', config.planc_src_root))
    config.substitutions.append(('%obj-root', config.planc_obj_root))
    config.substitutions.append(('%stdlib', os.path.join(config.planc_src_root, 'lib', 'std')))
    config.substitutions.append(('%examples', os.path.join(config.planc_src_root, 'examples')))
    config.substitutions.append(('%python', config.python_executable))
    config.substitutions.append(('%cxx', getattr(config, 'cxx', 'c++')))
    nvcc = os.path.join(os.environ.get('CUDA_HOME', '/usr/local/cuda'), 'bin', 'nvcc')
    if os.path.exists(nvcc):
        config.available_features.add('nvcc')
        config.substitutions.append(('%nvcc', nvcc))
    # `%expect-exit N cmd args...`: runs cmd, passes its output through, and
    # succeeds only if it exited with status N (not on a crash).
    config.substitutions.append(('%expect-exit', '%s %s' % (
        config.python_executable,
        os.path.join(config.test_source_root, 'Inputs', 'expect_exit.py'))))
    # Tool names are replaced only where a command starts: at the beginning of
    # the line (after the `%dbg(RUN: at line N)` marker lit puts there), after
    # |, ;, &&, ||, or after `not` / `not --crash`.
    command_start = r'(^|[|;&]|^%dbg\([^)]*\)|\bnot(?:\s+--crash)?)(\s*)'
    for name, path in (('FileCheck', config.filecheck), ('not', config.not_tool),
                       ('count', config.count_tool)):
        config.substitutions.append(
            (command_start + re.escape(name) + r'(?=\s|$)', r'\g<1>\g<2>' + path))
    # Any other LLVM tool is found on PATH.
    # planc verifies the IR after every pass, not only after each pipeline --
    # in the plain build. The sanitized build runs the same tests for memory
    # errors and undefined behaviour and verifies as planc does by default
    # (after each pipeline): the verifier is the same code either way, and
    # after every pass it was an eighth of the time of its slowest tests.
    if not config.planc_sanitize:
        config.environment['PLANC_VERIFY_EACH'] = '1'
    config.environment['PATH'] = os.pathsep.join(
        [os.path.dirname(config.filecheck), config.environment.get('PATH', '')])

    config.environment['PLANC_SOURCE_DIR'] = config.planc_src_root
    # A CHECK-LABEL ends the scope of the variables captured before it, so a
    # name matched in one function cannot satisfy a check in the next.
    config.environment['FILECHECK_OPTS'] = '-enable-var-scope'
    # Diagnostics must not depend on the terminal.
    config.environment.pop('TERM', None)
    config.environment['NO_COLOR'] = '1'
    if config.planc_sanitize:
        # abort_on_error turns a sanitizer report into SIGABRT, which `not` and
        # lit count as a crash rather than as an ordinary non-zero exit.
        # quarantine_size_mb: freed memory waits in a 64 MiB quarantine (not
        # ASan's default 256) before it is reused, still far more than the
        # IR's objects between a free and a late use; the interpreter's
        # tensors otherwise came back as fresh pages, a quarter of the time of
        # a sanitized `planc verify`. scripts/test.sh sets the same options.
        # Options set in the environment win (lit passes them through).
        config.environment.setdefault(
            'ASAN_OPTIONS', 'abort_on_error=1:detect_leaks=1:strict_string_checks=1:quarantine_size_mb=64')
        config.environment.setdefault(
            'UBSAN_OPTIONS', 'print_stacktrace=1:halt_on_error=1:abort_on_error=1')
        config.available_features.add('sanitize')

    if not os.path.exists(planc):
        lit_config.warning('%s does not exist yet: build it first (scripts/build.sh)' % planc)
