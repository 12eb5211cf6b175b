#!/usr/bin/env bash
# Million-job batches (issue #17): memory and time as the batch grows, next to curl on the same list.
#
#   bench/scale.sh [SIZES...]          # default: 10000 100000 1000000
#   SCALE_FETCHCTL_ONLY=1 bench/scale.sh 1000000    # fetchctl's rows only (no curl, no YAML file)
#   SCALE_SETTINGS=', cache: {behavior: do_not_cache}' bench/scale.sh   # more settings, for experiments
#   SCALE_RUNS=3 bench/scale.sh 100000 1000000   # cold runs per size and tool (default 5)
#
# For each size N: a CSV of N ids; nginx serves the same 1 KiB body for every /item/<id>, fresh for
# an hour. Measured with /usr/bin/time (elapsed seconds, peak RSS):
#   - fetchctl run jobs.yaml (one job per CSV row, `save` into 1,000 directories, concurrency 16,
#     fetchctl's defaults: state store, response cache, atomic saves);
#   - curl --parallel --parallel-max 16 -K on the same URLs and output paths;
#   the two in turn, SCALE_RUNS times each from nothing (no outputs, state or cache), and the
#   median run of each reported with every run's time: one run of a 100,000-job batch varied by
#   ±12% on this VM, enough to move the 1M ÷ 100k ratio across its target;
#   - a rerun of the finished batch (requests it sent, from nginx's log);
#   - fetchctl validate of the jobs file (every row checked);
#   - fetchctl status on the state directory.
# And once: validate of a jobs file with 100,000 jobs written out in YAML.
#
# Installs what is missing (nginx-light, curl, time), builds fetchctl as
# shipped (release, --static-swift-stdlib) and runs on a private tmpfs in its own mount namespace.
# Needs root. Writes bench/results/scale-*.
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/lib.sh
bench_enter "nginx:nginx-light curl:curl /usr/bin/time:time" "fetchctl" "$@"

# --- inside the private mount namespace ---------------------------------------------------------
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10000 100000 1000000)
bench_workspace 14g

port="$(free_port)"
base="http://127.0.0.1:$port"
mkdir -p "$work/nginx" "$work/www/s16k"
sed -e "s|@WORK@|$work|g" -e "s|@PORT@|$port|g" bench/nginx.conf > "$work/nginx/nginx.conf"
head -c 1024 /dev/urandom > "$work/www/one.bin"
nginx -c "$work/nginx/nginx.conf" -p "$work/nginx"
curl -sS -f -o /dev/null "$base/item/0"

requests() { wc -l < "$work/nginx/item.log"; }

# cold NAME CLEANUP COMMAND...: the command once from nothing (CLEANUP first); appends "elapsed kb" to
# $work/NAME.runs.
cold() {
  local name="$1" cleanup="$2"; shift 2
  eval "$cleanup"
  /usr/bin/time -f "%e %M" -o "$work/time.txt" "$@" > "$work/out.txt" 2> "$work/err.txt" || {
    echo "FAILED: $name"; tail -5 "$work/err.txt"; return 1; }
  cat "$work/time.txt" >> "$work/$name.runs"
}

# report NAME: "name elapsed_s peak_rss_MB" (MB = 10^6 bytes) of the median run, and every run's
# time when there were several.
report() {
  python3 - "$1" "$work/$1.runs" <<'PY' | tee -a "$results/scale.txt"
import sys
runs = [tuple(map(float, line.split())) for line in open(sys.argv[2]) if line.strip()]
elapsed, kb = sorted(runs)[len(runs) // 2]
every = f"   (median of {len(runs)}: " + ", ".join(f"{e:.2f}" for e, _ in runs) + ")" if len(runs) > 1 else ""
print(f"{sys.argv[1]:<34} {elapsed:9.2f} s {kb * 1024 / 1e6:9.1f} MB{every}")
PY
}

# measure NAME COMMAND...: the command once as it is, reported.
measure() {
  rm -f "$work/$1.runs"
  cold "$1" : "${@:2}"
  report "$1"
}
runs="${SCALE_RUNS:-5}"

: > "$results/scale.txt"
echo "fetchctl $("$bin" --version), curl $(curl --version | head -1 | cut -d' ' -f2), $(nproc) cores" | tee -a "$results/scale.txt"
for n in "${sizes[@]}"; do
  echo "== $n jobs" | tee -a "$results/scale.txt"
  dir="$work/n$n"; mkdir -p "$dir"
  python3 - "$dir" "$n" "$base" <<'PY'
import sys
d, n, base = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(f"{d}/ids.csv", "w") as f:
    f.write("id,dir\n")
    for i in range(n):
        f.write(f"{i},{i % 1000}\n")
with open(f"{d}/curl.cfg", "w") as f:
    for i in range(n):
        f.write(f'url = "{base}/item/{i}"\noutput = "{d}/curl-out/{i % 1000}/{i}.bin"\n')
PY
  cat > "$dir/jobs.yaml" <<YAML
version: 1
settings: {concurrency: 16, per_host: 16, output_dir: out, state_dir: state${SCALE_SETTINGS:-}}
jobs:
  - id: item
    url: "$base/item/{{row.id}}"
    from: {file: ids.csv}
    key: "{{row.id}}"
    save: "{{row.dir}}/{{row.id}}.bin"
YAML
  cd "$dir"
  measure "validate" "$bin" validate jobs.yaml
  rm -f "$work"/*.runs
  for run in $(seq "$runs"); do
    if [ -z "${SCALE_FETCHCTL_ONLY:-}" ]; then
      # fetchctl's last outputs go first: a million files left on the tmpfs slowed the next run by a third.
      cold "curl --parallel -K" "rm -rf curl-out out state" curl --parallel --parallel-max 16 --create-dirs -s -K curl.cfg
      test "$(find curl-out -type f | wc -l)" = "$n" || { echo "FAILED: curl saved $(find curl-out -type f | wc -l) of $n files"; exit 1; }
      rm -rf curl-out
    fi
    cold "fetchctl run" "rm -rf out state" "$bin" run jobs.yaml --progress never
  done
  report "fetchctl run"
  [ -n "${SCALE_FETCHCTL_ONLY:-}" ] || report "curl --parallel -K"
  test "$(find out -type f | wc -l)" = "$n" || { echo "FAILED: fetchctl saved $(find out -type f | wc -l) of $n files"; exit 1; }
  before="$(requests)"
  measure "fetchctl rerun (finished batch)" "$bin" run jobs.yaml --progress never
  sleep 1
  echo "  requests the rerun sent: $(( $(requests) - before ))" | tee -a "$results/scale.txt"
  measure "fetchctl status" "$bin" status jobs.yaml
  rm -rf out state
  cd - >/dev/null
  rm -rf "$dir"
done

[ -z "${SCALE_FETCHCTL_ONLY:-}" ] || exit 0
echo "== 100,000 jobs written out in YAML" | tee -a "$results/scale.txt"
mkdir -p "$work/explicit" && cd "$work/explicit"
python3 - "$base" <<'PY'
import sys
base = sys.argv[1]
with open("jobs.yaml", "w") as f:
    f.write("version: 1\nsettings: {concurrency: 16, per_host: 16, output_dir: out}\njobs:\n")
    for i in range(100000):
        f.write(f'  - {{id: item-{i}, url: "{base}/item/{i}", save: "{i % 1000}/{i}.bin"}}\n')
PY
measure "validate (100k YAML jobs)" "$bin" validate jobs.yaml
