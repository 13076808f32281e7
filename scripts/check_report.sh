#!/usr/bin/env bash
# Build a `mast report` from the bundled example traces and render it in headless Chromium.
#
# What it checks: the report builds offline (heuristic judge), every section is in the page
# Chromium parsed (--dump-dom), the page loads nothing from the network and runs no script,
# and Chromium can paint it (--screenshot). Look at the screenshot yourself: it is the
# honest test of "it renders".
#
# Usage:   scripts/check_report.sh [OUTDIR]        (default OUTDIR: ./report-check)
# Needs:   mast importable (pip install -e . or PYTHONPATH=src), matplotlib, and Chromium
#          (Debian/Ubuntu: apt-get install -y chromium). CI does not need this script.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-report-check}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
export PYTHONPATH="$here/src${PYTHONPATH:+:$PYTHONPATH}"

browser="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
if [[ -z "$browser" ]]; then
  echo "check_report: no Chromium found (apt-get install -y chromium)" >&2
  exit 2
fi

mast() { python -c 'import sys; from mast.cli import main; sys.exit(main())' "$@"; }

examples="$(python -c 'from mast.traces.datasets import examples_path; print(examples_path())')"
rm -f "$out/results.jsonl"
mast annotate "$examples" --model heuristic --no-cache -q --out "$out/results.jsonl"
mast report "$out/results.jsonl" --traces "$examples" \
  --reference "$examples/mad_human_sample.json" --reference-annotator annotator_1 \
  --bootstrap 200 --out "$out/report.html"

flags=(--headless --no-sandbox --disable-gpu --disable-background-networking
       --disable-component-update --disable-sync --no-first-run --hide-scrollbars)
# Chromium prints harmless D-Bus/GPU noise on stderr in containers: keep it in a log.
"$browser" "${flags[@]}" --dump-dom "file://$out/report.html" > "$out/dom.html" 2> "$out/chromium.log"
"$browser" "${flags[@]}" --window-size=1400,2400 --screenshot="$out/report.png" \
  "file://$out/report.html" >> "$out/chromium.log" 2>&1

status=0
for anchor in summary profiles cooccurrence outcomes agreement traces evidence excluded; do
  if ! grep -q "id=\"$anchor\"" "$out/dom.html"; then
    echo "check_report: section #$anchor missing from the rendered page" >&2
    status=1
  fi
done
images="$(grep -o 'src="data:image/png;base64,' "$out/dom.html" | wc -l)"
if [[ "$images" -lt 4 ]]; then
  echo "check_report: expected embedded figures, found $images" >&2
  status=1
fi
if grep -qiE '<script|src="https?:|href="https?:' "$out/report.html"; then
  echo "check_report: the report loads a script or an external resource" >&2
  status=1
fi
if [[ ! -s "$out/report.png" ]]; then
  echo "check_report: Chromium wrote no screenshot (see $out/chromium.log)" >&2
  status=1
fi
echo "report: $out/report.html"
echo "screenshot: $out/report.png ($images embedded figures)"
exit "$status"
