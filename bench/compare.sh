#!/usr/bin/env bash
# fetchctl next to curl, aria2c and wget, side by side in one run (issue #5). This one command
# reproduces the whole table in BENCHMARKS.md:
#
#   bench/compare.sh [RUNS [SCENARIO...]]
#
# RUNS per tool and scenario, default 5 (after one warm-up run; three times as many for the 1 GiB
# download, whose runs vary most), rounded up to a multiple of the five rounds they are split into. SCENARIOs, default all: one-file,
# small16k, small1k, config, rss (peak RSS of all of them, and a 4 GiB download).
#
# What it does:
#   1. installs what is missing from Debian's packages (nginx-light, aria2, hyperfine, wget, curl, time)
#      and builds fetchctl as it is shipped: release mode, Swift runtime linked in (--static-swift-stdlib);
#   2. re-runs itself in a private mount namespace (`unshare -m`) with a tmpfs mounted for the data and
#      every output, so file creation on disk doesn't hide the clients' cost, and nothing outlives it;
#   3. starts nginx on 127.0.0.1 (bench/nginx.conf: sendfile, keep-alive) and generates the data;
#   4. times each scenario with hyperfine, all tools side by side, in five rounds (so every tool samples
#      the same stretches of this VM's drifting speed), outputs deleted before every run and checked after
#      each tool's runs; measures peak RSS with /usr/bin/time;
#   5. writes bench/results/ (hyperfine JSON, rss.tsv, table.md) and prints the table.
#
# fetchctl runs with its defaults (state store, log, resume, response cache), each run cold: the
# response cache is emptied before every run, as curl has none (bench/cache.sh measures it warm);
# the jobs files only set the scenario's
# concurrency (and per_host to match, as curl --parallel-max and aria2c -j open that many connections).
# Needs root (apt-get, unshare, mount) and about 12 GiB of free memory.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-5}"
selected="${*:2}"
wanted() { [ -z "$selected" ] || [[ " $selected " == *" $1 "* ]]; }

. bench/lib.sh
bench_enter "nginx:nginx-light aria2c:aria2 hyperfine:hyperfine wget:wget curl:curl /usr/bin/time:time" "fetchctl ahc-floor" "$@"

# --- inside the private mount namespace ---------------------------------------------------------
bench_workspace 14g
floor="$bin_dir/ahc-floor"   # AsyncHTTPClient alone: the floor under fetchctl (bench/ahc-floor)
out="$work/out"; inputs="$work/inputs"; www="$work/www"

port="$(free_port)"
base="http://127.0.0.1:$port"
mkdir -p "$work/nginx"
sed -e "s|@WORK@|$work|g" -e "s|@PORT@|$port|g" bench/nginx.conf > "$work/nginx/nginx.conf"
echo "generating data under $work (tmpfs)"
python3 bench/gen_data.py "$work" "$base"
python3 bench/gen_validate_config.py "$work/validate" 2000 5000 >/dev/null
nginx -c "$work/nginx/nginx.conf" -p "$work/nginx"
curl -sS -f -o /dev/null "$base/s1k/0.bin"

{
  echo "cores	$(nproc)"
  echo "memory	$(free -g | awk '/Mem:/ {print $2}') GiB"
  echo "cpu	$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
  echo "kernel	$(uname -r)"
  echo "fetchctl	$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- Sources Package.swift toolsets || echo '+changes'), $(swift --version 2>/dev/null | head -1)"
  echo "curl	$(curl --version | head -1 | cut -d' ' -f1-2)"
  echo "aria2c	$(aria2c --version | head -1)"
  echo "wget	$(wget --version | head -1 | cut -d' ' -f1-3)"
  echo "nginx	$(nginx -v 2>&1 | cut -d' ' -f3)"
  echo "hyperfine	$(hyperfine --version)"
  echo "runs	$runs"
} > "$results/machine.tsv"

# hyperfine over one scenario: NAME, CHECK (a shell command run after each tool's last run), then
# pairs of tool name and command. The runs are split into ROUNDS hyperfine invocations, each running
# every tool in turn (the first with a warm-up): this VM's speed drifts over minutes, and a tool whose
# runs all fell in one slow stretch would look slower than it is. The rounds' times are merged into
# NAME.json (bench/merge_rounds.py), whose medians the table shows.
rounds=5
scenario() {
  local name="$1" check="$2"; shift 2
  wanted "$name" || return 0
  local args=() total="${scenario_runs:-$runs}"
  local per_round=$(( (total + rounds - 1) / rounds ))
  while [ $# -gt 0 ]; do args+=(-n "$1" "$2"); shift 2; done
  echo; echo "== $name ($rounds rounds of $per_round runs per tool)"
  for round in $(seq "$rounds"); do
    hyperfine --warmup "$([ "$round" = 1 ] && echo 1 || echo 0)" --runs "$per_round" --style basic \
      --prepare "rm -rf $out $inputs/*/.fetchctl/cache" --cleanup "$check" \
      --export-json "$results/$name.round$round.json" "${args[@]}"
  done
  python3 bench/merge_rounds.py "$results/$name.json" "$results/$name".round*.json
  rm -f "$results/$name".round*.json
}

# The 1 GiB download runs three times as often: on this kind of VM, writing a GiB into freshly freed
# tmpfs pages takes anywhere from 1 to 3.5 s for every tool alike (the kernel's page copy, first
# touch of host memory), and the median needs more runs to settle.
scenario_runs=$((runs * 3)) scenario one-file "test \$(ls $out | wc -l) = 1 && cmp $out/*.bin $www/big/1g.bin" \
  curl "curl -sS -f -o $out/1g.bin --create-dirs $base/big/1g.bin" \
  aria2c "aria2c -q -x1 -d $out -o 1g.bin $base/big/1g.bin" \
  wget "wget -q -P $out $base/big/1g.bin" \
  fetchctl "$bin run $inputs/jobs-1g.yaml" \
  ahc-floor "$floor $inputs/one-1g.txt $out 1"

for small in small16k:16 small1k:32; do
  s="${small%%:*}"; c="${small#*:}"; n="$(wc -l < "$inputs/$s/wget.txt")"
  scenario "$s" "test \$(find $out -type f | wc -l) = $n && test \$(du -sb $out | cut -f1) = \$(du -sb $www/${s/small/s} | cut -f1)" \
    curl "curl -sS -f --parallel --parallel-max $c --create-dirs -K $inputs/$s/curl.cfg" \
    aria2c "aria2c -q -j$c -d $out -i $inputs/$s/aria2.txt" \
    wget "wget -q -P $out -i $inputs/$s/wget.txt" \
    fetchctl "$bin run $inputs/$s/jobs.yaml" \
    ahc-floor "$floor $inputs/$s/wget.txt $out $c"
done

scenario config "true" \
  "fetchctl validate" "$bin validate $work/validate/jobs.yaml" \
  "fetchctl run --dry-run" "$bin run $work/validate/jobs.yaml --dry-run"

# Peak RSS: the median of RUNS runs under /usr/bin/time, outputs deleted before each.
if wanted rss; then
  echo; echo "== peak RSS"
  rss() {  # scenario, tool, command
    local kib=()
    for _ in $(seq "$runs"); do
      rm -rf "$out"
      /usr/bin/time -f %M -o "$work/rss" sh -c "$3" >/dev/null 2>&1
      kib+=("$(tail -1 "$work/rss")")
    done
    local median; median="$(printf '%s\n' "${kib[@]}" | sort -n | sed -n "$(( (runs + 1) / 2 ))p")"
    printf '%s\t%s\t%s\n' "$1" "$2" "$median" | tee -a "$results/rss.tsv"
  }
  # Empty the page cache first. The kernel maps the cached pages around each page of a binary a
  # program touches (fault-around), so a binary that something had just read whole (the linker that
  # wrote it, a profiler, a copy) shows about 2 MiB more RSS than the same binary after normal use.
  sync; echo 3 > /proc/sys/vm/drop_caches
  : > "$results/rss.tsv"
  for size in 1g 4g; do
    url="$base/big/$size.bin"
    rss "$size" curl "curl -sS -f -o $out/$size.bin --create-dirs $url"
    rss "$size" aria2c "aria2c -q -x1 -d $out -o $size.bin $url"
    rss "$size" wget "wget -q -P $out $url"
    rss "$size" fetchctl "$bin run $inputs/jobs-$size.yaml"
    rss "$size" ahc-floor "$floor $inputs/one-$size.txt $out 1"
  done
  for small in small16k:16 small1k:32; do
    s="${small%%:*}"; c="${small#*:}"
    rss "$s" curl "curl -sS -f --parallel --parallel-max $c --create-dirs -K $inputs/$s/curl.cfg"
    rss "$s" aria2c "aria2c -q -j$c -d $out -i $inputs/$s/aria2.txt"
    rss "$s" wget "wget -q -P $out -i $inputs/$s/wget.txt"
    rss "$s" fetchctl "$bin run $inputs/$s/jobs.yaml"
    rss "$s" ahc-floor "$floor $inputs/$s/wget.txt $out $c"
  done
  rm -rf "$out"
fi

echo
python3 bench/render_table.py "$results" | tee "$results/table.md"
