#!/usr/bin/env python3
"""The real fetchctl binary run as an unprivileged user (nobody), as most users run it, against an
HTTP server on 127.0.0.1:

  python3 .ci/unprivileged-test.py BIN_DIR

Everything else in CI runs as root, which hid a socket option only root may set (SO_DEBUG, asked
for where TCP_NODELAY was meant): every connection of an unprivileged fetchctl was refused with
EACCES. Checks that an unprivileged run saves every file, with the response cache and without it
(an unnamed temporary file linked into place: `AT_EMPTY_PATH`, which this kernel allows any
process, or /proc/self/fd where it doesn't), that nothing but the saved files is left in the output
directory, and that a rerun with new bodies replaces the files whole; and that `fetchctl demo`
works for such a user (its built-in server set the same option on the connections it accepted).
Prints one line per check and 'N passed, N failed'.
"""
import http.server, os, pwd, shutil, socketserver, subprocess, sys, tempfile, threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import check, finish

FETCHCTL = os.path.join(os.path.abspath(sys.argv[1]), "fetchctl")
JOBS = 50
version = {"n": 1}


def body(path):
    return f"{path} version {version['n']}\n".encode() * 200


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        data = body(self.path)
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


server = Server(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
base = f"http://127.0.0.1:{server.server_address[1]}"
nobody = pwd.getpwnam("nobody")
work = tempfile.mkdtemp(prefix="fetchctl-unprivileged-")
os.chmod(work, 0o755)


def run_as_nobody(directory, *arguments):
    return subprocess.run(["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups",
                           FETCHCTL, *arguments], cwd=directory, capture_output=True, text=True, timeout=300)


def batch(name, cache):
    directory = os.path.join(work, name)
    os.makedirs(directory)
    with open(os.path.join(directory, "jobs.yaml"), "w") as f:
        f.write(f"""version: 1
settings: {{concurrency: 8, output_dir: out, state_dir: state{cache}}}
jobs:
  - {{id: item, url: "{base}/item/{{{{matrix.n}}}}", save: "{{{{matrix.n}}}}.txt", matrix: {{n: [{", ".join(str(n) for n in range(JOBS))}]}}}}
""")
    os.chown(directory, nobody.pw_uid, nobody.pw_gid)
    os.chown(os.path.join(directory, "jobs.yaml"), nobody.pw_uid, nobody.pw_gid)
    return directory


def failure(result):
    return "" if result.returncode == 0 else f" (got {result.returncode}: {result.stderr.strip()[-400:]})"


def saved_right(directory):
    out = os.path.join(directory, "out")
    names = sorted(os.listdir(out)) if os.path.isdir(out) else []
    expected = sorted(f"{n}.txt" for n in range(JOBS))
    same = names == expected and all(open(os.path.join(out, f"{n}.txt"), "rb").read() == body(f"/item/{n}")
                                     for n in range(JOBS))
    return same, names


try:
    for name, cache in (("cached", ""), ("uncached", ", cache: {behavior: do_not_cache}")):
        directory = batch(name, cache)
        version["n"] = 1
        result = run_as_nobody(directory, "run", "jobs.yaml", "--progress", "never")
        check(result.returncode == 0, f"{name}: an unprivileged run exits 0" + failure(result))
        same, names = saved_right(directory)
        check(same, f"{name}: every file saved whole, and nothing else in the output directory ({len(names)} entries)")
        # New bodies, and the state (and the response cache in it) gone: every job fetched and saved
        # again, over the files already there.
        version["n"] = 2
        shutil.rmtree(os.path.join(directory, "state"))
        result = run_as_nobody(directory, "run", "jobs.yaml", "--progress", "never")
        check(result.returncode == 0, f"{name}: a rerun over the saved files exits 0" + failure(result))
        same, names = saved_right(directory)
        check(same, f"{name}: the rerun's new bodies replaced every file whole, nothing else left ({len(names)} entries)")
    # The README's first command, as a user runs it: the demo's built-in server accepts connections
    # in the same process (its sockets took the same option).
    demo = os.path.join(work, "demo")
    shutil.copytree(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "quickstart"),
                    os.path.join(demo, "examples", "quickstart"), ignore=shutil.ignore_patterns("out", ".fetchctl"))
    for root, dirs, files in os.walk(demo):
        for entry in [root] + [os.path.join(root, name) for name in files]:
            os.chown(entry, nobody.pw_uid, nobody.pw_gid)
    result = run_as_nobody(demo, "demo")
    check(result.returncode == 0 and " 0 failed" in result.stderr + result.stdout,
          "fetchctl demo run by an unprivileged user: every job done" + failure(result))
finally:
    shutil.rmtree(work, ignore_errors=True)
    server.shutdown()

finish()
