#!/usr/bin/env bash
# The HTML report with a big sweep (issue 12): a generated report of 2,000 iterations x 8
# ranks with timelines, drawn by `tracelane report --html`, then opened in headless
# Chromium. Prints the page size, the time tracelane takes to write it, and the time the
# page takes to draw (performance.now() when its script is done: from navigation start,
# parsing the file included), lazily (as a person opens it) and with every iteration
# section filled (?all). Not a test; the goal is < 3 s and < ~15 MB.
#
#   bench/html_report.sh build/tracelane [SCRATCH_DIR] [ITERATIONS] [RANKS]
set -euo pipefail
tracelane=$(realpath "$1")
scratch=${2:-/tmp/tracelane-html-bench}
iterations=${3:-2000}
ranks=${4:-8}
chromium=${TRACELANE_CHROMIUM:-chromium}
here=$(dirname "$(realpath "$0")")
mkdir -p "$scratch"
report="$scratch/report_${iterations}x${ranks}.json"
page="$scratch/report_${iterations}x${ranks}.html"
[ -f "$report" ] || python3 "$here/gen_html_report.py" "$report" --iterations "$iterations" --ranks "$ranks"
start=$(date +%s.%N)
"$tracelane" report --html "$report" -o "$page" --quiet
end=$(date +%s.%N)
echo "report: $(stat -c %s "$report") bytes; page: $(stat -c %s "$page") bytes; report --html: $(echo "$end - $start" | bc) s"
for query in "" "?all"; do
  profile=$(mktemp -d)
  start=$(date +%s.%N)
  dom=$("$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --user-data-dir="$profile" --virtual-time-budget=60000 \
    --dump-dom "file://$page$query" 2>/dev/null)
  end=$(date +%s.%N)
  rm -rf "$profile"
  state=$(grep -o 'data-state="[a-z]*"' <<<"$dom" | head -1)
  drawn=$(grep -o 'data-render-ms="[0-9]*" data-script-ms="[0-9]*"' <<<"$dom" | head -1)
  errors=$(grep -c '<body[^>]*data-js-error' <<<"$dom" || true)
  echo "chromium${query:+ $query}: $state $drawn (ms from navigation start; of which the script), script errors: $errors," \
       "whole chromium run $(echo "$end - $start" | bc) s"
done
