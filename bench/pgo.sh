#!/usr/bin/env bash
# Makes toolsets/fetchctl.profdata, the profile the release build is optimized with (issue #18,
# docs/design.md, "The release build"). One command:
#
#   bench/pgo.sh
#
#   1. installs what is missing (nginx-light, curl, openssl) and builds fetchctl as shipped, but with
#      LLVM's IR-level counters in every module (`-ir-profile-generate`, counted atomically: the
#      event loops run on two threads; unsynchronised counts can contradict each other), in
#      .build-static, where bench/lib.sh builds the shipped binary;
#   2. runs it on a training batch against nginx on loopback, every path the benchmarks time:
#      1 KiB and 16 KiB files saved with the response cache cold, then warm; the state store's
#      rerun; eight hosts from a CSV file with `per_host`; HTTPS over HTTP/1.1 and HTTP/2; one
#      64 MiB file in one piece and in 4 segments; `validate`, `status`, `--version`; and the demo;
#   3. merges the counts (`llvm-profdata merge --sparse`: functions that never ran are left out, so
#      the optimizer treats them as it would without a profile, not as cold) into
#      toolsets/fetchctl.profdata, which toolsets/release.json names.
#
# Run it again after changes to the per-request path: a function whose code changed has no profile
# until then (it is built as without one; the build stays correct).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
# No product built the usual way: the instrumented build is below.
bench_enter "nginx:nginx-light curl:curl openssl:openssl" "" "$@"

# --- inside the private mount namespace ---------------------------------------------------------
bench_workspace 2g
root="$PWD"
toolchain="$(dirname "$(readlink -f "$(command -v swift)")")"
gen="$work/generate.json"
python3 - "$root/toolsets/release.json" "$gen" "$toolchain" <<'PY'
import json, sys
toolset = json.load(open(sys.argv[1]))
# The release flags without the profile use (the pair "-Xfrontend", "-ir-profile-use=…" and the
# pair "-Xllvm", "-no-pgo-warn-mismatch"), plus the counters. swiftc's own -ir-profile-generate
# reaches neither the frontend nor the link in Swift 6.3, so the frontend is asked directly and
# the profile runtime linked by hand (its -u keeps the runtime's write at exit).
options, cleaned = toolset["swiftCompiler"]["extraCLIOptions"], []
for option in options:
    if cleaned and cleaned[-1] in ("-Xfrontend", "-Xllvm") and option.startswith(("-ir-profile-use", "-no-pgo-warn-mismatch")):
        cleaned.pop(); continue
    cleaned.append(option)
toolset["swiftCompiler"]["extraCLIOptions"] = cleaned + ["-Xfrontend", "-ir-profile-generate", "-Xllvm", "-instrprof-atomic-counter-update-all"]
runtime = f"{sys.argv[3]}/../lib/swift/clang/lib/linux/libclang_rt.profile-x86_64.a"
toolset["linker"] = {"extraCLIOptions": ["-u__llvm_profile_runtime", runtime]}
json.dump(toolset, open(sys.argv[2], "w"), indent=2)
PY
# In .build-static, where bench/lib.sh builds the shipped binary: a private function's counts are
# filed under its object's path, so the profile fits the objects built there. Its objects go before
# (they were built without the counters) and after (bench/lib.sh then builds with the new profile).
bench_clear_objects .build-static
# FETCHCTL_PGO_TRAINING: Package.swift leaves out its own release options (the profile in use among
# them), read afresh (no manifest cache).
export FETCHCTL_PGO_TRAINING=1
build=(swift build -c release --static-swift-stdlib --toolset "$gen" --scratch-path .build-static --product fetchctl --manifest-cache none)
"${build[@]}"
fk="$("${build[@]}" --show-bin-path)/fetchctl"

# A CA and a server certificate for 127.0.0.1.
pki="$work/pki"; bench_pki "$pki"

http="$(free_port)"; h2="$(free_port)"; h1="$(free_port)"; hosts="$(free_port)"
mkdir -p "$work/nginx" "$work/www/s1k" "$work/www/s16k" "$work/www/big"
{ nginx_conf_head; cat <<CONF
    access_log off;
    http2_max_concurrent_streams 128;
    ssl_certificate $pki/server.pem; ssl_certificate_key $pki/server.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    server { listen 127.0.0.1:$http; root $work/www; }
    server { listen 127.0.0.1:$h2 ssl http2; root $work/www; }
    server { listen 127.0.0.1:$h1 ssl; root $work/www; }
$(for h in 1 2 3 4 5 6 7 8; do echo "    server { listen 127.0.0.$h:$hosts; root $work/www; }"; done)
}
CONF
} > "$work/nginx/nginx.conf"
python3 - "$work" <<'PY'
import os, sys
work = sys.argv[1]
for n in range(2000):
    open(f"{work}/www/s1k/{n}.bin", "wb").write(os.urandom(1024))
    open(f"{work}/www/s16k/{n}.bin", "wb").write(os.urandom(16 * 1024))
open(f"{work}/www/big/64m.bin", "wb").write(os.urandom(64 << 20))
open(f"{work}/rows.csv", "w").write("h,n\n" + "".join(f"{n % 8 + 1},{n}\n" for n in range(2000)))
PY
nginx -c "$work/nginx/nginx.conf" -p "$work/nginx"
curl -sS -f -o /dev/null "http://127.0.0.1:$http/s1k/0.bin"

# jobs NAME SETTINGS JOB: a jobs file of one matrix job over the 2,000 files.
jobs() {
  cat > "$work/$1.yaml" <<YAML
version: 1
settings: {output_dir: $work/out, state_dir: $work/state, $2}
jobs:
$3
YAML
}
matrix="matrix: {n: [$(seq -s, 0 1999)]}"
jobs small "concurrency: 32, per_host: 32" "  - {id: f, url: \"http://127.0.0.1:$http/s1k/{{matrix.n}}.bin\", $matrix, save: \"{{matrix.n}}.bin\"}"
jobs large "concurrency: 16, per_host: 16" "  - {id: f, url: \"http://127.0.0.1:$http/s16k/{{matrix.n}}.bin\", $matrix, save: \"{{matrix.n}}.bin\"}"
jobs hosts "concurrency: 16, per_host: 2" "  - {id: f, url: \"http://127.0.0.{{row.h}}:$hosts/s16k/{{row.n}}.bin\", from: {file: $work/rows.csv}, key: \"{{row.n}}\", save: \"{{row.n}}.bin\"}"
tls="tls: {ca_file: $pki/ca.pem, ca_mode: replace}, cache: {policy: reload, behavior: do_not_cache}"
jobs h2 "concurrency: 16, per_host: 16, http_version: auto, $tls" "  - {id: f, url: \"https://127.0.0.1:$h2/s16k/{{matrix.n}}.bin\", $matrix, save: \"{{matrix.n}}.bin\"}"
jobs h1 "concurrency: 16, per_host: 16, http_version: \"1.1\", $tls" "  - {id: f, url: \"https://127.0.0.1:$h1/s16k/{{matrix.n}}.bin\", $matrix, save: \"{{matrix.n}}.bin\"}"
jobs big "concurrency: 2" "  - {id: one, url: \"http://127.0.0.1:$http/big/64m.bin\", save: one.bin}
  - {id: seg, url: \"http://127.0.0.1:$http/big/64m.bin\", download: {path: seg.bin, segments: 4}}"

export LLVM_PROFILE_FILE="$work/profiles/%p.profraw"
fresh() { rm -rf "$work/out" "$work/state"; }
train() { echo "training: $*"; "$fk" "$@" >/dev/null; }
train --version
train validate "$work/small.yaml"
for batch in small large; do
  fresh; train run "$work/$batch.yaml" --progress never   # the cache cold
  fresh; train run "$work/$batch.yaml" --progress never
  train run "$work/$batch.yaml" --progress never          # a rerun: the state store, the cache warm
done
train status --state-dir "$work/state"
for batch in hosts h2 h1 big; do fresh; train run "$work/$batch.yaml" --progress never; done
(cd "$root" && train demo)

llvm_profdata="$toolchain/llvm-profdata"
"$llvm_profdata" merge --sparse -o "$root/toolsets/fetchctl.profdata" "$work"/profiles/*.profraw
bench_clear_objects .build-static
ls -l "$root/toolsets/fetchctl.profdata"
