#!/usr/bin/env bash
# Many hosts (issue #18): 2,000 × 16 KiB files spread over 8 virtual hosts on loopback (nginx
# listening on 127.0.0.1 … 127.0.0.8, one server block each), fetched with 16 at a time. fetchctl
# runs with per_host 2, so each host gets two connections and the 16 are only reached if every
# host's pipe stays full; curl --parallel --parallel-max 16 has no per-host limit, aria2c -j 16 -x 2
# does the same as fetchctl. All tools in turn, round after round (bench/interleave.py).
#
#   bench/hosts.sh [ROUNDS]      # default 10
#
# Target: fetchctl ≤ 1.0× curl --parallel. fetchctl runs with its defaults otherwise (state store,
# log, atomic saves; the response cache off, as curl and aria2c have none). Installs what is
# missing (nginx-light, aria2, curl), builds as shipped, runs in a private mount namespace like
# compare.sh. Needs root. Writes bench/results/hosts-*.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-10}"

. bench/lib.sh
bench_enter "nginx:nginx-light aria2c:aria2 curl:curl" "fetchctl" "$@"

# --- inside the private mount namespace ---------------------------------------------------------
bench_workspace 2g
port="$(free_port)"
mkdir -p "$work/nginx" "$work/www/s16k" "$work/out"
# write_conf off|on: the timed rounds run without an access log (a write(2) by nginx for every
# request takes CPU from the clients on two cores, more from the one that uses more, and no other
# scenario logs its requests); the run that counts connections per host has one.
write_conf() {
  {
    nginx_conf_head
    echo "    log_format conn '\$server_addr \$connection';"
    if [ "$1" = on ]; then echo "    access_log $work/nginx/access.log conn;"; else echo "    access_log off;"; fi
    for h in 1 2 3 4 5 6 7 8; do
      echo "    server { listen 127.0.0.$h:$port; server_name host$h; root $work/www; }"
    done
    echo "}"
  } > "$work/nginx/nginx.conf"
}
write_conf off
python3 - "$work" "$port" <<'PY'
import os, sys
work, port = sys.argv[1], sys.argv[2]
for n in range(2000):
    with open(f"{work}/www/s16k/{n}.bin", "wb") as f:
        f.write(os.urandom(16 * 1024))
# File n from host n % 8 + 1: every host serves 250 files, interleaved in the list.
urls = [(n, f"http://127.0.0.{n % 8 + 1}:{port}/s16k/{n}.bin") for n in range(2000)]
open(f"{work}/curl.cfg", "w").write("".join(f'url = "{u}"\noutput = "{work}/out/{n}.bin"\n' for n, u in urls))
open(f"{work}/aria2.txt", "w").write("".join(f"{u}\n  out={n}.bin\n" for n, u in urls))
# fetchctl's jobs come from a data file (a matrix can't say n % 8 + 1).
open(f"{work}/files.csv", "w").write("n,h\n" + "".join(f"{n},{n % 8 + 1}\n" for n in range(2000)))
open(f"{work}/jobs.yaml", "w").write(
    f"version: 1\nsettings: {{concurrency: 16, per_host: 2, output_dir: {work}/out, state_dir: {work}/state,\n"
    f"           cache: {{policy: reload, behavior: do_not_cache}}}}\njobs:\n"
    f"  - id: f\n    url: \"http://127.0.0.{{{{row.h}}}}:{port}/s16k/{{{{row.n}}}}.bin\"\n"
    f"    from: {{file: {work}/files.csv}}\n    key: \"{{{{row.n}}}}\"\n    save: \"{{{{row.n}}}}.bin\"\n")
PY
nginx -c "$work/nginx/nginx.conf" -p "$work/nginx"
for h in 1 8; do curl -sSf -o /dev/null "http://127.0.0.$h:$port/s16k/0.bin"; done

check="test \$(ls $work/out | wc -l) = 2000 && test \$(du -sb $work/out | cut -f1) = \$(du -sb $work/www/s16k | cut -f1)"
prep="if [ -n \"\$(ls $work/out)\" ]; then $check; fi; rm -rf $work/out $work/state; mkdir -p $work/out"

echo "== 2,000 × 16 KiB from 8 hosts, 16 at a time, $rounds rounds in turn"
python3 bench/interleave.py "$rounds" "$results/hosts-runs.json" \
  "curl --parallel-max 16" "$prep" "curl -sSf --parallel --parallel-max 16 -K $work/curl.cfg" \
  "fetchctl, per_host 2" "$prep" "$bin run $work/jobs.yaml --progress never" \
  "aria2c -j16 -x2" "$prep" "aria2c --quiet=true -j 16 -x 2 --allow-overwrite=true --auto-file-renaming=false -d $work/out -i $work/aria2.txt" \
  | tee "$results/hosts-table.txt"
eval "$check"

echo "== connections per host in one run (distinct connections in nginx's log)"
write_conf on
nginx -c "$work/nginx/nginx.conf" -p "$work/nginx" -s reload
# Until a request is logged: the new workers, which log, have taken over from the old ones.
for _ in $(seq 100); do
  curl -sSf -o /dev/null "http://127.0.0.1:$port/s16k/0.bin"
  [ -s "$work/nginx/access.log" ] && break
  sleep 0.05
done
[ -s "$work/nginx/access.log" ] || { echo "nginx did not start logging after the reload" >&2; exit 1; }
for entry in "curl|curl -sSf --parallel --parallel-max 16 -K $work/curl.cfg" "fetchctl|$bin run $work/jobs.yaml --progress never"; do
  IFS='|' read -r name command <<<"$entry"
  eval "$prep"
  : > "$work/nginx/access.log"
  eval "$command" >/dev/null 2>&1
  printf '%s\t%s\n' "$name" "$(sort -u "$work/nginx/access.log" | cut -d' ' -f1 | sort | uniq -c | awk '{print $2 "=" $1}' | paste -sd' ')"
done | tee "$results/hosts-connections.tsv"
