#!/usr/bin/env bash
# Times `fetchctl run` on many small saves against fetchctl's own test server (127.0.0.1), next to
# `curl --parallel --parallel-max N` fetching the same URLs into the same kind of directory.
# Outputs go to a tmpfs (/dev/shm) so file creation on disk doesn't hide the clients' cost.
#
#   bench/run.sh [FILES] [SIZE] [CONCURRENCY] [RUNS]     defaults: 2000 16384 16 5
#
# Prints, per tool, the median wall time and the median peak RSS over RUNS runs (/usr/bin/time -v).
set -euo pipefail
cd "$(dirname "$0")/.."
files="${1:-2000}"; size="${2:-16384}"; concurrency="${3:-16}"; runs="${4:-5}"

source bench/lib.sh

# The same URLs for both tools. per_host = concurrency, as curl --parallel-max opens that many.
{
  echo "version: 1"
  echo "settings: {concurrency: $concurrency, per_host: $concurrency, output_dir: out}"
  echo "jobs:"
  echo "  - id: f"
  echo "    url: \"$base/bytes/$size?seed={{matrix.n}}\""
  echo "    matrix: {n: [$(seq -s, 0 $((files - 1)))]}"
  echo "    save: \"{{matrix.n}}.bin\""
} > "$work/jobs.yaml"
for n in $(seq 0 $((files - 1))); do
  printf 'url = "%s/bytes/%s?seed=%s"\noutput = "%s/out/%s.bin"\n' "$base" "$size" "$n" "$work" "$n"
done > "$work/curl.cfg"

check_output() {  # every file written
  local count; count=$(find "$work/out" -type f | wc -l)
  [ "$count" = "$files" ] || { echo "$1 wrote $count files, expected $files"; return 1; }
}

echo "$files files of $size bytes, concurrency $concurrency, $runs runs each, outputs on tmpfs ($(nproc) cores)"
measure curl curl --parallel --parallel-max "$concurrency" --silent --fail -K "$work/curl.cfg"
measure fetchctl "$bin" run "$work/jobs.yaml" --progress never --log-file "$work/run.log"
