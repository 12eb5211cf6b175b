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

swift build -c release --product fetchctl >/dev/null
bin="$(swift build -c release --show-bin-path)/fetchctl"
work="$(mktemp -d /dev/shm/fetchctl-bench.XXXXXX)"
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

"$bin" test-server > "$work/server.url" &
server_pid=$!
for _ in $(seq 100); do [ -s "$work/server.url" ] && break; sleep 0.05; done
base="$(head -1 "$work/server.url")"

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

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

measure() {  # name, command...
  local name="$1"; shift
  local times=() rss=()
  for _ in $(seq "$runs"); do
    rm -rf "$work/out"; mkdir -p "$work/out"
    /usr/bin/time -v -o "$work/time.txt" "$@" >/dev/null 2>"$work/stderr.txt" || { echo "$name failed:"; cat "$work/stderr.txt"; exit 1; }
    local count; count=$(find "$work/out" -type f | wc -l)
    [ "$count" = "$files" ] || { echo "$name wrote $count files, expected $files"; exit 1; }
    times+=("$(awk -F': ' '/Elapsed \(wall clock\)/ {split($2, t, ":"); print (t[1] * 60 + t[2]) * 1000}' "$work/time.txt")")
    rss+=("$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time.txt")")
  done
  printf '%-8s median %7.0f ms   peak RSS %6.1f MiB   (runs: %s ms)\n' "$name" \
    "$(printf '%s\n' "${times[@]}" | median)" "$(printf '%s\n' "${rss[@]}" | median | awk '{print $1 / 1024}')" "${times[*]}"
}

echo "$files files of $size bytes, concurrency $concurrency, $runs runs each, outputs on tmpfs ($(nproc) cores)"
measure curl curl --parallel --parallel-max "$concurrency" --silent --fail -K "$work/curl.cfg"
measure fetchctl "$bin" run "$work/jobs.yaml" --progress never --log-file "$work/run.log"
