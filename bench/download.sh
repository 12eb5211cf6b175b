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

source bench/lib.sh

jobs() {  # size, [extra query]
  printf 'version: 1\nsettings: {output_dir: out, state_dir: state}\njobs:\n  - id: file\n    url: "%s/bytes/%s%s"\n    download: file.bin\n' \
    "$base" "$1" "${2:-}" > "$work/jobs.yaml"
  [ -z "${3:-}" ] || printf '    checksum: sha256:%s\n' "$3" >> "$work/jobs.yaml"
}

echo "== one file to tmpfs, $runs runs each ($(nproc) cores)"
measure "curl -o (1 GiB)" curl --silent --fail -o "$work/out/curl.bin" "$base/bytes/$gib"
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
