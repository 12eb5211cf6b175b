#!/usr/bin/env bash
# API crawling (issue #19): 1,000 pages of 100 records, as 10 paginated resources of 100 pages that a
# list job fans out to, each page's records appended to one JSON Lines file per resource
# (save_items), against the local test server (its /pages/link endpoint: a JSON array a page and
# GitHub-style absolute Link headers). Side by side with a hand-written curl loop that follows the
# same Link headers, ten loops at once as fetchctl runs ten crawls at once: curl alone (pages saved
# as they come), and curl with `jq -c '.[]'` (the same JSON Lines fetchctl writes). Then fetchctl's
# peak RSS at 100 to 100,000 pages, to show how it grows with the page count.
#
#   bench/crawl.sh [ROUNDS]      # default 5
#
# Reports pages per second and ratios in one run. Installs curl, jq and time when missing; builds as
# shipped (fetchctl and test-server); runs in a private mount namespace with outputs on a tmpfs.
# Writes bench/results/crawl-*.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-5}"

. bench/lib.sh
bench_enter "curl:curl jq:jq /usr/bin/time:time" "fetchctl test-server" "$@"

# --- inside the private mount namespace ---------------------------------------------------------
bench_workspace 4g
port="$(free_port)"
"$bin_dir/test-server" 127.0.0.1 "$port" > "$work/server.url" &
server_pid=$!
trap 'kill $server_pid 2>/dev/null; bench_cleanup' EXIT
for _ in $(seq 50); do [ -s "$work/server.url" ] && break; sleep 0.1; done
base="$(head -1 "$work/server.url")"

jobs() {  # name, pages per resource
  cat > "$work/$1.yaml" <<YAML
version: 1
settings: {concurrency: 10, per_host: 10, output_dir: $work/out, state_dir: $work/state}
jobs:
  - id: resources
    url: "$base/pages/json?total=10&per_page=10"
  - id: crawl
    url: "$base/pages/link?total=$(($2 * 100))&per_page=100&absolute=1&r={{r.id}}"
    for_each: {job: resources, items: "\$.items", as: r}
    key: "{{r.id}}"
    paginate: {next: {link_header: next}, items: "\$[*]", stop: {max_pages: 100000}}
    save_items: "r{{r.id}}.jsonl"
YAML
}
jobs crawl-100 10
jobs crawl-1000 100
jobs crawl-10000 1000
jobs crawl-100000 10000

# The curl loop: one resource's pages, following rel="next" until there is none.
cat > "$work/loop.sh" <<'SH'
#!/usr/bin/env bash
# loop.sh BASE R OUT [jq]
set -euo pipefail
url="$1/pages/link?total=10000&per_page=100&absolute=1&r=$2"
out="$3/r$2"
: > "$out.jsonl"
while [ -n "$url" ]; do
  if [ "${4:-}" = jq ]; then
    curl -sSf -D "$out.h" "$url" | jq -c '.[]' >> "$out.jsonl"
  else
    curl -sSf -D "$out.h" "$url" >> "$out.jsonl"
  fi
  url="$(grep -i '^link:' "$out.h" | grep -o '<[^>]*>; rel="next"' | sed 's/^<\([^>]*\)>.*/\1/' || true)"
done
SH
chmod +x "$work/loop.sh"

prep="rm -rf $work/out $work/state; mkdir -p $work/out"
check="test \$(cat $work/out/r*.jsonl | wc -l) = 100000"

echo "== 1,000 pages of 100 records (10 resources x 100 pages), $rounds rounds in turn"
python3 bench/interleave.py "$rounds" "$results/crawl-runs.json" \
  "curl loop (10 at once)" "$prep" "seq 1 10 | xargs -P 10 -I{} $work/loop.sh $base {} $work/out" \
  "curl + jq loop (10 at once)" "$prep" "seq 1 10 | xargs -P 10 -I{} $work/loop.sh $base {} $work/out jq" \
  "fetchctl (fan-out, save_items)" "$prep" "$bin run $work/crawl-1000.yaml --progress never" | tee "$results/crawl-runs.txt"
eval "$check"

echo "== fetchctl peak RSS (KiB) by page count"
{
  for pages in 100 1000 10000 100000; do
    eval "$prep"
    /usr/bin/time -f "%M %e" -o "$work/rss" "$bin" run "$work/crawl-$pages.yaml" --progress never >/dev/null 2>&1
    test "$(cat "$work"/out/r*.jsonl | wc -l)" = $((pages * 100))
    read -r rss seconds < "$work/rss"
    printf '%s pages\t%s KiB\t%s s\t%s pages/s\n' "$pages" "$rss" "$seconds" "$(python3 -c "print(round($pages / $seconds))")"
  done
} | tee "$results/crawl-rss.tsv"
