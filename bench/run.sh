#!/usr/bin/env bash
# End-to-end benchmark of `tracelane compact` and `tracelane sweep` on generated traces,
# next to the speed-of-light baseline measured in the same run on the same file:
# decompress + compress at the same level with no processing (`zcat | gzip -L`, and
# `libdeflate-gzip -d | libdeflate-gzip -L` when installed: Debian libdeflate-tools).
#
#   bench/run.sh [--smoke] [SCRATCH_DIR]        (default SCRATCH_DIR: /tmp/tracelane-bench)
#
# Environment:
#   SIZES="50M 500M 2G"   uncompressed sizes of the generated single traces (gzip'd inputs)
#   LEVELS="1 6"          gzip levels to measure (tracelane's default is 1)
#   TREE="4 2 4 10M"      sweep tree: runs, iterations, ranks, size per rank file
#   JOBS="1 2"            sweep --jobs values
#   REPEAT=3              runs of each command; the table shows the fastest (1 with --smoke)
#   TRACELANE, TRACELANE_GEN   the binaries (default: build/tracelane, build/bench/tracelane_gen)
# Inputs are generated once into SCRATCH_DIR and reused by later runs (same seed, same
# bytes). Sizes that do not fit the free disk or memory are skipped with a note.
# --smoke: a ~2 MB trace and a tiny tree, level 1 only, plus correctness checks (compact
# succeeds, merge pairs sends with receives); seconds. Registered as ctest `bench_smoke`.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
smoke=0
if [[ ${1:-} == --smoke ]]; then smoke=1; shift; fi
dir=${1:-/tmp/tracelane-bench}
tl=${TRACELANE:-$here/../build/tracelane}
gen=${TRACELANE_GEN:-$here/../build/bench/tracelane_gen}
for b in "$tl" "$gen"; do
  [[ -x $b ]] || { echo "run.sh: $b not built (set TRACELANE / TRACELANE_GEN)" >&2; exit 2; }
done
[[ -x /usr/bin/time ]] || { echo "run.sh: needs GNU time (/usr/bin/time; Debian package time)" >&2; exit 2; }

if ((smoke)); then
  sizes=${SIZES:-2M}; levels=${LEVELS:-1}; tree=(${TREE:-1 1 2 1M}); jobs=${JOBS:-1 2}; repeat=${REPEAT:-1}
else
  sizes=${SIZES:-50M 500M 2G}; levels=${LEVELS:-1 6}; tree=(${TREE:-4 2 4 10M}); jobs=${JOBS:-1 2}; repeat=${REPEAT:-3}
fi
have_ldg=0; command -v libdeflate-gzip >/dev/null && have_ldg=1

mkdir -p "$dir"
work=$(mktemp -d "$dir/work.XXXXXX")
trap 'rm -rf "$work"' EXIT

bytes_of() {  # size text (50M, 2G) -> bytes (decimal)
  python3 -c "import sys;t=sys.argv[1].upper().rstrip('B');m={'K':1e3,'M':1e6,'G':1e9}.get(t[-1:],1);print(int(float(t.rstrip('KMG'))*m))" "$1"
}
avail_disk() { df -PB1 "$dir" | awk 'NR==2{print $4}'; }
avail_mem() { awk '/MemAvailable/{printf "%.0f\n", $2*1024}' /proc/meminfo; }

# measure CMD...: runs CMD under /usr/bin/time -v $repeat times; sets secs (the fastest
# run: on a shared, noisy machine the minimum is the least disturbed) and rss_mb (the
# largest).
measure() {
  local log=$work/time.log k t r
  secs="" rss_mb=0
  for ((k = 0; k < repeat; k++)); do
    if ! /usr/bin/time -v -o "$log" "$@" >"$work/stdout" 2>"$work/stderr"; then
      echo "run.sh: failed: $*" >&2; cat "$work/stderr" >&2; exit 1
    fi
    t=$(awk -F': ' '/Elapsed \(wall clock\)/{n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$log")
    r=$(awk -F': ' '/Maximum resident set size/{printf "%d", $2/1024}' "$log")
    if [[ -z $secs ]] || awk -v a="$t" -v b="$secs" 'BEGIN{exit !(a < b)}'; then secs=$t; fi
    if ((r > rss_mb)); then rss_mb=$r; fi
  done
}
rate() { python3 -c "import sys;b,s=float(sys.argv[1]),float(sys.argv[2]);print(f'{b/1e6/s:.0f}' if s>0 else '-')" "$1" "$2"; }
ratio() { python3 -c "import sys;a,b=float(sys.argv[1]),float(sys.argv[2]);print(f'{a/b:.2f}' if b>0 else '-')" "$1" "$2"; }

# ---- inputs (generated once) -----------------------------------------------------------
declare -A file_of bytes_in
for size in $sizes; do
  f=$dir/trace_$size.json.gz
  want=$(bytes_of "$size")
  if [[ ! -s $f || ! -s $f.bytes ]]; then
    # Room for the input (~1/10 compressed), the compacted output, and slack.
    need=$((want / 4 + 200000000))
    if (($(avail_disk) < need)); then echo "note: skipping $size: needs ~$((need / 1000000)) MB free disk in $dir" >&2; continue; fi
    echo "generating $f ..." >&2
    "$gen" --size "$want" --seed 42 --streams 256 --rank 0 --ranks 4 --out "$f" 2>"$work/gen.log"
    sed -n 's/.*, \([0-9]*\) bytes uncompressed/\1/p' "$work/gen.log" >"$f.bytes"
  fi
  # tracelane holds the input and its output in memory: ~2.5x the uncompressed size.
  if (($(avail_mem) < $(cat "$f.bytes") * 3)); then echo "note: skipping $size: not enough free memory" >&2; continue; fi
  file_of[$size]=$f
  bytes_in[$size]=$(cat "$f.bytes")
done

t_runs=${tree[0]} t_iters=${tree[1]} t_ranks=${tree[2]} t_size=${tree[3]}
tree_dir=$dir/tree_${t_runs}x${t_iters}x${t_ranks}_$t_size
if [[ ! -f $tree_dir/.bytes ]]; then
  echo "generating $tree_dir ..." >&2
  rm -rf "$tree_dir"
  "$gen" --tree "$tree_dir" --runs "$t_runs" --iterations "$t_iters" --ranks "$t_ranks" --size "$(bytes_of "$t_size")" \
    --seed 42 2>"$work/gen.log"
  awk -F', ' '{for(i=1;i<=NF;i++) if($i ~ /bytes uncompressed/){split($i,a," "); s+=a[1]}} END{print s}' \
    "$work/gen.log" >"$tree_dir/.bytes"
fi
tree_bytes=$(cat "$tree_dir/.bytes")

# ---- single traces ----------------------------------------------------------------------
echo
echo "### tracelane compact vs decompress+compress (same file, same level, same run)"
echo
hdr="| input (gzip'd) | MB uncompr. | level | tracelane s | MB/s | RSS MB | zcat\\|gzip s | MB/s | RSS MB | tl/gzip"
sep="|---|---:|---:|---:|---:|---:|---:|---:|---:|---:"
if ((have_ldg)); then
  hdr+=" | libdeflate-gzip -d\\|-L s | MB/s | RSS MB | tl/libdeflate"
  sep+="|---:|---:|---:|---:"
fi
echo "$hdr |"
echo "$sep|"
for size in $sizes; do
  [[ -n ${file_of[$size]:-} ]] || continue
  f=${file_of[$size]} b=${bytes_in[$size]}
  for level in $levels; do
    measure "$tl" compact "$f" -o "$work/out.json.gz" --overwrite --level "$level"
    tl_s=$secs tl_rss=$rss_mb
    if ((smoke)); then grep -q '"measured_slices"' "$work/stdout"; fi
    gz_level=$level; ((gz_level > 9)) && gz_level=9; ((gz_level < 1)) && gz_level=1
    measure bash -c "gzip -dc '$f' | gzip -$gz_level > /dev/null"
    gz_s=$secs gz_rss=$rss_mb
    row="| $(basename "$f") | $((b / 1000000)) | $level | $tl_s | $(rate "$b" "$tl_s") | $tl_rss | $gz_s | $(rate "$b" "$gz_s") | $gz_rss | $(ratio "$tl_s" "$gz_s")"
    if ((have_ldg)); then
      measure bash -c "libdeflate-gzip -dc < '$f' | libdeflate-gzip -$level -c > /dev/null"
      row+=" | $secs | $(rate "$b" "$secs") | $rss_mb | $(ratio "$tl_s" "$secs")"
    fi
    echo "$row |"
  done
done

# ---- sweep -------------------------------------------------------------------------------
echo
echo "### tracelane sweep over $tree_dir ($t_runs runs x $t_iters iterations x $t_ranks ranks, $((tree_bytes / 1000000)) MB uncompressed)"
echo
echo "| jobs | wall s | MB/s | peak RSS MB |"
echo "|---:|---:|---:|---:|"
for j in $jobs; do
  measure "$tl" sweep "$tree_dir" --jobs "$j" --overwrite --quiet
  echo "| $j | $secs | $(rate "$tree_bytes" "$secs") | $rss_mb |"
done

if ((smoke)); then
  # A generated iteration merges with sends paired to receives.
  it=$(find "$tree_dir" -type d -name 'iteration_*' | sort | head -1)
  "$tl" merge "$it" -o "$work/merged.json.gz" --overwrite >"$work/merge.json"
  python3 - "$work/merge.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
assert s["pp_send_recv_pairs"] > 0 and s["pp_send_recv_unmatched"] == 0, s
assert s["pp_order_source"] == "pg_config", s
print(f"smoke ok: merge pp_send_recv_pairs={s['pp_send_recv_pairs']}")
EOF
fi
