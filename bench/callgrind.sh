#!/usr/bin/env bash
# Instructions per job (issue #18): user-space instructions counted by valgrind's callgrind, which
# repeat to a fraction of a percent on this VM where seconds drift by 15%. fetchctl (the static build
# as shipped, defaults on), AsyncHTTPClient alone (bench/ahc-floor) and curl each fetch N and then
# 10×N of nginx's 16 KiB files at concurrency 16; the difference over 9×N jobs is the cost of a job
# without the start-up. The top functions by instructions per job (self cost, same difference) go
# with fetchctl's row.
#
#   bench/callgrind.sh [N]      # default 200 (then 2,000)
#
# Two things make valgrind run these binaries:
#   - a preloaded shim (bench/valgrind/sigsuspend_copy.c) hands sigsuspend a writable copy of its
#     mask: valgrind writes into the mask, and the binaries pass one in read-only memory, which
#     crashes valgrind itself ("the 'impossible' happened", syscall 130);
#   - debug information is stripped from a copy of each binary (valgrind 3.19 rejects Swift's DWARF
#     as corrupt); the symbol table stays, so functions keep their names.
# The kernel's share (writes, opens, renames) is not counted: hyperfine's system time in
# compare.sh shows it.
#
# Installs what is missing (nginx-light, valgrind, curl, gcc), builds as shipped, runs in a private
# mount namespace on a tmpfs like compare.sh. Needs root. Writes bench/results/callgrind.md.
set -euo pipefail
cd "$(dirname "$0")/.."
small="${1:-200}"
large=$((small * 10))

. bench/lib.sh
bench_enter "nginx:nginx-light valgrind:valgrind curl:curl gcc:gcc" "fetchctl ahc-floor" "$@"

# --- inside the private mount namespace ---------------------------------------------------------
bench_workspace 2g
port="$(free_port)"
base="http://127.0.0.1:$port"
mkdir -p "$work/nginx" "$work/www/s16k" "$work/bin"
sed -e "s|@WORK@|$work|g" -e "s|@PORT@|$port|g" bench/nginx.conf > "$work/nginx/nginx.conf"
python3 - "$work" "$base" "$small" "$large" <<'PY'
import os, sys
work, base, small, large = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
for n in range(large):
    with open(f"{work}/www/s16k/{n}.bin", "wb") as f:
        f.write(os.urandom(16 * 1024))
for count in (small, large):
    d = f"{work}/in{count}"
    os.makedirs(d)
    urls = [f"{base}/s16k/{n}.bin" for n in range(count)]
    open(f"{d}/urls.txt", "w").write("".join(u + "\n" for u in urls))
    open(f"{d}/curl.cfg", "w").write("".join(f'url = "{u}"\noutput = "{work}/out/{n}.bin"\n' for n, u in enumerate(urls)))
    open(f"{d}/jobs.yaml", "w").write(
        f"version: 1\nsettings: {{concurrency: 16, per_host: 16, output_dir: {work}/out}}\njobs:\n"
        f"  - id: f\n    url: \"{base}/s16k/{{{{matrix.n}}}}.bin\"\n"
        f"    matrix: {{n: [{','.join(str(n) for n in range(count))}]}}\n    save: \"{{{{matrix.n}}}}.bin\"\n")
PY
nginx -c "$work/nginx/nginx.conf" -p "$work/nginx"
gcc -shared -fPIC -O2 -o "$work/bin/sigsuspend_copy.so" bench/valgrind/sigsuspend_copy.c -ldl
for product in fetchctl ahc-floor; do
  cp "$bin_dir/$product" "$work/bin/$product"
  strip --strip-debug "$work/bin/$product"
done

# count OUT COMMAND...: instructions of one run, its callgrind file kept as OUT.
count() {
  local out="$1"; shift
  rm -rf "$work/out" "$work/in"*/.fetchctl; mkdir -p "$work/out"
  LD_PRELOAD="$work/bin/sigsuspend_copy.so" valgrind --tool=callgrind --callgrind-out-file="$out" "$@" >/dev/null 2>"$out.log"
  grep -o 'Collected : [0-9]*' "$out.log" | awk '{print $3}'
}
grouped() { python3 -c 'import sys; print(f"{int(sys.argv[1]):,}")' "$1"; }
declare -A total per_job
rows=""
for tool in fetchctl ahc-floor curl; do
  for jobs in "$small" "$large"; do
    d="$work/in$jobs"
    case "$tool" in
      fetchctl) cmd=("$work/bin/fetchctl" run "$d/jobs.yaml" --progress never) ;;
      ahc-floor) cmd=("$work/bin/ahc-floor" "$d/urls.txt" "$work/out" 16) ;;
      curl) cmd=(curl -s --parallel --parallel-max 16 -K "$d/curl.cfg") ;;
    esac
    total[$tool-$jobs]=$(count "$work/cg-$tool-$jobs.out" "${cmd[@]}")
    files=$(find "$work/out" -type f | wc -l)
    [ "$files" -eq "$jobs" ] || { echo "$tool wrote $files of $jobs files" >&2; exit 1; }
  done
  a=${total[$tool-$small]}; b=${total[$tool-$large]}
  per_job[$tool]=$(( (b - a) / (large - small) ))
  rows+="| $tool | $(grouped "$a") | $(grouped "$b") | **$(grouped "${per_job[$tool]}")** |"$'\n'
done

{
  echo "## Instructions per job (callgrind), $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- Sources || echo '+changes')"
  echo
  echo "| tool | $small jobs | $large jobs | per job |"
  echo "|---|---:|---:|---:|"
  printf "%s" "$rows"
  echo
  awk -v f="${per_job[fetchctl]}" -v a="${per_job[ahc-floor]}" -v c="${per_job[curl]}" \
    'BEGIN { printf "fetchctl ÷ curl %.2f×, fetchctl ÷ AsyncHTTPClient alone %.2f×\n\n", f / c, f / a }'
  echo "fetchctl's functions by instructions per job (self cost, $large-job run minus $small-job run):"
  echo
  echo '```'
  python3 - "$work/cg-fetchctl-$small.out" "$work/cg-fetchctl-$large.out" "$((large - small))" <<'PY'
import re, subprocess, sys
def costs(path):
    text = subprocess.run(["callgrind_annotate", "--threshold=100", path], capture_output=True, text=True).stdout
    out = {}
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+) \([ \d.]+%\)\s+(?:[^ :]*:)?(.+?)(?: \[.*\])?$", line)
        if m and "PROGRAM" not in line:
            out[m.group(2)] = out.get(m.group(2), 0) + int(m.group(1).replace(",", ""))
    return out
a, b, jobs = costs(sys.argv[1]), costs(sys.argv[2]), int(sys.argv[3])
rows = sorted(((b[k] - a.get(k, 0)) / jobs, k) for k in b)[::-1][:25]
names = subprocess.run(["swift", "demangle", "--simplified"], input="\n".join(k for _, k in rows), capture_output=True, text=True).stdout.splitlines()
for (v, _), name in zip(rows, names):
    print(f"{v:9,.0f}  {name[:150]}")
PY
  echo '```'
} | tee "$results/callgrind.md"
