#!/usr/bin/env bash
# Segmented downloads (issue #18): one 1 GiB file from nginx, which limits each connection to
# RATE (limit_rate, default 100m: 100 MB/s), fetched by fetchctl over one connection and with
# `segments: 8`, next to `aria2c -x8 -s8` (aria2c's own split) and curl (one connection); then the
# same file without a limit, fetchctl (one connection, its default) next to curl, with each tool's
# peak RSS. All tools in turn, round after round (bench/interleave.py); outputs on a tmpfs.
#
#   bench/segments.sh [ROUNDS [RATE]]      # default 5 rounds, 100m
#
# Targets: segments 8 ≥ 6× faster than one connection and ≤ 1.0× aria2c; unthrottled ≤ 1.0× curl with
# peak RSS < 40 MiB. fetchctl runs with its defaults (state store, log, resume), per_host 8 so all
# eight segments run at once (as aria2c's -x8). Installs what is missing (nginx-light, aria2, curl),
# builds as shipped, runs in a private mount namespace like compare.sh. Needs root and about 5 GiB
# of free memory. Writes bench/results/segments-*.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-5}"
rate="${2:-100m}"

. bench/lib.sh
bench_enter "nginx:nginx-light aria2c:aria2 curl:curl /usr/bin/time:time" "fetchctl" "$@"

# --- inside the private mount namespace ---------------------------------------------------------
bench_workspace 5g
port="$(free_port)"
mkdir -p "$work/nginx" "$work/www" "$work/out"
{ nginx_conf_head; cat <<CONF
    access_log off;
    server {
        listen 127.0.0.1:$port;
        root $work/www;
        location /throttled/ { alias $work/www/; limit_rate $rate; }
    }
}
CONF
} > "$work/nginx/nginx.conf"
head -c $((1 << 30)) /dev/urandom > "$work/www/1g.bin"
sum="$(sha256sum "$work/www/1g.bin" | cut -c1-64)"
nginx -c "$work/nginx/nginx.conf" -p "$work/nginx"
base="http://127.0.0.1:$port"

jobs() {  # name, path, segments
  cat > "$work/$1.yaml" <<YAML
version: 1
settings: {per_host: 8, output_dir: $work/out, state_dir: $work/state}
jobs:
  - id: file
    url: $base/$2
    download: {path: 1g.bin, segments: $3}
YAML
}
jobs throttled-1 throttled/1g.bin 1
jobs throttled-8 throttled/1g.bin 8
jobs plain-1 1g.bin 1
jobs plain-8 1g.bin 8

check="test \"\$(sha256sum $work/out/1g.bin | cut -c1-64)\" = $sum"
prep="if [ -f $work/out/1g.bin ]; then $check; fi; rm -rf $work/out $work/state; mkdir -p $work/out"
aria="aria2c --quiet=true --allow-overwrite=true --auto-file-renaming=false --file-allocation=falloc -d $work/out -o 1g.bin"

echo "== 1 GiB, each connection limited to $rate/s by nginx, $rounds rounds in turn"
python3 bench/interleave.py "$rounds" "$results/segments-throttled.json" \
  "aria2c -x8 -s8" "$prep" "$aria -x8 -s8 -k1M $base/throttled/1g.bin" \
  "fetchctl segments: 8" "$prep" "$bin run $work/throttled-8.yaml --progress never" \
  "fetchctl, one connection" "$prep" "$bin run $work/throttled-1.yaml --progress never" \
  "curl" "$prep" "curl -sSf -o $work/out/1g.bin $base/throttled/1g.bin" | tee "$results/segments-throttled.txt"
eval "$check"

echo "== 1 GiB, no limit, $rounds rounds in turn"
python3 bench/interleave.py "$rounds" "$results/segments-plain.json" \
  "curl" "$prep" "curl -sSf -o $work/out/1g.bin $base/1g.bin" \
  "fetchctl (one connection)" "$prep" "$bin run $work/plain-1.yaml --progress never" \
  "fetchctl segments: 8" "$prep" "$bin run $work/plain-8.yaml --progress never" \
  "aria2c -x8 -s8" "$prep" "$aria -x8 -s8 -k1M $base/1g.bin" | tee "$results/segments-plain.txt"
eval "$check"

echo "== peak RSS (KiB), unthrottled"
{
  for entry in "curl|curl -sSf -o $work/out/1g.bin $base/1g.bin" \
               "fetchctl (one connection)|$bin run $work/plain-1.yaml --progress never" \
               "fetchctl segments: 8|$bin run $work/plain-8.yaml --progress never" \
               "aria2c -x8 -s8|$aria -x8 -s8 -k1M $base/1g.bin"; do
    IFS='|' read -r name command <<<"$entry"
    eval "$prep"
    /usr/bin/time -f "%M" -o "$work/rss" $command >/dev/null 2>&1
    eval "$check"
    printf '%s\t%s\n' "$name" "$(cat "$work/rss")"
  done
} | tee "$results/segments-rss.tsv"
