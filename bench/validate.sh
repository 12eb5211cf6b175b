#!/usr/bin/env bash
# Times `fetchctl validate` on a generated 2,000-route / 5,000-job config (issue target: under 1 s).
# Builds fetchctl in release mode, generates the config under a temporary directory, and reports the
# median of several runs (hyperfine when installed, else a plain timing loop).
#
# usage: bench/validate.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-10}"
swift build -c release --product fetchctl >/dev/null
bin="$(swift build -c release --show-bin-path)/fetchctl"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 bench/gen_validate_config.py "$work/config" 2000 5000
"$bin" validate "$work/config/jobs.yaml" >/dev/null   # must be valid, or the timing means nothing
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB; $(swift --version 2>/dev/null | head -1)"
if command -v hyperfine >/dev/null; then
  hyperfine --warmup 2 --runs "$runs" "$bin validate $work/config/jobs.yaml"
else
  python3 - "$bin" "$work/config/jobs.yaml" "$runs" <<'PY'
import statistics, subprocess, sys, time
bin, path, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
subprocess.run([bin, "validate", path], check=True, capture_output=True)  # warm-up
times = []
for _ in range(runs):
    t = time.perf_counter()
    subprocess.run([bin, "validate", path], check=True, capture_output=True)
    times.append(time.perf_counter() - t)
print(f"fetchctl validate, 2000 routes / 5000 jobs: median {statistics.median(times)*1000:.0f} ms, "
      f"min {min(times)*1000:.0f} ms, max {max(times)*1000:.0f} ms over {runs} runs")
PY
fi
/usr/bin/time -v "$bin" validate "$work/config/jobs.yaml" 2>&1 >/dev/null | awk -F': ' '/Maximum resident/ {print "peak RSS: " $2 " KiB"}'
