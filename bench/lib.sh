# Shared by the bench scripts (compare.sh, cache.sh, tls.sh, scale.sh): source it after `cd` to the
# repository root.
#
#   bench_enter "cmd:package ..." "product ..." "$@"
#       outside the namespace: installs the Debian packages whose commands are missing, builds the
#       products as shipped (release,
#       --static-swift-stdlib, in .build-static), then re-runs the calling script in a private mount
#       namespace. Returns only inside it (FETCHCTL_BENCH_INNER is set there).
#   bench_workspace SIZE
#       inside: sets bin (fetchctl), bin_dir, results (bench/results) and work (a tmpfs of SIZE that
#       disappears with the namespace), and stops nginx and unmounts on exit.
#   free_port
#       prints a free TCP port on 127.0.0.1.
#   nginx_conf_head
#       prints the start of an nginx.conf (pid, logs and temp files under $work/nginx, sendfile,
#       keep-alive) up to inside `http {`; the caller adds its own lines, its servers and `}`.

bench_enter() {
  local pairs="$1" products="$2"
  shift 2
  [ -n "${FETCHCTL_BENCH_INNER:-}" ] && return 0
  local missing=() pair product
  for pair in $pairs; do
    command -v "${pair%%:*}" >/dev/null || missing+=("${pair#*:}")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  # The shipped build: the Swift runtime linked in, and the release toolset (docs/design.md).
  local build=(swift build -c release --static-swift-stdlib --toolset "$PWD/toolsets/release.json" --scratch-path .build-static)
  for product in $products; do "${build[@]}" --product "$product"; done
  local bin_dir; bin_dir="$("${build[@]}" --show-bin-path)"
  exec unshare --mount --propagation private env FETCHCTL_BENCH_INNER=1 FETCHCTL_BIN_DIR="$bin_dir" "$0" "$@"
}

bench_workspace() {
  bin_dir="$FETCHCTL_BIN_DIR"
  bin="$bin_dir/fetchctl"
  results="$PWD/bench/results"
  mkdir -p "$results"
  work="$(mktemp -d /tmp/fetchctl-bench.XXXXXX)"
  mount -t tmpfs -o "size=$1,mode=755,nr_inodes=0" fetchctl-bench "$work"
  trap bench_cleanup EXIT
}

bench_cleanup() {
  [ -f "$work/nginx/nginx.pid" ] && kill "$(cat "$work/nginx/nginx.pid")" 2>/dev/null
  sleep 0.2
  umount "$work" 2>/dev/null || true
  rmdir "$work" 2>/dev/null || true
}

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

nginx_conf_head() {
  cat <<CONF
worker_processes auto;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log warn;
daemon on;
events { worker_connections 1024; }
http {
    default_type application/octet-stream;
    sendfile on; tcp_nopush on; tcp_nodelay on;
    keepalive_timeout 65s; keepalive_requests 100000;
    client_body_temp_path $work/nginx/body; proxy_temp_path $work/nginx/proxy; fastcgi_temp_path $work/nginx/fastcgi;
    uwsgi_temp_path $work/nginx/uwsgi; scgi_temp_path $work/nginx/scgi;
CONF
}
