#!/usr/bin/env bash
# `planc emit --emit=schedule-svg` draws a Gantt chart that a browser renders:
# for p = 4 pipeline ranks and m = 8 micro-batches, under each schedule (gpipe,
# 1f1b, interleaved with v = 2, zero_bubble), the .svg file is loaded directly
# in headless Chromium (Debian's `chromium`, installed by scripts/setup.sh) and
# screenshot. The PNG must exist, be a valid PNG of the SVG's width x height
# (the window size asked for), and show the chart: every box colour the SVG
# uses (forward, backward, weight gradient, send / recv, idle; a fill-opacity
# below 1 composited over the white page) must cover more than MIN_PIXELS
# pixels. The PNG is decoded with Python's standard library only
# (tests/e2e/png_pixels.py).
#
#   PLANC=build/bin/planc tests/e2e/schedule-svg-screenshot.sh
#
# Without chromium the test fails (exit 2). CHROMIUM names another browser
# binary. With OUT_DIR set, the zero_bubble screenshot is kept there as
# schedule-svg-zero_bubble.png. Chromium's harmless stderr noise (no D-Bus in a
# container, ...) is filtered out; the rest is shown.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PLANC=${PLANC:-$ROOT/build/bin/planc}
CHROMIUM=${CHROMIUM:-chromium}
PLAN=$ROOT/tests/lit/emit/Inputs/pipeline.plan   # 8 layers: pp x v = 4 x 2 divides them
MIN_PIXELS=100
LIMIT_S=60

if [[ ! -x $PLANC ]]; then
  echo "schedule-svg-screenshot.sh: no planc at $PLANC (build it: scripts/build.sh)" >&2
  exit 2
fi
if ! command -v "$CHROMIUM" >/dev/null; then
  echo "schedule-svg-screenshot.sh: FAILED: no '$CHROMIUM' browser on PATH;" \
       "install Debian's chromium (scripts/setup.sh) to run this test" >&2
  exit 2
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/planc-svg-shot.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Lines Chromium prints on a headless machine without a session bus or GPU.
NOISE='dbus/|D-Bus|DBus|bytes written to file|unexpected operator|Fontconfig|gpu_init|viz_main|angle_platform|sandbox_linux|ALSA|pulse|GCM|Gtk|libva|ozone|CreatePlatformSocket|UPower|TensorFlow|on_device_model|^\s*$'

schedules=(
  'gpipe=gpipe(micro_batches = 8)'
  '1f1b=1f1b(micro_batches = 8)'
  'interleaved=interleaved(v = 2, micro_batches = 8)'
  'zero_bubble=zero_bubble(micro_batches = 8)'
)

failures=0
for entry in "${schedules[@]}"; do
  name=${entry%%=*} pipeline=${entry#*=}
  svg=$tmp/$name.svg png=$tmp/$name.png
  "$PLANC" emit "$PLAN" --emit=schedule-svg \
    --set parallel.mesh.pp=4 --set "parallel.pipeline=$pipeline" >"$svg"

  # The window is the SVG's own size, so the screenshot shows all of it.
  size=$(/usr/bin/python3 - "$svg" <<'PY'
import sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
    print('%d,%d' % (round(float(root.get('width'))), round(float(root.get('height')))))
except Exception as e:
    print('schedule-svg-screenshot: %s: no width and height: %s' % (sys.argv[1], e), file=sys.stderr)
    sys.exit(1)
PY
  ) || { echo "$name: FAILED: cannot read the SVG's size"; failures=$((failures + 1)); continue; }

  rc=0
  timeout "$LIMIT_S" "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --force-device-scale-factor=1 --user-data-dir="$tmp/profile-$name" \
    --screenshot="$png" --window-size="$size" "file://$svg" \
    >"$tmp/chromium-$name.log" 2>&1 || rc=$?
  if ((rc != 0)); then
    echo "$name: FAILED: chromium exited with status $rc"
    sed 's/^/  chromium: /' "$tmp/chromium-$name.log"
    failures=$((failures + 1))
    continue
  fi
  grep -vE "$NOISE" "$tmp/chromium-$name.log" | sed 's/^/  chromium: /' || true

  if ! E2E_DIR="$ROOT/tests/e2e" /usr/bin/python3 - "$name" "$svg" "$png" "$size" "$MIN_PIXELS" <<'PY'
import os, sys
import xml.etree.ElementTree as ET
sys.path.insert(0, os.environ['E2E_DIR'])
from png_pixels import PngError, read_png, count as count_in

name, svg_path, png_path, size, min_pixels = sys.argv[1:]
want_w, want_h = map(int, size.split(','))
min_pixels = int(min_pixels)
SVG = '{http://www.w3.org/2000/svg}'

def fail(msg):
    print('%s: FAILED: %s' % (name, msg))
    sys.exit(1)

# --- the colours the SVG draws its boxes in --------------------------------
BOX_CLASSES = ('forward', 'backward', 'weight-gradient', 'communication', 'idle')
REQUIRED = {'forward', 'backward', 'communication', 'idle'}
if name == 'zero_bubble':
    REQUIRED.add('weight-gradient')
root = ET.parse(svg_path).getroot()
colours = {}  # (class, '#rrggbb', opacity) -> expected RGB on the white page
for rect in root.iter(SVG + 'rect'):
    cls = rect.get('class')
    if cls not in BOX_CLASSES:
        continue
    fill = rect.get('fill', '')
    if len(fill) != 7 or not fill.startswith('#'):
        fail('%s box with fill %r, not #rrggbb' % (cls, fill))
    alpha = float(rect.get('fill-opacity', '1')) * float(rect.get('opacity', '1'))
    rgb = tuple(int(fill[i:i + 2], 16) for i in (1, 3, 5))
    colours[(cls, fill, alpha)] = tuple(round(c * alpha + 255 * (1 - alpha)) for c in rgb)
missing = REQUIRED - {cls for cls, _, _ in colours}
if missing:
    fail('the SVG has no %s boxes' % ', '.join(sorted(missing)))

# --- the PNG (tests/e2e/png_pixels.py) ---------------------------------------
try:
    w, h, histogram = read_png(png_path)
except PngError as e:
    fail(str(e))
if (w, h) != (want_w, want_h):
    fail('screenshot is %dx%d, asked for %dx%d' % (w, h, want_w, want_h))

def count(rgb, tol=3):
    return count_in(histogram, rgb, tol)

white = count((255, 255, 255), tol=0)
print('%s: %dx%d PNG, %d colours, %.1f%% white' % (name, w, h, len(histogram), 100.0 * white / (w * h)))
bad = []
for (cls, fill, alpha), rgb in sorted(colours.items()):
    n = count(rgb)
    print('  %-16s %s opacity %-4g -> rgb%-16s %6d pixels' % (cls, fill, alpha, rgb, n))
    if n <= min_pixels:
        bad.append('%s (%s, opacity %g): %d pixels, want > %d' % (cls, fill, alpha, n, min_pixels))
if white == w * h:
    bad.append('the screenshot is blank')
for b in bad:
    print('%s: FAILED: %s' % (name, b))
sys.exit(1 if bad else 0)
PY
  then
    failures=$((failures + 1))
    continue
  fi
  if [[ $name == zero_bubble && -n ${OUT_DIR:-} ]]; then
    mkdir -p "$OUT_DIR"
    cp "$png" "$OUT_DIR/schedule-svg-$name.png"
    echo "  kept $OUT_DIR/schedule-svg-$name.png"
  fi
done

if ((failures)); then
  echo "schedule-svg-screenshot: $failures of ${#schedules[@]} schedules FAILED"
  exit 1
fi
echo "schedule-svg-screenshot: all ${#schedules[@]} schedules render"
