#!/usr/bin/env bash
# The report of a large plan is laid out whole: `planc report --auto` of a
# 4-stage, 16-rank plan (Llama-3-70B's layer on 2 nodes of 8 H100s, mesh
# dp 2 x pp 4 x tp 2, 16 layers so that the search takes seconds) is loaded
# in headless Chromium (Debian's `chromium`, scripts/setup.sh) with a probe
# script added that measures every SVG element as the browser laid it out;
# Chromium prints the page after the script ran (--dump-dom). Then:
#
#   - no text of any chart (stage labels, legends, ticks, axis titles)
#     reaches past its chart's box, where the browser clips it;
#   - no two texts of a chart overlap (legend entries, tick labels), the
#     schedule's own Gantt chart aside;
#   - the candidates chart shows every candidate inside its frame: none
#     piled on the border, though the plans reach more than 4x the budget;
#   - every axis with numbers has a title naming its unit ("(GiB)", "(s)"),
#     and its ticks are plain numbers ("40", "2.5"), never "0 us".
#
#   PLANC=build/bin/planc tests/e2e/report-layout.sh
#
# Without chromium the test fails (exit 2). CHROMIUM names another browser
# binary; with OUT_DIR set, the page is kept there.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PLANC=${PLANC:-$ROOT/build/bin/planc}
CHROMIUM=${CHROMIUM:-chromium}
PLAN=$ROOT/tests/lit/cost/Inputs/llama3-70b-64gpu.plan
LIMIT_S=120

if [[ ! -x $PLANC ]]; then
  echo "report-layout.sh: no planc at $PLANC (build it: scripts/build.sh)" >&2
  exit 2
fi
if ! command -v "$CHROMIUM" >/dev/null; then
  echo "report-layout.sh: FAILED: no '$CHROMIUM' browser on PATH;" \
       "install Debian's chromium (scripts/setup.sh) to run this test" >&2
  exit 2
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/planc-report-layout.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
html=$tmp/report.html probe=$tmp/probe.html

"$PLANC" report --auto "$PLAN" --dim layers=16 --set cluster.nodes=2 \
  --set 'parallel.mesh=mesh(dp = 2, pp = 4, tp = 2)' --set parallel.zero=1 -o "$html" 2>"$tmp/planc.log" || {
  echo "report-layout: FAILED: planc report exited with status $?"; cat "$tmp/planc.log"; exit 1; }
if [[ -n ${OUT_DIR:-} ]]; then mkdir -p "$OUT_DIR" && cp "$html" "$OUT_DIR"/; fi

size=$(sed -n 's/.*<meta name="planc-report-size" content="\([0-9]*,[0-9]*\)".*/\1/p' "$html")
if [[ -z $size ]]; then
  echo "report-layout: FAILED: the page has no planc-report-size meta tag"
  exit 1
fi

# The probe: each chart's box, and every text, frame and candidate in it,
# in the chart's own pixels, as JSON in a <pre> at the end of the page.
sed 's|</body>|<script>\
(function () {\
  var charts = [];\
  document.querySelectorAll("section svg").forEach(function (svg) {\
    var box = svg.getBoundingClientRect();\
    function local(r) { return [r.left - box.left, r.top - box.top, r.right - box.left, r.bottom - box.top]; }\
    var frame = svg.querySelector("rect[fill=\\"none\\"]");\
    charts.push({\
      section: svg.closest("section").id,\
      width: box.width, height: box.height,\
      frame: frame ? local(frame.getBoundingClientRect()) : null,\
      texts: Array.prototype.map.call(svg.querySelectorAll("text"), function (t) {\
        return {text: t.textContent, box: local(t.getBoundingClientRect())};\
      }),\
      candidates: Array.prototype.map.call(svg.querySelectorAll("circle"), function (c) {\
        var r = c.getBoundingClientRect();\
        return [(r.left + r.right) / 2 - box.left, (r.top + r.bottom) / 2 - box.top];\
      })\
    });\
  });\
  var pre = document.createElement("pre");\
  pre.id = "layout";\
  pre.textContent = JSON.stringify({page: document.documentElement.scrollWidth, window: window.innerWidth, charts: charts});\
  document.body.appendChild(pre);\
})();\
</script></body>|' "$html" >"$probe"

NOISE='dbus/|D-Bus|DBus|bytes written to file|unexpected operator|Fontconfig|gpu_init|viz_main|angle_platform|sandbox_linux|ALSA|pulse|GCM|Gtk|libva|ozone|CreatePlatformSocket|UPower|TensorFlow|on_device_model|^\s*$'
rc=0
timeout "$LIMIT_S" "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars \
  --force-device-scale-factor=1 --user-data-dir="$tmp/profile" --window-size="$size" \
  --dump-dom "file://$probe" >"$tmp/dom.html" 2>"$tmp/chromium.log" || rc=$?
if ((rc != 0)); then
  echo "report-layout: FAILED: chromium exited with status $rc"
  sed 's/^/  chromium: /' "$tmp/chromium.log"
  exit 1
fi
grep -vE "$NOISE" "$tmp/chromium.log" | sed 's/^/  chromium: /' || true

/usr/bin/python3 - "$tmp/dom.html" <<'PY'
import html, json, re, sys

dom = open(sys.argv[1], encoding='utf-8').read()
m = re.search(r'<pre id="layout">(.*?)</pre>', dom, re.S)
if not m:
    print('report-layout: FAILED: the probe left no measurements (did the page load?)')
    sys.exit(1)
layout = json.loads(html.unescape(m.group(1)))
bad = []
SLACK = 0.5  # px: rounding of the layout

if layout['page'] > layout['window']:
    bad.append('the page is %d px wide, wider than the %d px window' % (layout['page'], layout['window']))

def overlap(a, b):
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return w > 1 and h > 1

UNIT = r'\((B|KiB|MiB|GiB|TiB|µs|ms|s)\)'
NUMBER = re.compile(r'^[0-9]+(\.[0-9]+)?$')
BYTES = {'B': 1, 'KiB': 2**10, 'MiB': 2**20, 'GiB': 2**30, 'TiB': 2**40}
seen = set()
for chart in layout['charts']:
    name, w, h = chart['section'], chart['width'], chart['height']
    seen.add(name)
    texts = [t for t in chart['texts'] if t['text'].strip()]
    for t in texts:
        l, tp, r, b = t['box']
        if l < -SLACK or tp < -SLACK or r > w + SLACK or b > h + SLACK:
            bad.append('%s: "%s" at [%.0f, %.0f, %.0f, %.0f] leaves the %.0f x %.0f chart'
                       % (name, t['text'], l, tp, r, b, w, h))
    if name != 'schedule':
        for i in range(len(texts)):
            for j in range(i + 1, len(texts)):
                if overlap(texts[i]['box'], texts[j]['box']):
                    bad.append('%s: "%s" and "%s" overlap' % (name, texts[i]['text'], texts[j]['text']))
    if name in ('memory-time', 'frontier'):
        titles = [t['text'] for t in texts if re.search(UNIT, t['text'])]
        if len(titles) < (2 if name == 'frontier' else 1):
            bad.append('%s: axis titles with units: %s' % (name, titles))
        frame = chart['frame']
        # Tick labels: the texts beside the frame's left edge and under it.
        ticks = [t['text'] for t in texts if not re.search(UNIT, t['text']) and
                 ((t['box'][2] <= frame[0] + SLACK and frame[1] - 10 <= t['box'][1] <= frame[3]) or
                  (frame[3] <= t['box'][1] <= frame[3] + 22))]
        odd = [t for t in ticks if not NUMBER.match(t)]
        if odd or len(ticks) < 3:
            bad.append('%s: tick labels %s (want three or more plain numbers)' % (name, ticks))
    if name == 'frontier':
        l, tp, r, b = chart['frame']
        dots = chart['candidates']
        on_border = [d for d in dots if not (l + 1 < d[0] < r - 1 and tp + 1 < d[1] < b - 1)]
        print('report-layout: frontier: %d candidates, %d on the frame\'s border or outside' % (len(dots), len(on_border)))
        if not dots:
            bad.append('frontier: no candidates drawn')
        if on_border:
            bad.append('frontier: %d of %d candidates on the border or outside the frame' % (len(on_border), len(dots)))
        # The plan's candidates must reach past 4x the 80 GiB budget, or the
        # chart does not show what it is tested for.
        title = next((t['text'] for t in texts if 'peak memory' in t['text'] and re.search(UNIT, t['text'])), '')
        unit = re.search(UNIT, title).group(1) if title else 'B'
        x_ticks = [t for t in texts if frame[3] <= t['box'][1] <= frame[3] + 22 and NUMBER.match(t['text'])]
        largest = max(float(t['text']) for t in x_ticks) * BYTES.get(unit, 0) if x_ticks else 0
        print('report-layout: frontier: memory axis up to %.0f GiB' % (largest / 2**30))
        if largest <= 4 * 80 * 2**30:
            bad.append('frontier: the memory axis ends at %.0f GiB, not past 4x the budget' % (largest / 2**30))
for want in ('ledger', 'memory-time', 'schedule', 'cost', 'frontier'):
    if want not in seen:
        bad.append('no chart in section %s' % want)
print('report-layout: %d charts, %d texts measured'
      % (len(layout['charts']), sum(len(c['texts']) for c in layout['charts'])))
for b in bad[:40]:
    print('report-layout: FAILED: %s' % b)
if len(bad) > 40:
    print('report-layout: FAILED: ... and %d more' % (len(bad) - 40))
if not bad:
    print('report-layout: every chart is laid out whole')
sys.exit(1 if bad else 0)
PY
