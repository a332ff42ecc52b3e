#!/usr/bin/env python3
"""Checks that the compiled targets read only the execution plan.

    check-backend-inputs.py [ROOT]

docs/architecture.md: a backend that writes code (backend/c, backend/host,
backend/cpu, and every target after them) reads the execution plan
(exec/ExecutionPlan.h) and its settings, never the placed module or the
plan's configuration: the parameters' initialisation and the folding are
facts on the plan's buffers, recorded by exec/BuildPlan.h. A line that names
ir::Module (or a `Module &`/`Module *`), the frontend's PlanConfig or
TrainConfig, or includes frontend/ or compiler/ is a violation. Prints one
line per violation (file:line: what) and exits 1 if there is any; 0 and a
summary line otherwise, naming what it skips and why.
"""
import os
import re
import sys

# backend/interp is the reference interpreter: it runs each step with ir/'s
# kernels (ir/OpDef.h eval on a scratch module of the step's op), so it is
# no code-writing target and is not checked.
SKIPPED = {'interp': 'the reference interpreter runs ir/ kernels on a scratch module'}
READS = [
    (re.compile(r'\bir::Module\b|\bModule\s*[&*]'), 'reads the placed module (ir::Module)'),
    (re.compile(r'\b(PlanConfig|TrainConfig)\b'), 'reads the plan\'s configuration (frontend/Config.h)'),
    (re.compile(r'^\s*#\s*include\s+"(frontend|compiler)/'), 'includes a folder above the execution plan'),
]


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..'))
    top = os.path.join(root, 'backend')
    problems, files = [], 0
    targets = sorted(d for d in os.listdir(top) if os.path.isdir(os.path.join(top, d))) if os.path.isdir(top) else []
    for target in targets:
        if target in SKIPPED:
            continue
        for folder, _, names in os.walk(os.path.join(top, target)):
            for name in sorted(names):
                if not name.endswith(('.h', '.cpp', '.def', '.inc')):
                    continue
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, root)
                files += 1
                with open(path, encoding='utf-8', errors='replace') as f:
                    for number, line in enumerate(f, 1):
                        for pattern, what in READS:
                            if pattern.search(line):
                                problems.append('%s:%d: %s' % (rel, number, what))
    for p in problems:
        print(p)
    skipped = '; '.join('backend/%s skipped (%s)' % (k, v) for k, v in sorted(SKIPPED.items()))
    if problems:
        print('check-backend-inputs: %d violation(s); %s' % (len(problems), skipped))
        return 1
    print('check-backend-inputs: %d files of %s read only the execution plan; %s' %
          (files, ', '.join('backend/' + t for t in targets if t not in SKIPPED), skipped))
    return 0


if __name__ == '__main__':
    sys.exit(main())
