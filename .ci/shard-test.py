#!/usr/bin/env python3
"""10,000 jobs in four shards side by side, the real fetchctl binary against a counting HTTP server
on 127.0.0.1 (a process of its own, so the shards' traffic slows no other check):

  python3 .ci/shard-test.py BIN_DIR

Checks that every job is fetched exactly once (the server's count per path), that each shard ran
within ±10% of a quarter, that the four JSON reports merge into one of 10,000 jobs, and that a job
added to the plan moves no other job. Prints one line per check and 'N passed, N failed'.
"""
import collections, http.server, json, os, shutil, socketserver, subprocess, sys, tempfile, threading

FETCHCTL = os.path.join(os.path.abspath(sys.argv[1]), "fetchctl")
JOBS = 10_000
passed = failed = 0


def check(condition, what):
    global passed, failed
    print(("ok   " if condition else "FAIL ") + what, flush=True)
    passed, failed = (passed + 1, failed) if condition else (passed, failed + 1)


counts = collections.Counter()
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        with lock:
            counts[self.path] += 1
        body = b"ok\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    request_queue_size = 128


def jobs_file(directory, base, extra=""):
    path = os.path.join(directory, "jobs.yaml")
    with open(path, "w") as f:
        f.write(f"""version: 1
settings: {{concurrency: 8, per_host: 8, cache: {{policy: reload, behavior: do_not_cache}}}}
jobs:
  - {{id: item, url: "{base}/item/{{{{matrix.n}}}}", matrix: {{n: [{", ".join(str(n) for n in range(JOBS))}]}}}}
{extra}""")
    return path


def planned(directory, shard):
    out = subprocess.run([FETCHCTL, "run", "jobs.yaml", "--dry-run", "--shard", shard], cwd=directory, capture_output=True, text=True).stdout
    return {line[2:].split(" ")[0] for line in out.splitlines()
            if line.startswith("# ") and not line.startswith(("# cache:", "# shard", "# tls:")) and " in order" not in line}


def main():
    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    work = tempfile.mkdtemp(prefix="fetchctl-shard-test-")
    try:
        print(f"== {JOBS:,} jobs in four shards side by side")
        jobs_file(work, base)
        shards = [subprocess.Popen([FETCHCTL, "run", "jobs.yaml", "--shard", f"{i}/4", "--progress", "never",
                                    "--report", "json", f"shard-{i}.json"], cwd=work, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True) for i in range(1, 5)]
        outputs = [process.communicate(timeout=300)[1] for process in shards]
        check(all(process.returncode == 0 for process in shards), f"every shard exits 0 ({[p.returncode for p in shards]})")
        check(len(counts) == JOBS and all(n == 1 for n in counts.values()),
              f"every job fetched exactly once ({len(counts)} paths, {sum(counts.values())} requests)")
        sizes = []
        for stderr in outputs:
            line = next((l for l in stderr.splitlines() if " jobs in " in l), "0")
            sizes.append(int(line.split(" ")[0]))
        check(all(abs(size - JOBS / 4) <= JOBS / 40 for size in sizes), f"each shard within ±10% of {JOBS // 4} ({sizes})")
        merged = subprocess.run([FETCHCTL, "report", "merge", "all.json"] + [f"shard-{i}.json" for i in range(1, 5)],
                                cwd=work, capture_output=True, text=True)
        report = json.load(open(os.path.join(work, "all.json"))) if merged.returncode == 0 else {}
        check(len(report.get("jobs", [])) == JOBS and report.get("succeeded") == JOBS, f"the reports merge into one of {JOBS:,} jobs")

        print("== a job added moves no other")
        before = {i: planned(work, f"{i}/4") for i in range(1, 5)}
        jobs_file(work, base, '  - {id: newcomer, url: "' + base + '/newcomer"}\n')
        after = {i: planned(work, f"{i}/4") for i in range(1, 5)}
        check(all(after[i] - {"newcomer"} == before[i] for i in range(1, 5)), "every shard keeps its jobs")
        check(sum(len(after[i]) for i in range(1, 5)) == JOBS + 1, "and the newcomer is in exactly one")
    finally:
        server.shutdown()
        shutil.rmtree(work, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


main()
