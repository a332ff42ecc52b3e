#!/usr/bin/env python3
"""Checks the arrows of docs/architecture.md on a source tree.

    check-layers.py [ROOT]

Every `#include "folder/..."` of a library folder must name a folder that
docs/architecture.md lets it use, no library source file may be longer
than 700 lines, and runtime/ (what compiled executables link) includes no
LLVM header either. Prints one line per violation (file:line: what) and exits 1
if there is any; 0 and a summary line otherwise.
"""
import os
import re
import sys

# The folders each library folder may include from (itself always).
ALLOWED = {
    'support': set(),
    'ir': {'support'},
    'analysis': {'ir', 'support'},
    'passes': {'analysis', 'ir', 'support'},
    'frontend': {'ir', 'support'},
    'runtime': set(),
    'exec': {'analysis', 'ir', 'support'},
    'backend': {'exec', 'runtime', 'analysis', 'ir', 'support'},
    'compiler': {'frontend', 'passes', 'analysis', 'backend', 'exec', 'runtime', 'ir', 'support'},
    # The C API: thin over compiler/ (and the Compilation of frontend/ that compiler/'s calls take).
    'capi': {'compiler', 'frontend', 'support'},
}
# Folders that may not include LLVM either (with quotes or angle brackets).
NO_LLVM = {'runtime'}
LLVM_INCLUDE = re.compile(r'^\s*#\s*include\s+["<](llvm|llvm-c)/')
# Headers that are not project folders: LLVM, the ANTLR runtime and the
# parser ANTLR generates for the frontend.
EXTERNAL = re.compile(r'^(llvm|llvm-c|antlr4-runtime\.h|PlanLexer\.h|PlanParser\.h|PlanBaseVisitor\.h|PlanVisitor\.h|nlohmann)(/|$)')
PROJECT = {'support', 'ir', 'analysis', 'passes', 'frontend', 'runtime', 'exec', 'backend', 'compiler', 'capi', 'tools',
           'tests', 'grammar', 'lib'}
MAX_LINES = 700
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..'))
    problems, files = [], 0
    for layer, allowed in sorted(ALLOWED.items()):
        top = os.path.join(root, layer)
        for folder, _, names in os.walk(top):
            for name in sorted(names):
                if not name.endswith(('.h', '.cpp', '.def', '.inc')):
                    continue
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, root)
                files += 1
                with open(path, encoding='utf-8') as f:
                    lines = f.read().split('\n')
                if lines and lines[-1] == '':
                    lines.pop()
                if name.endswith('.cpp') and len(lines) > MAX_LINES:
                    problems.append('%s: %d lines (at most %d)' % (rel, len(lines), MAX_LINES))
                for number, line in enumerate(lines, 1):
                    if layer in NO_LLVM and LLVM_INCLUDE.match(line):
                        problems.append('%s:%d: %s/ may not include LLVM (docs/architecture.md)' % (rel, number, layer))
                        continue
                    m = INCLUDE.match(line)
                    if not m or EXTERNAL.match(m.group(1)):
                        continue
                    used = m.group(1).split('/')[0]
                    if '/' not in m.group(1):
                        continue  # a file beside this one
                    if used == layer or used in allowed:
                        continue
                    if used in PROJECT:
                        problems.append('%s:%d: %s/ may not include "%s" (docs/architecture.md)' %
                                        (rel, number, layer, m.group(1)))
    for p in problems:
        print(p)
    if problems:
        print('check-layers: %d violation(s) in %d files' % (len(problems), files))
        return 1
    print('check-layers: %d files keep the arrows of docs/architecture.md' % files)
    return 0


if __name__ == '__main__':
    sys.exit(main())
