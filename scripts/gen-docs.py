#!/usr/bin/env python3
"""Regenerates the sample outputs and numbers of the docs from the built planc.

    gen-docs.py --check [--build DIR] [FILE.md...]   compare; exit 1 with a diff per stale region
    gen-docs.py --write [--build DIR] [FILE.md...]   rewrite the stale regions in place

A region of a markdown file is the output of a command, between two comments:

    <!-- generated: planc check examples/tiny-gpt.plan -->
    ```
    (what the command prints)
    ```
    <!-- end generated -->

Options go before the colon, separated by commas:

    exit N        the command must exit with status N (default 0), e.g. a plan with errors
    fence LANG    the output goes in a ```LANG block (a plan's text: fence plan)
    markdown      the output is markdown (a table, a sentence) and goes in as it is
    prompt        the block starts with the command itself, as `$ COMMAND`

The command may span lines up to `-->` (they are joined with spaces) and runs in
bash from the repository root, with the build's bin/ first on PATH (so `planc`
is the built driver), stdout and stderr together, no colours, and no terminal.
Paths in commands are relative to the root, so the output is the same in
every checkout; an output that names the root or the build folder is an error.
Helpers that turn several runs into one table live in docs/gen/.

Without FILE arguments every docs/*.md is read. tests/lit/docs/generated.test
runs --check, so a change of planc's output that the docs do not follow fails
the suite: rerun with --write and commit the docs.
"""
import argparse
import concurrent.futures
import difflib
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
BEGIN = re.compile(r'<!-- generated(?P<options>[^:]*):(?P<command>.*?)-->', re.S)
END = '<!-- end generated -->'
# A command that takes longer is a doc that makes the suite slow: say so.
TIMEOUT_S = 300


def progress_lines():
    """planc's progress lines (scripts/progress-lines.ere), each with its
    newline: they depend on the machine's speed, so are never part of a doc."""
    with open(os.path.join(ROOT, 'scripts', 'progress-lines.ere')) as f:
        patterns = [line.rstrip('\n') for line in f if line.strip() and not line.startswith('#')]
    return re.compile('|'.join('(?:%s)' % p for p in patterns) + r'\n?', re.M)


PROGRESS = progress_lines()


class Region:
    """One generated region: where it is, what makes it, what it holds now."""

    def __init__(self, path, line, command, options, start, end):
        self.path, self.line, self.command = path, line, command
        self.start, self.end = start, end  # the text between the two comments: [start, end)
        self.exit, self.fence, self.markdown, self.prompt = 0, '', False, False
        for option in filter(None, (o.strip() for o in options.split(','))):
            words = option.split()
            if words[0] == 'exit' and len(words) == 2 and words[1].isdigit():
                self.exit = int(words[1])
            elif words[0] == 'fence' and len(words) == 2:
                self.fence = words[1]
            elif words == ['markdown']:
                self.markdown = True
            elif words == ['prompt']:
                self.prompt = True
            else:
                raise ValueError('%s:%d: unknown option %r of a generated region' % (path, line, option))

    def where(self):
        return '%s:%d' % (os.path.relpath(self.path, ROOT), self.line)

    def render(self, output):
        """The region's text for this output of its command."""
        if self.prompt:
            output = '$ %s\n%s' % (self.command, output)
        if output and not output.endswith('\n'):
            output += '\n'
        if self.markdown:
            # Blank lines around it: a table or paragraph, never part of the comments' lines.
            return '\n\n%s\n' % output
        return '\n```%s\n%s```\n' % (self.fence, output)


def find_regions(path, text):
    regions, pos = [], 0
    while True:
        m = BEGIN.search(text, pos)
        if not m:
            return regions
        line = text.count('\n', 0, m.start()) + 1
        end = text.find(END, m.end())
        if end < 0:
            raise ValueError('%s:%d: a generated region without %s' % (path, line, END))
        command = ' '.join(m.group('command').split())
        regions.append(Region(path, line, command, m.group('options'), m.end(), end))
        pos = end + len(END)


def run(region, env, build):
    """The command's output, or raises ValueError saying what went wrong."""
    proc = subprocess.run(['bash', '-c', region.command], cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=TIMEOUT_S)
    output = PROGRESS.sub('', proc.stdout.decode('utf-8', 'replace'))
    if proc.returncode != region.exit:
        raise ValueError('%s: `%s` exited with %d, not %d:\n%s' %
                         (region.where(), region.command, proc.returncode, region.exit, output[-2000:]))
    for place in (build, ROOT):
        if place in output:
            raise ValueError('%s: `%s` prints the path %s: use paths relative to the repository root' %
                             (region.where(), region.command, place))
    return output


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument('--check', action='store_true', help='compare and report stale regions')
    mode.add_argument('--write', action='store_true', help='rewrite stale regions')
    parser.add_argument('--build', default=os.environ.get('PLANC_BUILD_DIR', os.path.join(ROOT, 'build')),
                        help='the build folder whose bin/planc runs (default: build/)')
    parser.add_argument('files', nargs='*', help='markdown files (default: docs/*.md)')
    args = parser.parse_args()

    build = os.path.abspath(args.build)
    if not os.path.exists(os.path.join(build, 'bin', 'planc')):
        print('gen-docs: no %s/bin/planc: build planc first (scripts/build.sh planc)' % build, file=sys.stderr)
        return 2
    env = {k: v for k, v in os.environ.items() if k not in ('TERM', 'PLANC_VERIFY_EACH', 'CLICOLOR_FORCE')}
    env.update(PATH=os.path.join(build, 'bin') + os.pathsep + env.get('PATH', ''), NO_COLOR='1', LC_ALL='C',
               PLANC_BUILD_DIR=build)

    files = args.files or sorted(os.path.join(ROOT, 'docs', f) for f in os.listdir(os.path.join(ROOT, 'docs'))
                                 if f.endswith('.md'))
    texts, regions = {}, []
    try:
        for path in files:
            path = os.path.abspath(path)
            with open(path, encoding='utf-8') as f:
                texts[path] = f.read()
            regions += find_regions(path, texts[path])
    except ValueError as e:
        print('gen-docs: %s' % e, file=sys.stderr)
        return 1

    # The commands are independent: run them side by side.
    problems, rendered = [], {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        futures = {pool.submit(run, r, env, build): r for r in regions}
        for future in concurrent.futures.as_completed(futures):
            region = futures[future]
            try:
                rendered[region] = region.render(future.result())
            except (ValueError, subprocess.TimeoutExpired) as e:
                problems.append(str(e))

    stale = []
    for path in files:
        path = os.path.abspath(path)
        text, pieces, pos = texts[path], [], 0
        for region in (r for r in regions if r.path == path and r in rendered):
            old, new = text[region.start:region.end], rendered[region]
            if old != new:
                stale.append(region)
                if args.check:
                    diff = difflib.unified_diff(old.split('\n'), new.split('\n'), 'in the doc', 'planc prints now',
                                                lineterm='')
                    problems.append('%s: the region of `%s` is stale:\n%s' %
                                    (region.where(), region.command, '\n'.join(diff)))
            pieces += [text[pos:region.start], new]
            pos = region.end
        pieces.append(text[pos:])
        if args.write and ''.join(pieces) != text:
            with open(path, 'w', encoding='utf-8') as f:
                f.write(''.join(pieces))

    for p in problems:
        print('gen-docs: %s' % p)
    verb = 'rewrote' if args.write else 'found stale'
    print('gen-docs: %d region(s) in %d file(s); %s %d; %d error(s)%s' %
          (len(regions), len(files), verb, len(stale), len(problems),
           ' (rerun scripts/gen-docs.py --write and commit the docs)' if args.check and stale else ''))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
