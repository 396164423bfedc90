#!/usr/bin/env bash
# What a sweep row costs in memory: peak RSS of `tracelane sweep --jobs 1` over trees of
# SMALL and LARGE one-rank iterations (a ~600-byte trace each, so the traces themselves
# cost next to nothing), and the slope between them, (RSS(LARGE) - RSS(SMALL)) / (LARGE -
# SMALL): the bytes each more row keeps until the report is written. Issue 25's target
# is under 4 KB per row.
#
#   bench/sweep_rows.sh [SCRATCH_DIR]       (default SCRATCH_DIR: /tmp/tracelane-rows)
#
# Environment: ROWS="2000 20000" (SMALL LARGE), REPEAT=1 (sweeps of each tree; the table
# keeps the smallest peak), TRACELANE (default build/tracelane).
# The trees are made once into SCRATCH_DIR and reused; each sweep runs with --overwrite so
# that every row is compacted again.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-/tmp/tracelane-rows}
tl=${TRACELANE:-$here/../build/tracelane}
read -r small large <<<"${ROWS:-2000 20000}"
repeat=${REPEAT:-1}
[[ -x $tl ]] || { echo "sweep_rows.sh: $tl not built (set TRACELANE)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "sweep_rows.sh: needs GNU time (/usr/bin/time)" >&2; exit 2; }
((large > small)) || { echo "sweep_rows.sh: ROWS needs SMALL < LARGE" >&2; exit 2; }
mkdir -p "$dir"

make_tree() {  # make_tree N: DIR/tree_N with N iterations of one rank each
  local root=$dir/tree_$1
  [[ -f $root/.complete ]] && return 0
  rm -rf "$root"
  python3 - "$root" "$1" <<'EOF'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
trace = ('{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "GPU"}], '
         '"distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": [\n'
         '{"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 100.0, "dur": 5.0, '
         '"args": {"device": 0, "stream": 7, "correlation": 1}},\n'
         '{"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 9, "ts": 200.0, "dur": 5.0, '
         '"args": {"device": 0, "stream": 9, "correlation": 2}},\n'
         '{"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": "stream 7"}},\n'
         '{"ph": "M", "name": "thread_name", "pid": 0, "tid": 9, "args": {"name": "stream 9"}}\n]}\n')
# torchtitan's layout: outputs/<run>/profile_trace/iteration_N/rank0_trace.json, 1000
# iterations per run.
for i in range(n):
    d = os.path.join(root, f"run{i // 1000}", "profile_trace", f"iteration_{i % 1000}")
    os.makedirs(d)
    with open(os.path.join(d, "rank0_trace.json"), "w") as f:
        f.write(trace)
EOF
  touch "$root/.complete"
}

peak_kb() {  # peak_kb N: the smallest peak RSS (KB) of REPEAT sweeps of tree_N
  local best="" kb
  for ((r = 0; r < repeat; r++)); do
    /usr/bin/time -f "%M" -o "$dir/time.txt" "$tl" sweep "$dir/tree_$1" --jobs 1 --overwrite --quiet \
      --report-dir "$dir/report_$1" >/dev/null
    kb=$(tail -n 1 "$dir/time.txt")
    [[ -z $best || $kb -lt $best ]] && best=$kb
  done
  echo "$best"
}

for n in "$small" "$large"; do make_tree "$n"; mkdir -p "$dir/report_$n"; done
rss_small=$(peak_kb "$small")
rss_large=$(peak_kb "$large")
per_row=$(((rss_large - rss_small) * 1024 / (large - small)))
echo "| rows | peak RSS |"
echo "|---:|---:|"
echo "| $small | $((rss_small / 1024)) MB |"
echo "| $large | $((rss_large / 1024)) MB |"
echo "per row: $per_row bytes ((RSS($large) - RSS($small)) / $((large - small)); target < 4096)"
