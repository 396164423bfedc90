#!/usr/bin/env bash
# The decompressed outputs of compact, merge and sweep on the whole corpus, as one md5 a
# file: run it with the binary before and after a change and diff the two listings (every
# change that is not meant to change output must leave them equal).
#   bench/output_md5.sh [TRACELANE] > before.txt   (default: build/tracelane)
#   bench/output_md5.sh --normalise-tids [TRACELANE]   tids and args.stream renumbered in order
#       of first appearance first (bench/normalise_tids.py): compares outputs whose track
#       tids changed (SPEC 9.11) in every other byte.
# TRACELANE_ARGS, when set, is added to every compact, merge and sweep, e.g.
#   TRACELANE_ARGS=--no-restore-data bench/output_md5.sh build/tracelane
# lists what a build before restore data (SPEC 9.12) lists without the variable.
# TRACELANE_BIG_TRACE=FILE adds the compaction of one large trace (a generated 500 MB one:
#   build/bench/tracelane_gen --out /tmp/trace_500M.json --size 500000000 --seed 7).
# The corpus comes from TRACELANE_SHARED (default ../shared beside the checkout).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
normalise=cat
if [ "${1:-}" = "--normalise-tids" ]; then normalise="python3 $here/bench/normalise_tids.py"; shift; fi
tracelane=$(realpath "${1:-$here/build/tracelane}")
shared=${TRACELANE_SHARED:-$here/../shared}
[ -d "$shared/corpus" ] || { echo "SKIPPED: no corpus at $shared (set TRACELANE_SHARED)" >&2; exit 2; }
read -r -a extra <<< "${TRACELANE_ARGS:-}"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
md5_of() { if [[ "$1" == *.gz ]]; then gzip -dc "$1"; else cat "$1"; fi | $normalise | md5sum | cut -d' ' -f1; }
for trace in "$shared"/corpus/single/*; do
  name=$(basename "$trace")
  out="$work/${name%%.*}_compacted.json.gz"
  if "$tracelane" compact "$trace" -o "$out" ${extra[@]+"${extra[@]}"} >/dev/null 2>&1; then
    echo "compact $name $(md5_of "$out")"
  else
    echo "compact $name failed rc=$?"
  fi
done
mkdir "$work/pp4" && cp "$shared"/golden/pp4/rank*_trace.json* "$work/pp4/"
"$tracelane" merge "$work/pp4" ${extra[@]+"${extra[@]}"} >/dev/null
echo "merge pp4 $(md5_of "$work/pp4/pp_traces_merged_compacted.json.gz")"
cp -r "$shared/corpus/sweep_tree" "$work/tree" && chmod -R u+w "$work/tree"
"$tracelane" sweep "$work/tree" --quiet --jobs 2 ${extra[@]+"${extra[@]}"} || true
(cd "$work/tree" && find . -name '*_compacted.json*' | LC_ALL=C sort | while read -r f; do echo "sweep $f $(md5_of "$f")"; done)
if [ -n "${TRACELANE_BIG_TRACE:-}" ]; then
  "$tracelane" compact "$TRACELANE_BIG_TRACE" -o "$work/big_compacted.json.gz" ${extra[@]+"${extra[@]}"} >/dev/null
  echo "compact $(basename "$TRACELANE_BIG_TRACE") $(md5_of "$work/big_compacted.json.gz")"
fi
