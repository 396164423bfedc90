#!/usr/bin/env bash
# A trace past simdjson's 4 GiB document limit, end to end: tracelane_gen writes a SIZE
# (default 5G, decimal: 5,000,000,000 bytes would be under 4 GiB, so the default is 5.5G)
# trace as ONE gzip member, `compact` reads it in chunks of whole events (SPEC 9.10),
# `restore` writes the original back, and the two decompressed texts must be md5-equal.
# Prints compact's and restore's wall, CPU and peak RSS against the uncompressed input
# (issue 25: peak RSS <= 1.5x the input).
#
#   bench/big_trace.sh [SCRATCH_DIR]        (default SCRATCH_DIR: /tmp/tracelane-big)
#
# Environment: SIZE=5.5G, JOBS=2, TRACELANE, TRACELANE_GEN (default build/...).
# Skipped loudly (exit 77) when the machine lacks the memory (1.5x SIZE plus 2 GB
# available) or SCRATCH_DIR's disk (about 1.6x SIZE: the input, the output, the restored
# copy, all gzip'd, and nothing decompressed on disk).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-/tmp/tracelane-big}
tl=${TRACELANE:-$here/../build/tracelane}
gen=${TRACELANE_GEN:-$here/../build/bench/tracelane_gen}
size=${SIZE:-5.5G}
jobs=${JOBS:-2}
for b in "$tl" "$gen"; do
  [[ -x $b ]] || { echo "big_trace.sh: $b not built (set TRACELANE / TRACELANE_GEN)" >&2; exit 2; }
done
[[ -x /usr/bin/time ]] || { echo "big_trace.sh: needs GNU time (/usr/bin/time)" >&2; exit 2; }
bytes=$(python3 -c "import sys; s=sys.argv[1]; m={'K':1e3,'M':1e6,'G':1e9}; print(int(float(s[:-1])*m[s[-1]]) if s[-1] in m else int(s))" "$size")
mkdir -p "$dir"
avail_kb=$(awk '/^MemAvailable:/{print $2}' /proc/meminfo)
need_kb=$((bytes * 3 / 2 / 1024 + 2 * 1024 * 1024))
if ((avail_kb < need_kb)); then
  echo "SKIPPED: big_trace.sh needs $((need_kb / 1024)) MB of available memory for a $size trace; this machine has $((avail_kb / 1024)) MB" >&2
  exit 77
fi
disk_kb=$(df -Pk "$dir" | awk 'NR==2{print $4}')
if ((disk_kb < bytes / 1024 * 16 / 10 / 8)); then
  echo "SKIPPED: big_trace.sh needs about $((bytes / 1024 / 1024 * 16 / 10 / 8)) MB free in $dir" >&2
  exit 77
fi

input=$dir/trace_$size.json.gz
if [[ ! -f $input ]]; then
  echo "generating $input (one gzip member) ..." >&2
  "$gen" --out "$dir/partial.json.gz" --size "$bytes" --seed 5 --level 1 --member-bytes 100G --quiet
  mv "$dir/partial.json.gz" "$input"
fi
in_md5=$(gzip -dc "$input" | tee >(wc -c >"$dir/in_bytes") | md5sum | cut -d' ' -f1)
in_bytes=$(cat "$dir/in_bytes")
((in_bytes > 4294967296)) || echo "note: the input is $in_bytes bytes, not over 4 GiB: raise SIZE" >&2

run() {  # run NAME CMD...: wall, CPU and peak RSS of one run
  local name=$1
  shift
  /usr/bin/time -f "%e %U %S %M" -o "$dir/time.txt" "$@" >/dev/null
  read -r wall user sys rss <"$dir/time.txt"
  printf "| %s | %.1f | %.1f | %d | %.2f |\n" "$name" "$wall" "$(echo "$user + $sys" | bc)" $((rss / 1024)) \
    "$(echo "$rss * 1024 / $in_bytes" | bc -l)"
}

echo "| step ($((in_bytes / 1000000)) MB uncompressed, one gzip member, --jobs $jobs) | wall s | CPU s | peak RSS MB | RSS / input |"
echo "|---|---:|---:|---:|---:|"
rm -f "$dir/out.json.gz" "$dir/restored.json.gz"
run compact "$tl" compact "$input" -o "$dir/out.json.gz" --jobs "$jobs"
run restore "$tl" restore "$dir/out.json.gz" -o "$dir/restored.json.gz"
out_md5=$(gzip -dc "$dir/restored.json.gz" | md5sum | cut -d' ' -f1)
if [[ $in_md5 == "$out_md5" ]]; then
  echo "restored md5 = original md5 ($in_md5)"
else
  echo "FAIL: restored md5 $out_md5, original $in_md5" >&2
  exit 1
fi
