# Shared by the bench scripts (compare.sh, cache.sh, tls.sh, scale.sh): source it after `cd` to the
# repository root.
#
#   bench_enter "cmd:package ..." "product ..." "$@"
#       outside the namespace: installs the Debian packages whose commands are missing, builds the
#       products as shipped (release,
#       --static-swift-stdlib, the release toolset and its profile, in .build-static, rebuilt
#       whole when the toolset or the profile changed), then re-runs the calling script in a private mount
#       namespace. Returns only inside it (FETCHCTL_BENCH_INNER is set there).
#   bench_workspace SIZE
#       inside: sets bin (fetchctl), bin_dir, results (bench/results) and work (a tmpfs of SIZE that
#       disappears with the namespace), and stops nginx and unmounts on exit.
#   bench_pki DIR
#       makes a CA and a server certificate for 127.0.0.1 in DIR (tls.sh, pgo.sh).
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
  # The shipped build: the Swift runtime linked in, and the release toolset with its profile
  # (docs/design.md). SwiftPM doesn't rebuild a module whose compiler options alone changed, so the
  # objects go when the toolset or the profile did (the stamp below); the checkouts stay.
  local scratch=.build-static stamp
  stamp="$(cat toolsets/release.json toolsets/fetchctl.profdata 2>/dev/null | sha256sum | cut -c1-16)"
  [ "$(cat "$scratch/fetchctl-options" 2>/dev/null)" = "$stamp" ] || bench_clear_objects "$scratch"
  local build=(swift build -c release --static-swift-stdlib --toolset "$PWD/toolsets/release.json" --scratch-path "$scratch")
  for product in $products; do "${build[@]}" --product "$product"; done
  mkdir -p "$scratch" && echo "$stamp" > "$scratch/fetchctl-options"
  local bin_dir; bin_dir="$("${build[@]}" --show-bin-path)"
  exec unshare --mount --propagation private env FETCHCTL_BENCH_INNER=1 FETCHCTL_BIN_DIR="$bin_dir" "$0" "$@"
}

# bench_clear_objects DIR: a build directory's objects and products go, its checkouts stay.
bench_clear_objects() {
  [ -d "$1" ] && find "$1" -mindepth 1 -maxdepth 1 ! -name checkouts ! -name repositories ! -name artifacts ! -name workspace-state.json -exec rm -rf {} +
  return 0
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

# bench_pki DIR: a CA (ca.pem) and a server certificate for 127.0.0.1 signed by it (server.pem,
# server.key) in DIR, P-256 as most servers now, valid for two days.
bench_pki() {
  local pki="$1"; mkdir -p "$pki"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=bench CA" \
    -keyout "$pki/ca.key" -out "$pki/ca.pem" 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=127.0.0.1" \
    -keyout "$pki/server.key" -out "$pki/server.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' > "$pki/ext.cnf"
  openssl x509 -req -in "$pki/server.csr" -CA "$pki/ca.pem" -CAkey "$pki/ca.key" -CAcreateserial -days 2 \
    -extfile "$pki/ext.cnf" -out "$pki/server.pem" 2>/dev/null
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
