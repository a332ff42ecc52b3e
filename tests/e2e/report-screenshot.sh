#!/usr/bin/env bash
# `planc report --auto` writes one self-contained HTML page that a browser
# renders: for a 4-stage pipeline plan (tests/lit/emit/Inputs/pipeline.plan,
# dp 1 x pp 4 x tp 2 on 8 CPU ranks), the page is loaded in headless
# Chromium (Debian's `chromium`, installed by scripts/setup.sh) with the
# window size the page asks for (its planc-report-size meta tag) and
# screenshot. The page must need no network (no URL but the SVG namespace),
# hold every section (summary, ledger, memory-time, schedule, comm, cost,
# frontier), and the screenshot must show each: the colour each section names
# in its data-check-colour attribute (a bar, a line, a box, a table header, the
# chosen plan's marker) must cover more than MIN_PIXELS pixels.
#
#   PLANC=build/bin/planc tests/e2e/report-screenshot.sh
#
# Without chromium the test fails (exit 2). CHROMIUM names another browser
# binary; with OUT_DIR set, the page and the screenshot are kept there.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PLANC=${PLANC:-$ROOT/build/bin/planc}
CHROMIUM=${CHROMIUM:-chromium}
PLAN=$ROOT/tests/lit/emit/Inputs/pipeline.plan
MIN_PIXELS=100
LIMIT_S=60
SECTIONS="summary ledger memory-time schedule comm cost frontier"

if [[ ! -x $PLANC ]]; then
  echo "report-screenshot.sh: no planc at $PLANC (build it: scripts/build.sh)" >&2
  exit 2
fi
if ! command -v "$CHROMIUM" >/dev/null; then
  echo "report-screenshot.sh: FAILED: no '$CHROMIUM' browser on PATH;" \
       "install Debian's chromium (scripts/setup.sh) to run this test" >&2
  exit 2
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/planc-report-shot.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
html=$tmp/report.html png=$tmp/report.png

"$PLANC" report --auto "$PLAN" -o "$html" 2>"$tmp/planc.log" || {
  echo "report-screenshot: FAILED: planc report exited with status $?"; cat "$tmp/planc.log"; exit 1; }

size=$(sed -n 's/.*<meta name="planc-report-size" content="\([0-9]*,[0-9]*\)".*/\1/p' "$html")
if [[ -z $size ]]; then
  echo "report-screenshot: FAILED: the page has no planc-report-size meta tag"
  exit 1
fi

NOISE='dbus/|D-Bus|DBus|bytes written to file|unexpected operator|Fontconfig|gpu_init|viz_main|angle_platform|sandbox_linux|ALSA|pulse|GCM|Gtk|libva|ozone|CreatePlatformSocket|UPower|TensorFlow|on_device_model|^\s*$'
rc=0
timeout "$LIMIT_S" "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars \
  --force-device-scale-factor=1 --user-data-dir="$tmp/profile" \
  --screenshot="$png" --window-size="$size" "file://$html" >"$tmp/chromium.log" 2>&1 || rc=$?
if ((rc != 0)); then
  echo "report-screenshot: FAILED: chromium exited with status $rc"
  sed 's/^/  chromium: /' "$tmp/chromium.log"
  exit 1
fi
grep -vE "$NOISE" "$tmp/chromium.log" | sed 's/^/  chromium: /' || true
if [[ -n ${OUT_DIR:-} ]]; then mkdir -p "$OUT_DIR" && cp "$html" "$png" "$OUT_DIR"/; fi

E2E_DIR="$ROOT/tests/e2e" /usr/bin/python3 - "$html" "$png" "$size" "$MIN_PIXELS" "$SECTIONS" <<'PY'
import os, re, sys
sys.path.insert(0, os.environ['E2E_DIR'])
from png_pixels import PngError, read_png, count

html_path, png_path, size, min_pixels, sections = sys.argv[1:]
want_w, want_h = map(int, size.split(','))
min_pixels = int(min_pixels)
page = open(html_path, encoding='utf-8').read()
bad = []

urls = set(re.findall(r'(?:https?|ftp)://[^\s"\'<>)]+', page)) - {'http://www.w3.org/2000/svg'}
if urls:
    bad.append('the page refers to the network: %s' % ', '.join(sorted(urls)))
if re.search(r'<(script|link|img|iframe)\b', page):
    bad.append('the page loads something (script, link, img or iframe)')

colours = dict(re.findall(r'<section id="([a-z-]+)" data-check-colour="(#[0-9a-f]{6})"', page))
for s in sections.split():
    if s not in colours:
        bad.append('no section "%s"' % s)

try:
    w, h, histogram = read_png(png_path)
except PngError as e:
    print('report-screenshot: FAILED: %s' % e)
    sys.exit(1)
if (w, h) != (want_w, want_h):
    bad.append('screenshot is %dx%d, asked for %dx%d' % (w, h, want_w, want_h))
white = count(histogram, (255, 255, 255), tol=0)
print('report-screenshot: %dx%d PNG, %d colours, %.1f%% white' % (w, h, len(histogram), 100.0 * white / (w * h)))
for section, colour in sorted(colours.items()):
    rgb = tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))
    n = count(histogram, rgb)
    print('  %-12s %s %8d pixels' % (section, colour, n))
    if n <= min_pixels:
        bad.append('section %s: its colour %s covers %d pixels, want > %d' % (section, colour, n, min_pixels))
for b in bad:
    print('report-screenshot: FAILED: %s' % b)
if not bad:
    print('report-screenshot: every section renders')
sys.exit(1 if bad else 0)
PY
