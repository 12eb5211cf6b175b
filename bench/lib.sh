# Shared by the bench scripts (source it from the repository root): builds fetchctl in release mode,
# starts its test server on 127.0.0.1 with a work directory on tmpfs, and times commands.
#
# After sourcing: $bin (fetchctl), $work (the tmpfs directory), $base (the server's URL).
# `measure NAME COMMAND...` runs COMMAND $runs times, with $work/out emptied before each run and the
# optional function `check_output` called after it, and prints the median wall time and peak RSS.

swift build -c release --product fetchctl >/dev/null
bin="$(swift build -c release --show-bin-path)/fetchctl"
work="$(mktemp -d /dev/shm/fetchctl-bench.XXXXXX)"
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

"$bin" test-server > "$work/server.url" &
server_pid=$!
for _ in $(seq 100); do [ -s "$work/server.url" ] && break; sleep 0.05; done
base="$(head -1 "$work/server.url")"

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

measure() {  # name, command...
  local name="$1"; shift
  local times=() rss=()
  for _ in $(seq "$runs"); do
    rm -rf "$work/out" "$work/state"; mkdir -p "$work/out"
    /usr/bin/time -v -o "$work/time.txt" "$@" >/dev/null 2>"$work/stderr.txt" || { echo "$name failed:"; cat "$work/stderr.txt"; exit 1; }
    if declare -f check_output >/dev/null; then check_output "$name" || exit 1; fi
    times+=("$(awk -F': ' '/Elapsed \(wall clock\)/ {split($2, t, ":"); print (t[1] * 60 + t[2]) * 1000}' "$work/time.txt")")
    rss+=("$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time.txt")")
  done
  printf '%-22s median %7.0f ms   peak RSS %6.1f MiB   (runs: %s ms)\n' "$name" \
    "$(printf '%s\n' "${times[@]}" | median)" "$(printf '%s\n' "${rss[@]}" | median | awk '{print $1 / 1024}')" "${times[*]}"
}
