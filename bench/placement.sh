#!/usr/bin/env bash
# What fetchctl's file guarantees cost a job next to curl's plain create (issue #18's CPU target):
# bench/placement.c writes 2,000 files of 16 KiB three ways (curl's: created under the final name;
# fetchctl's: unnamed, then linked into place; fetchctl's with the response cache: the cache's body
# file, fstat'ed, then linked into place), in turn, round after round, on a tmpfs, and prints each
# way's median CPU time and the difference a file. No network and no fetchctl: only the file system
# calls each way makes, as bench/compare.sh's 2,000 × 16 KiB scenario makes them.
#
#   bench/placement.sh [ROUNDS] [COUNT] [SIZE]      # defaults 25 rounds, 2000 files, 16384 bytes
#
# Needs root for bench/lib.sh's private mount namespace and tmpfs. Unnamed files are linked as
# fetchctl links them (fk_link_unnamed: by descriptor, else through /proc). Writes
# bench/results/placement.tsv.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-25}"
count="${2:-2000}"
size="${3:-16384}"

. bench/lib.sh
bench_enter "gcc:gcc" "" "$@"
bench_workspace 1g

gcc -O2 -Wall -o "$work/placement" bench/placement.c
methods=(create unnamed cached)
declare -A times
for ((round = 0; round <= rounds; round++)); do
  for method in "${methods[@]}"; do
    rm -rf "$work/out" "$work/cache"
    mkdir -p "$work/out/a/b"
    for digit in 0 1 2 3 4 5 6 7 8 9 a b c d e f; do mkdir -p "$work/cache/bodies/$digit"; done
    ms="$("$work/placement" "$method" "$work/out/a/b" "$work/cache" "$count" "$size")"
    [ "$(find "$work/out/a/b" -type f | wc -l)" -eq "$count" ] || { echo "$method wrote the wrong number of files" >&2; exit 1; }
    # Round 0 warms the page allocator and the dentry cache; it is not counted.
    [ "$round" -gt 0 ] && times[$method]+="$ms "
  done
done

python3 - "$count" "$size" "$results/placement.tsv" "${times[create]}" "${times[unnamed]}" "${times[cached]}" <<'PY'
import statistics, sys
count, size, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
names = ["create (curl)", "unnamed + link (fetchctl)", "cache body + fstat + link (fetchctl, cache on)"]
medians = [statistics.median(float(x) for x in column.split()) for column in sys.argv[4:7]]
rows = ["method\tCPU ms\tµs a file\tµs a file over create"]
print(f"{count} files of {size} bytes, median CPU of the rounds:")
for name, ms in zip(names, medians):
    per = ms * 1000 / count
    over = (ms - medians[0]) * 1000 / count
    print(f"  {name:50} {ms:8.2f} ms  {per:6.2f} µs a file  {over:+5.2f} µs over create")
    rows.append(f"{name}\t{ms:.2f}\t{per:.2f}\t{over:+.2f}")
open(out, "w").write("\n".join(rows) + "\n")
PY
