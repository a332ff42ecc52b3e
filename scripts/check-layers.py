#!/usr/bin/env python3
"""Checks the arrows of docs/architecture.md on a source tree.

    check-layers.py [ROOT]

Over every library folder and tools/ (their .h, .cpp, .def and .inc files):
- every `#include "folder/..."` names a folder that docs/architecture.md
  lets the including folder use, and numerics/ and runtime/ (what compiled
  executables link) include no LLVM header either;
- no file, source or header, is longer than 700 lines;
- a private header (one whose first comment says "Private to ...") is
  included only from where it says: its own folder, and the folders (a path
  ending in /) and files (a path with a /) it names;
- the CMake link lines agree with the includes: a library or tool that
  includes another planc folder's headers links the library that holds them
  (directly or through the libraries it links), and links only libraries of
  the folders it may use (numerics/ and runtime/ no LLVM).

Prints one line per violation (file:line: what) and exits 1 if there is any;
0 and a summary line otherwise. What it does not check it names: a line
`check-layers: skipped ...` for each folder, file or link it passes over, and
`check-layers: known violation ...` for each violation KNOWN below lists (a
change under way elsewhere), which is reported but does not fail the check.
"""
import fnmatch
import os
import re
import sys

# The folders each checked folder may include from (itself always). numerics/
# is the leaf under both ir/ and runtime/: every folder may use it.
ALLOWED = {
    'numerics': set(),
    'support': {'numerics'},
    'ir': {'numerics', 'support'},
    'analysis': {'ir', 'numerics', 'support'},
    'passes': {'analysis', 'ir', 'numerics', 'support'},
    'frontend': {'ir', 'numerics', 'support', 'grammar', 'lib'},
    'runtime': {'numerics'},
    'exec': {'analysis', 'ir', 'numerics', 'support'},
    'backend': {'exec', 'runtime', 'analysis', 'ir', 'numerics', 'support'},
    'compiler': {'frontend', 'passes', 'analysis', 'backend', 'exec', 'runtime', 'ir', 'numerics', 'support',
                 'grammar', 'lib'},
    # The C API: thin over compiler/ (and the Compilation of frontend/ that compiler/'s calls take).
    'capi': {'compiler', 'frontend', 'support'},
    # The drivers: compiler/ and what it may use, never capi/ (a driver stays
    # thin by the length limit, not by an arrow).
    'tools': {'compiler', 'frontend', 'passes', 'analysis', 'backend', 'exec', 'runtime', 'ir', 'numerics', 'support',
              'grammar', 'lib'},
}
# Folders that may not include or link LLVM either.
NO_LLVM = {'numerics', 'runtime'}
LLVM_INCLUDE = re.compile(r'^\s*#\s*include\s+["<](llvm|llvm-c)/')
LLVM_LINK = re.compile(r'^(LLVM|llvm)')
# Headers that are not project folders: LLVM, the ANTLR runtime and the
# parser ANTLR generates for the frontend.
EXTERNAL = re.compile(r'^(llvm|llvm-c|antlr4-runtime\.h|PlanLexer\.h|PlanParser\.h|PlanBaseVisitor\.h|PlanVisitor\.h|nlohmann)(/|$)')
PROJECT = {'numerics', 'support', 'ir', 'analysis', 'passes', 'frontend', 'runtime', 'exec', 'backend', 'compiler',
           'capi', 'tools', 'tests', 'grammar', 'lib'}
# Folders that are not checked, and why (printed on every run).
SKIPPED = {
    'grammar': 'the ANTLR grammar; its C++ is generated at build time',
    'lib': 'the standard library in .plan; its C++ is generated at build time',
    'tests': 'tests may use any folder',
    'bench': 'benchmarks may use any folder',
    'examples': 'programs outside planc, built against its installed package',
    'cmake': 'the install rules, no sources',
}
MAX_LINES = 700
SOURCE_SUFFIXES = ('.h', '.cpp', '.def', '.inc')
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
PRIVATE = re.compile(r'^//\s*Private to (.*)$')

# Violations still to be removed, each with the reason (the change that
# removes them): reported on every run (and when no longer found), not failed on.
# Keys are the violation's text without its line number.
KNOWN = {
}


def read_lines(path):
    with open(path, encoding='utf-8') as f:
        lines = f.read().split('\n')
    if lines and lines[-1] == '':
        lines.pop()
    return lines


def source_files(root, top):
    """The checked files under `top`, relative to root, in a stable order."""
    for folder, dirs, names in os.walk(os.path.join(root, top)):
        dirs.sort()
        for name in sorted(names):
            if name.endswith(SOURCE_SUFFIXES):
                yield os.path.relpath(os.path.join(folder, name), root)


def private_scope(rel, lines):
    """For a header whose first comment says "Private to X": the folders and
    files X names (with the header's own folder); None for a public header."""
    for line in lines[:12]:
        m = PRIVATE.match(line.strip())
        if not m:
            continue
        folder = os.path.dirname(rel)
        scope = {'folders': {folder}, 'files': set()}
        named = re.split(r'[:.]\s', m.group(1) + ' ', 1)[0]  # up to the end of the clause
        for word in re.split(r'[\s,;]+', named):
            word = word.rstrip('.')
            if word.endswith('/'):
                scope['folders'].add(word.rstrip('/'))
            elif '/' in word:
                scope['files'].add(word)
        return scope
    return None


def may_include_private(includer, scope):
    if includer in scope['files'] or any(fnmatch.fnmatch(includer, f) for f in scope['files']):
        return True
    folder = os.path.dirname(includer)
    return any(folder == f or folder.startswith(f + '/') for f in scope['folders'])


# --- CMake -------------------------------------------------------------------

COMMAND = re.compile(r'\b(add_library|add_executable|target_link_libraries)\s*\(([^)]*)\)', re.S)
LINK_KEYWORDS = {'PUBLIC', 'PRIVATE', 'INTERFACE', 'STATIC', 'SHARED', 'OBJECT', 'MODULE'}


def read_cmake(root, layers):
    """Targets (name -> {dir, links, line, file}) of the CMakeLists.txt under
    the checked folders and grammar/ and lib/."""
    targets = {}
    for top in sorted(layers) + ['grammar', 'lib']:
        for folder, dirs, names in os.walk(os.path.join(root, top)):
            dirs.sort()
            if 'CMakeLists.txt' not in names:
                continue
            path = os.path.join(folder, 'CMakeLists.txt')
            rel_dir = os.path.relpath(folder, root)
            text = '\n'.join(l.split('#', 1)[0] for l in read_lines(path))
            for m in COMMAND.finditer(text):
                words = m.group(2).split()
                if not words:
                    continue
                line = text.count('\n', 0, m.start()) + 1
                name = words[0]
                if m.group(1) in ('add_library', 'add_executable'):
                    if 'ALIAS' in words or 'IMPORTED' in words:
                        continue
                    targets.setdefault(name, {'links': []})
                    targets[name].update(dir=rel_dir, file=os.path.relpath(path, root), line=line)
                else:
                    entry = targets.setdefault(name, {'links': []})
                    entry.setdefault('link_line', line)
                    entry['links'] += [w for w in words[1:] if w not in LINK_KEYWORDS and not w.startswith('$<')]
    return {n: t for n, t in targets.items() if 'dir' in t}


def layer_of(rel):
    return rel.split('/')[0]


def owner_of(header_dir, dirs):
    """The target whose CMakeLists.txt folder holds `header_dir` (the
    longest such folder), or None."""
    best = None
    for name, d in dirs.items():
        if header_dir == d or header_dir.startswith(d + '/'):
            if best is None or len(d) > len(dirs[best]):
                best = name
    return best


def closure(name, targets):
    seen, todo = set(), [name]
    while todo:
        t = todo.pop()
        for link in targets.get(t, {}).get('links', []):
            if link not in seen:
                seen.add(link)
                todo.append(link)
    return seen


def check_links(root, targets, includes_by_dir, problems, notes):
    dirs = {n: t['dir'] for n, t in targets.items()}
    for name, t in sorted(targets.items()):
        layer = layer_of(t['dir'])
        if layer not in ALLOWED:
            continue
        where = '%s:%d: %s' % (t['file'], t.get('link_line', t['line']), name)
        linked = closure(name, targets)
        # Every folder its files include must be linked (through any chain).
        needed = {}
        for src_dir, used in includes_by_dir.items():
            if owner_of(src_dir, dirs) != name:
                continue
            for header_dir, first in used.items():
                owner = owner_of(header_dir, dirs)
                if owner is None:
                    notes.add('skipped %s: no library holds it (headers only)' % header_dir)
                    continue
                if owner != name and owner not in linked:
                    needed.setdefault(owner, first)
        for owner, first in sorted(needed.items()):
            problems.append('%s uses %s/ (%s) but does not link %s' % (where, dirs[owner], first, owner))
        # And it links only what its folder may use.
        for link in t['links']:
            if link in targets:
                used = layer_of(targets[link]['dir'])
                if used != layer and used not in ALLOWED[layer]:
                    problems.append('%s may not link %s (%s/; docs/architecture.md)' % (where, link, used))
            elif layer in NO_LLVM and LLVM_LINK.match(link):
                problems.append('%s may not link LLVM (%s; docs/architecture.md)' % (where, link))


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..'))
    problems, notes, files = [], set(), 0
    layers = [l for l in sorted(ALLOWED) if os.path.isdir(os.path.join(root, l))]
    for top in sorted(os.listdir(root)):
        if top in SKIPPED and os.path.isdir(os.path.join(root, top)):
            notes.add('skipped %s/: %s' % (top, SKIPPED[top]))

    # Read every file once: lengths, includes, private headers.
    contents = {}
    for layer in layers:
        for rel in source_files(root, layer):
            contents[rel] = read_lines(os.path.join(root, rel))
    private = {}
    for rel, lines in contents.items():
        if rel.endswith('.h'):
            scope = private_scope(rel, lines)
            if scope:
                private[rel] = scope

    includes_by_dir = {}  # a source folder -> {an included header's folder: first "file:line"}
    for rel, lines in sorted(contents.items()):
        files += 1
        layer = layer_of(rel)
        if len(lines) > MAX_LINES:
            problems.append('%s: %d lines (at most %d)' % (rel, len(lines), MAX_LINES))
        for number, line in enumerate(lines, 1):
            if layer in NO_LLVM and LLVM_INCLUDE.match(line):
                problems.append('%s:%d: %s/ may not include LLVM (docs/architecture.md)' % (rel, number, layer))
                continue
            m = INCLUDE.match(line)
            if not m or EXTERNAL.match(m.group(1)):
                continue
            header = m.group(1)
            if '/' not in header:
                continue  # a file beside this one
            used = header.split('/')[0]
            if used != layer and used not in ALLOWED[layer]:
                if used in PROJECT:
                    problems.append('%s:%d: %s/ may not include "%s" (docs/architecture.md)' %
                                    (rel, number, layer, header))
                continue
            if header in private and not may_include_private(rel, private[header]):
                problems.append('%s:%d: includes private "%s" (private to %s)' %
                                (rel, number, header, ', '.join(sorted(f + '/' for f in private[header]['folders']) +
                                                                  sorted(private[header]['files']))))
            if used in PROJECT:
                includes_by_dir.setdefault(os.path.dirname(rel), {}).setdefault(
                    os.path.dirname(header), '%s:%d' % (rel, number))

    targets = read_cmake(root, layers)
    if targets:
        check_links(root, targets, includes_by_dir, problems, notes)
    else:
        notes.add('skipped the link lines: no CMakeLists.txt with a library under %s' % root)

    # The known violations: reported, not failed on.
    failures, known = [], []
    for p in problems:
        key = re.sub(r':\d+:', ':', p)
        key = re.sub(r': \d+ lines \(at most \d+\)$', ': too long', key)
        key = re.sub(r' \(private to .*\)$', '', key)
        if key in KNOWN:
            known.append((p, KNOWN[key]))
        else:
            failures.append(p)
    seen_keys = {re.sub(r' \(private to .*\)$', '',
                        re.sub(r': \d+ lines \(at most \d+\)$', ': too long', re.sub(r':\d+:', ':', p)))
                 for p in problems}
    for note in sorted(notes):
        print('check-layers: %s' % note)
    for p, why in known:
        print('check-layers: known violation, to be removed (%s): %s' % (why, p))
    for key in sorted(KNOWN):
        if key not in seen_keys and os.path.exists(os.path.join(root, key.split(':')[0])):
            print('check-layers: no longer found, remove it from KNOWN: %s' % key)
    for p in failures:
        print(p)
    if failures:
        print('check-layers: %d violation(s) in %d files' % (len(failures), files))
        return 1
    print('check-layers: %d files keep the arrows of docs/architecture.md' % files)
    return 0


if __name__ == '__main__':
    sys.exit(main())
