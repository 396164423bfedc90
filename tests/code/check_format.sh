#!/usr/bin/env bash
# Every C++ source of the repository is formatted as .clang-format says, by clang-format 14
# (Debian 12's; another version formats some constructs differently, so it is not used).
#   tests/code/check_format.sh [REPO_ROOT]          exit 1 listing the files that differ
#   tests/code/check_format.sh --fix [REPO_ROOT]    format them in place
# Exit 77 (a skip for ctest), saying why, when clang-format 14 is not installed.
set -euo pipefail
fix=0
if [ "${1:-}" = "--fix" ]; then fix=1; shift; fi
root=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
format=""
for candidate in clang-format-14 clang-format; do
  if command -v "$candidate" >/dev/null 2>&1 && "$candidate" --version | grep -q "version 14\."; then
    format=$candidate
    break
  fi
done
if [ -z "$format" ]; then
  echo "SKIPPED: clang-format 14 not found (apt-get install clang-format-14); the format is not checked"
  exit 77
fi
cd "$root"
mapfile -t files < <(find src include tests bench -name '*.cpp' -o -name '*.hpp' -o -name '*.h' | LC_ALL=C sort)
if [ "$fix" = 1 ]; then
  "$format" -i "${files[@]}"
  exit 0
fi
differ=()
for file in "${files[@]}"; do
  "$format" --dry-run --Werror "$file" >/dev/null 2>&1 || differ+=("$file")
done
if [ ${#differ[@]} -gt 0 ]; then
  printf '%s\n' "${differ[@]}"
  echo "${#differ[@]} of ${#files[@]} files are not formatted as .clang-format says: tests/code/check_format.sh --fix"
  exit 1
fi
echo "check_format: ${#files[@]} files formatted as .clang-format says ($format)"
