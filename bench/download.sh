#!/usr/bin/env bash
# One large download from fetchctl's test server (127.0.0.1): fetchctl `download` next to `curl -o`
# (median wall time and peak RSS over RUNS runs), fetchctl's peak RSS for a 4 GiB file, and the
# new-user check of issue #4: kill a 1 GiB download halfway, run again, verify, show `status`.
# Outputs on tmpfs (/dev/shm). Needs about 6 GiB of free memory.
#
#   bench/download.sh [RUNS]     default 3
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-3}"
gib=$((1024 * 1024 * 1024))

swift build -c release --product fetchctl >/dev/null
bin="$(swift build -c release --show-bin-path)/fetchctl"
work="$(mktemp -d /dev/shm/fetchctl-download.XXXXXX)"
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
"$bin" test-server > "$work/server.url" &
server_pid=$!
for _ in $(seq 100); do [ -s "$work/server.url" ] && break; sleep 0.05; done
base="$(head -1 "$work/server.url")"

jobs() {  # size, [extra query]
  printf 'version: 1\nsettings: {output_dir: out, state_dir: state}\njobs:\n  - id: file\n    url: "%s/bytes/%s%s"\n    download: file.bin\n' \
    "$base" "$1" "${2:-}" > "$work/jobs.yaml"
  [ -z "${3:-}" ] || printf '    checksum: sha256:%s\n' "$3" >> "$work/jobs.yaml"
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
measure() {  # name, command...
  local name="$1"; shift
  local times=() rss=()
  for _ in $(seq "$runs"); do
    rm -rf "$work/out" "$work/state" "$work/curl.bin"; mkdir -p "$work/out"
    /usr/bin/time -v -o "$work/time.txt" "$@" >/dev/null 2>"$work/stderr.txt" || { echo "$name failed:"; cat "$work/stderr.txt"; exit 1; }
    times+=("$(awk -F': ' '/Elapsed \(wall clock\)/ {split($2, t, ":"); print (t[1] * 60 + t[2]) * 1000}' "$work/time.txt")")
    rss+=("$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time.txt")")
  done
  printf '%-22s median %7.0f ms   peak RSS %6.1f MiB   (runs: %s ms)\n' "$name" \
    "$(printf '%s\n' "${times[@]}" | median)" "$(printf '%s\n' "${rss[@]}" | median | awk '{print $1 / 1024}')" "${times[*]}"
}

echo "== one file to tmpfs, $runs runs each ($(nproc) cores)"
measure "curl -o (1 GiB)" curl --silent --fail -o "$work/curl.bin" "$base/bytes/$gib"
jobs "$gib"
measure "fetchctl (1 GiB)" "$bin" run "$work/jobs.yaml" --progress never --log-file "$work/run.log"
jobs "$((4 * gib))"
measure "fetchctl (4 GiB)" "$bin" run "$work/jobs.yaml" --progress never --log-file "$work/run.log"
rm -rf "$work/out" "$work/state"

echo "== kill a 1 GiB download halfway, run again"
curl --silent --fail -o "$work/reference.bin" "$base/bytes/$gib"
sum="$(sha256sum "$work/reference.bin" | cut -c1-64)"
rm -f "$work/reference.bin"
# The first request stalls at 512 MiB (only the first: key/times), so the kill lands halfway.
jobs "$gib" "?stall_after=$((gib / 2))&stall_ms=60000&key=halfway&times=1" "$sum"
"$bin" run "$work/jobs.yaml" --progress never --log-format json --log-file "$work/run.log" &
run_pid=$!
while [ "$(stat -c %s "$work/out/file.bin.part" 2>/dev/null || echo 0)" -lt $((gib / 2)) ]; do sleep 0.1; done
kill -9 "$run_pid"; wait "$run_pid" 2>/dev/null || true
echo "killed with $(stat -c %s "$work/out/file.bin.part") bytes in file.bin.part"
/usr/bin/time -f "rerun: %e s, peak RSS %M KiB" "$bin" run "$work/jobs.yaml" --progress never --log-format json --log-file "$work/run.log"
grep -E '"event":"download\.(resumed|verified)"' "$work/run.log" | tail -2
echo "sha256 on disk: $(sha256sum "$work/out/file.bin" | cut -c1-64) (expected $sum)"
"$bin" status --state-dir "$work/state"
