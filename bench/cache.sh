#!/usr/bin/env bash
# The response cache measured (issue #14), with its peers requests-cache and hishel in the same run:
#
#   bench/cache.sh [RUNS]
#
# 1. 2,000 × 16 KiB from nginx (fresh for an hour: Cache-Control max-age=3600), concurrency 16:
#    a cold run with the cache on (fetchctl's default), one with it off, a warm rerun with fresh
#    entries, which must send no request (nginx's access log is counted), and a rerun of the same
#    files served with validators only, whose every job revalidates (2,000 conditional requests,
#    each answered 304), in turn round after round (bench/interleave.py); the bytes the cache wrote.
# 2. The cost of one hit in a warm process: fetchctl's Session (bench/cache-hit) next to
#    requests-cache's and hishel's hit loops (bench/cache_peers.py), same URL, same server.
# 3. A cron-style process that serves one job from the cache, whole process timed by hyperfine,
#    next to the same request made by a Python process with requests-cache or hishel.
#
# Installs what is missing (nginx-light, hyperfine; requests-cache, hishel and
# httpx from PyPI), builds fetchctl as shipped (release, --static-swift-stdlib) and runs everything on
# a private tmpfs in its own mount namespace. Needs root. Writes bench/results/cache-*.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-10}"

. bench/lib.sh
if [ -z "${FETCHCTL_BENCH_INNER:-}" ]; then
  python3 -c "import requests_cache, hishel, httpx" 2>/dev/null || python3 -m pip install -q requests-cache hishel httpx
fi
bench_enter "nginx:nginx-light hyperfine:hyperfine curl:curl" "fetchctl cache-hit" "$@"

# --- inside the private mount namespace ---------------------------------------------------------
bench_workspace 4g
hit="$bin_dir/cache-hit"

port="$(free_port)"
base="http://127.0.0.1:$port"
mkdir -p "$work/nginx" "$work/www/s16k"
sed -e "s|@WORK@|$work|g" -e "s|@PORT@|$port|g" bench/nginx.conf > "$work/nginx/nginx.conf"
python3 - "$work/www/s16k" <<'PY'
import os, sys
for n in range(2000):
    with open(os.path.join(sys.argv[1], f"{n}.bin"), "wb") as f:
        f.write(os.urandom(16 * 1024))
PY
nginx -c "$work/nginx/nginx.conf" -p "$work/nginx"
curl -sS -f -o /dev/null "$base/fresh/0.bin"

jobs() {  # file, state dir, extra settings, location (default fresh)
  local ids; ids="$(seq -s, 0 1999)"
  cat > "$1" <<YAML
version: 1
settings: {concurrency: 16, per_host: 16, output_dir: $work/out, state_dir: $2$3}
jobs:
  - id: f
    url: "$base/${4:-fresh}/{{matrix.n}}.bin"
    matrix: {n: [$ids]}
    save: "{{matrix.n}}.bin"
YAML
}
jobs "$work/on.yaml" "$work/state-on" ""
jobs "$work/off.yaml" "$work/state-off" ", cache: {policy: reload, behavior: do_not_cache}"
jobs "$work/stale.yaml" "$work/state-stale" "" stale
check="test \$(ls $work/out | wc -l) = 2000 && test \$(du -sb $work/out | cut -f1) = \$(du -sb $work/www/s16k | cut -f1)"
# Before each run, the previous run's outputs are checked (every file there, every byte).
verify="if [ -d $work/out ]; then $check; fi"

echo "== 1. 2,000 × 16 KiB, concurrency 16: cold with the cache on, cache off, a warm rerun and a revalidating one, in turn"
"$bin" run "$work/stale.yaml" 2>/dev/null  # the revalidating rerun's stored responses
stale_before="$(wc -l < "$work/nginx/stale.log")"
# In turn, round after round (bench/interleave.py): on a shared VM whose speed drifts, hyperfine's
# all-of-one-then-the-other let the drift decide the ratio.
before="$(wc -l < "$work/nginx/fresh.log")"
python3 bench/interleave.py "$runs" "$results/cache-runs.json" \
  "cold, cache on" "$verify; rm -rf $work/out $work/state-on" "$bin run $work/on.yaml" \
  "cold, cache off" "$verify; rm -rf $work/out $work/state-off" "$bin run $work/off.yaml" \
  "warm, cache on" "$verify; rm -rf $work/out" "$bin run $work/on.yaml" \
  "rerun, revalidated (304)" "$verify; rm -rf $work/out" "$bin run $work/stale.yaml"
after="$(wc -l < "$work/nginx/fresh.log")"
# Every job of every revalidating rerun sent one conditional request, answered 304.
tail -n +"$((stale_before + 1))" "$work/nginx/stale.log" | awk '{n++; s[$9]++} END {printf "revalidating reruns: %d requests,", n; for (k in s) printf " %d answered %s", s[k], k; print ""}' \
  | tee "$results/cache-revalidated-requests.txt"
# Each round's two cold runs send 2,000 requests each; the warm runs must send none.
sent=$((after - before)); cold=$((4000 * (runs + 1)))
echo "requests sent by the $((runs + 1)) warm runs: $((sent - cold)) (all runs: $sent, the cold runs' 2 × 2,000 a round: $cold)" \
  | tee "$results/cache-warm-requests.txt"
eval "$check"
rm -rf "$work/out" "$work/state-on"; "$bin" run "$work/on.yaml" 2>/dev/null
# A saved body is a hard link to the job's file (nothing written again); a copy has one link.
sizes() { find "$work/state-on/cache/bodies" -type f "$@" -printf '%s\n' | awk '{s += $1} END {print s + 0}'; }
index_bytes="$(du -cb "$work/state-on/cache"/index.sqlite* | tail -1 | cut -f1)"
copied="$(sizes -links 1)"; linked="$(sizes -links +1)"
echo "bytes the cache wrote: $((index_bytes + copied)) (index and WAL $index_bytes, bodies copied $copied); bodies linked to the saved files, not written again: $linked" \
  | tee "$results/cache-bytes.txt"

echo "== 2. one hit in a warm process (µs, median of 5 processes of 5,000 hits each)"
url="$base/fresh/0.bin"
{
  for tool in fetchctl requests-cache hishel; do
    values=()
    for _ in 1 2 3 4 5; do
      rm -f "$work/peer.db"*
      if [ "$tool" = fetchctl ]; then values+=("$("$hit" 5000 "$url")")
      else values+=("$(python3 bench/cache_peers.py hit "$tool" "$url" "$work/peer.db" 5000)"); fi
    done
    printf '%s\t%s\t%s\n' "$tool" "$(printf '%s\n' "${values[@]}" | sort -n | sed -n 3p)" "${values[*]}"
  done
} | tee "$results/cache-hit.tsv"

echo "== 3. a cron-style process serving one job from the cache"
cat > "$work/one.yaml" <<YAML
version: 1
settings: {output_dir: $work/out-one, state_dir: $work/state-one}
jobs:
  - {id: one, url: "$url", save: one.bin}
YAML
"$bin" run "$work/one.yaml" 2>/dev/null
rm -f "$work/rc.db"* "$work/hishel.db"*
python3 bench/cache_peers.py once requests-cache "$url" "$work/rc.db"
python3 bench/cache_peers.py once hishel "$url" "$work/hishel.db"
hyperfine --warmup 2 --runs "$((runs * 3))" --style basic --export-json "$results/cache-cron.json" \
  -n "fetchctl run (one job, a hit)" "$bin run $work/one.yaml" \
  -n "python3 + requests-cache (a hit)" "python3 bench/cache_peers.py once requests-cache $url $work/rc.db" \
  -n "python3 + hishel (a hit)" "python3 bench/cache_peers.py once hishel $url $work/hishel.db"
before="$(wc -l < "$work/nginx/fresh.log")"
"$bin" run "$work/one.yaml" --log-format json 2>&1 | grep -q '"outcome":"cached"' && echo "fetchctl's one job: outcome cached"
echo "requests it sent: $(( $(wc -l < "$work/nginx/fresh.log") - before ))"
