#!/usr/bin/env bash
# HTTPS next to curl and aria2c (issue #16): 2,000 × 16 KiB files from nginx over TLS with a private
# CA, concurrency 16, over HTTP/2 (curl --parallel multiplexes it; aria2c speaks HTTP/1.1 only) and
# over HTTP/1.1, all tools in turn round after round (bench/interleave.py), and the TLS handshakes
# each tool makes for one run (distinct connections in nginx's log).
#
#   bench/tls.sh [ROUNDS]     # default 10
#
# fetchctl trusts the bench CA with `ca_mode: replace`, as curl's --cacert does (the default, `add`,
# also loads the system's trust store: about 15 ms more a run, measured). The response cache is off
# (curl and aria2c have none).
#
# Installs what is missing (nginx-light, aria2, curl, openssl), builds fetchctl as shipped (release,
# --static-swift-stdlib), makes a CA and a server certificate for 127.0.0.1 with openssl, and runs
# everything on a private tmpfs in its own mount namespace, like compare.sh. Needs root. Writes bench/results/tls-*.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-10}"

. bench/lib.sh
bench_enter "nginx:nginx-light aria2c:aria2 curl:curl openssl:openssl" "fetchctl" "$@"

# --- inside the private mount namespace ---------------------------------------------------------
bench_workspace 4g

# A CA and a server certificate for 127.0.0.1 (P-256, as most servers now).
pki="$work/pki"; bench_pki "$pki"

h2="$(free_port)"; h1="$(free_port)"
mkdir -p "$work/nginx" "$work/www/s16k"
# write_conf off|on: the timed rounds run without access logs (a write(2) by nginx for every
# request takes CPU from the clients on two cores, more from the one that uses more, and
# compare.sh's scenarios log nothing); the run that counts handshakes has them.
write_conf() {
  local h2log="access_log off;" h1log="access_log off;"
  if [ "$1" = on ]; then h2log="access_log $work/nginx/h2.log conn;"; h1log="access_log $work/nginx/h1.log conn;"; fi
  { nginx_conf_head; cat <<CONF
    http2_max_concurrent_streams 128;
    ssl_certificate $pki/server.pem; ssl_certificate_key $pki/server.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    log_format conn '\$connection \$ssl_protocol \$server_protocol';
    server { listen 127.0.0.1:$h2 ssl http2; root $work/www; $h2log }
    server { listen 127.0.0.1:$h1 ssl; root $work/www; $h1log }
}
CONF
  } > "$work/nginx/nginx.conf"
}
write_conf off
python3 - "$work/www/s16k" <<'PY'
import os, sys
for n in range(2000):
    with open(os.path.join(sys.argv[1], f"{n}.bin"), "wb") as f:
        f.write(os.urandom(16 * 1024))
PY
nginx -c "$work/nginx/nginx.conf" -p "$work/nginx"
curl -sS -f --cacert "$pki/ca.pem" -o /dev/null "https://127.0.0.1:$h2/s16k/0.bin"

for proto in h2 h1; do
  port=$([ "$proto" = h2 ] && echo "$h2" || echo "$h1")
  base="https://127.0.0.1:$port/s16k"
  : > "$work/$proto.curl"; : > "$work/$proto.aria2"
  for n in $(seq 0 1999); do
    printf 'url = "%s/%s.bin"\noutput = "%s/out/%s.bin"\n' "$base" "$n" "$work" "$n" >> "$work/$proto.curl"
    printf '%s/%s.bin\n  out=%s.bin\n' "$base" "$n" "$n" >> "$work/$proto.aria2"
  done
  version=$([ "$proto" = h2 ] && echo auto || echo '"1.1"')
  cat > "$work/$proto.yaml" <<YAML
version: 1
settings: {concurrency: 16, per_host: 16, output_dir: $work/out, state_dir: $work/state, http_version: $version,
           tls: {ca_file: $pki/ca.pem, ca_mode: replace}, cache: {policy: reload, behavior: do_not_cache}}
jobs:
  - id: f
    url: "$base/{{matrix.n}}.bin"
    matrix: {n: [$(seq -s, 0 1999)]}
    save: "{{matrix.n}}.bin"
YAML
done

check="test \$(ls $work/out | wc -l) = 2000 && test \$(du -sb $work/out | cut -f1) = \$(du -sb $work/www/s16k | cut -f1)"
prep="if [ -d $work/out ]; then $check; fi; rm -rf $work/out $work/state; mkdir -p $work/out"
curl_flags="--silent --show-error --fail --parallel --parallel-max 16 --cacert $pki/ca.pem"
aria_flags="--quiet=true -j 16 -x 1 --ca-certificate=$pki/ca.pem --allow-overwrite=true --auto-file-renaming=false -d $work/out"

echo "== 2,000 × 16 KiB over HTTPS, concurrency 16, $rounds rounds in turn"
python3 bench/interleave.py "$rounds" "$results/tls-runs.json" \
  "curl, HTTP/2" "$prep" "curl $curl_flags --http2 -K $work/h2.curl" \
  "fetchctl, HTTP/2" "$prep" "$bin run $work/h2.yaml" \
  "curl, HTTP/1.1" "$prep" "curl $curl_flags --http1.1 -K $work/h1.curl" \
  "fetchctl, HTTP/1.1" "$prep" "$bin run $work/h1.yaml" \
  "aria2c, HTTP/1.1" "$prep" "aria2c $aria_flags -i $work/h1.aria2" | tee "$results/tls-table.txt"
eval "$check"

echo "== TLS handshakes for one run (distinct connections in nginx's log)"
write_conf on
nginx -c "$work/nginx/nginx.conf" -p "$work/nginx" -s reload
# Until a request is logged: the new workers, which log, have taken over from the old ones.
for _ in $(seq 100); do
  curl -sSf --cacert "$pki/ca.pem" -o /dev/null "https://127.0.0.1:$h2/s16k/0.bin"
  curl -sSf --cacert "$pki/ca.pem" -o /dev/null "https://127.0.0.1:$h1/s16k/0.bin"
  [ -s "$work/nginx/h2.log" ] && [ -s "$work/nginx/h1.log" ] && break
  sleep 0.05
done
[ -s "$work/nginx/h2.log" ] && [ -s "$work/nginx/h1.log" ] || { echo "nginx did not start logging after the reload" >&2; exit 1; }
{
  for entry in "curl, HTTP/2|h2|curl $curl_flags --http2 -K $work/h2.curl" \
               "fetchctl, HTTP/2|h2|$bin run $work/h2.yaml" \
               "curl, HTTP/1.1|h1|curl $curl_flags --http1.1 -K $work/h1.curl" \
               "fetchctl, HTTP/1.1|h1|$bin run $work/h1.yaml" \
               "aria2c, HTTP/1.1|h1|aria2c $aria_flags -i $work/h1.aria2"; do
    IFS='|' read -r name log command <<<"$entry"
    eval "$prep"
    before="$(wc -l < "$work/nginx/$log.log")"
    eval "$command" >/dev/null 2>&1
    tail -n +"$((before + 1))" "$work/nginx/$log.log" > "$work/run.log"
    printf '%s\t%s requests\t%s connections\t%s\n' "$name" "$(wc -l < "$work/run.log")" \
      "$(cut -d' ' -f1 "$work/run.log" | sort -u | wc -l)" "$(cut -d' ' -f2,3 "$work/run.log" | sort | uniq -c | tr -s ' ' | paste -sd, -)"
  done
} | tee "$results/tls-handshakes.tsv"
