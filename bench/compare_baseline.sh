#!/usr/bin/env bash
# End-to-end: `tracelane compact` vs the decompress+compress baseline on the same file at
# the same gzip level, measured in the same run. Usage: bench/compare_baseline.sh LEVEL FILE...
set -euo pipefail
tracelane=${TRACELANE:-$(dirname "$0")/../build/tracelane}
level=$1; shift
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
printf '%-45s %10s %12s %12s %12s %12s %7s\n' file MB_in tl_s tl_RSS_MB base_s base_RSS_MB ratio
for f in "$@"; do
  mb=$(python3 -c "import gzip,sys;d=open(sys.argv[1],'rb').read();print(round(len(gzip.decompress(d) if d[:2]==b'\x1f\x8b' else d)/1e6,1))" "$f")
  /usr/bin/time -f '%e %M' -o "$out/tl" "$tracelane" compact "$f" -o "$out/x.json.gz" --overwrite --level "$level" >/dev/null
  cat_cmd=zcat; [[ "$f" == *.gz ]] || cat_cmd=cat
  /usr/bin/time -f '%e %M' -o "$out/base" bash -c "$cat_cmd '$f' | gzip -$level -N > /dev/null"
  read -r ts trss < "$out/tl"; read -r bs brss < "$out/base"
  printf '%-45s %10s %12s %12s %12s %12s %7.2f\n' "$(basename "$f")" "$mb" "$ts" "$((trss/1024))" "$bs" "$((brss/1024))" \
    "$(python3 -c "print($ts/$bs if $bs>0 else 0)")"
done
