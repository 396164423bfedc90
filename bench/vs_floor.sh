#!/usr/bin/env bash
# CPU per trace against the speed-of-light floor (issue 25): `tracelane compact --jobs 1`
# and the floor (<shared>/tools/floor.cpp: read, gunzip, walk every event with simdjson,
# copy the text once, DEFLATE it in 4 MiB members, on one thread) on the same file, run
# alternately, CPU = user + system of each process (its rusage), the fastest of REPEAT each.
# Prints one table row per input and level: both CPU times, their ratio, and tracelane's
# peak RSS against the uncompressed input.
#
#   bench/vs_floor.sh TRACE...            (e.g. the corpus's mi300 trace, a generated 600 MB one)
#
# Environment: LEVELS="1 6", REPEAT=5, TRACELANE (default build/tracelane), TRACELANE_SHARED
# (default ../shared beside the checkout: the floor's source), SCRATCH (default
# /tmp/tracelane-floor: the floor's binary and the outputs).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
tl=${TRACELANE:-$here/../build/tracelane}
shared=${TRACELANE_SHARED:-$here/../../shared}
scratch=${SCRATCH:-/tmp/tracelane-floor}
levels=${LEVELS:-1 6}
repeat=${REPEAT:-5}
(($# > 0)) || { echo "usage: bench/vs_floor.sh TRACE..." >&2; exit 2; }
[[ -x $tl ]] || { echo "vs_floor.sh: $tl not built (set TRACELANE)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "vs_floor.sh: needs python3 (its rusage to the microsecond)" >&2; exit 2; }
[[ -f $shared/tools/floor.cpp ]] || { echo "vs_floor.sh: no $shared/tools/floor.cpp (set TRACELANE_SHARED)" >&2; exit 2; }
mkdir -p "$scratch"
floor=$scratch/floor
if [[ ! -x $floor || $shared/tools/floor.cpp -nt $floor ]]; then
  # The build line at the top of floor.cpp.
  g++ -O2 -march=native -std=c++20 "$shared/tools/floor.cpp" -o "$floor" -lsimdjson -l:libdeflate.a
fi

# "user+system max_rss_kib" of one run of the command, to the microsecond (the kernel's
# rusage, as wait4 reports it; GNU time rounds to 10 ms, 5% of a 0.2 s run).
cpu_of() {
  python3 -c '
import os, sys
pid = os.fork()
if pid == 0:
    fd = os.open(os.devnull, os.O_WRONLY)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print("%.4f %d" % (usage.ru_utime + usage.ru_stime, usage.ru_maxrss))
' "$@"
}

echo "| input | MB | level | tracelane CPU s | floor CPU s | ratio | tracelane RSS / input |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for trace in "$@"; do
  bytes=$(if [[ $trace == *.gz ]]; then gzip -dc "$trace"; else cat "$trace"; fi | wc -c)
  for level in $levels; do
    best_tl="" best_floor="" rss=""
    for ((r = 0; r < repeat; r++)); do
      read -r t m < <(cpu_of "$tl" compact "$trace" -o "$scratch/out.json.gz" --overwrite --jobs 1 --level "$level")
      read -r f _ < <(cpu_of "$floor" "$trace" "$level")
      if [[ -z $best_tl ]] || awk "BEGIN{exit !($t < $best_tl)}"; then best_tl=$t rss=$m; fi
      if [[ -z $best_floor ]] || awk "BEGIN{exit !($f < $best_floor)}"; then best_floor=$f; fi
    done
    awk -v name="$(basename "$trace")" -v mb="$bytes" -v level="$level" -v t="$best_tl" -v f="$best_floor" -v rss="$rss" \
      'BEGIN{ratio = f > 0 ? sprintf("**%.2fx**", t / f) : "-"
        printf "| %s | %.0f | %d | %.3f | %.3f | %s | %.2f |\n", name, mb / 1e6, level, t, f, ratio, rss * 1024 / mb}'
  done
done
rm -f "$scratch/out.json.gz"
