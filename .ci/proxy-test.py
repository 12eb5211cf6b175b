#!/usr/bin/env python3
"""HTTPS batches through a real forward proxy (Debian's tinyproxy), the real fetchctl binary and
its HTTPS test server, all on 127.0.0.1:

  python3 .ci/proxy-test.py BIN_DIR

1. 40 HTTPS jobs through the proxy, credentials in HTTPS_PROXY: all succeed over CONNECT tunnels
   (the proxy's log shows them), and the proxy password appears in no byte fetchctl wrote;
2. the same with NO_PROXY=127.0.0.1: no tunnel is opened;
3. wrong credentials: the proxy refuses, the job fails with the code `proxy` after its retry;
4. the same batch through a SOCKS5 proxy (Debian's microsocks): ALL_PROXY=socks5h://…;
5. 40 plain http:// jobs with http_proxy: forwarded (absolute-form request lines in the proxy's
   log, no CONNECT), the password in no byte fetchctl wrote.
Prints one line per check and 'N passed, N failed'; exits non-zero on any failure.
"""
import json, os, shutil, signal, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import check, finish, stop, free_port, wait_for_port, written_texts

BIN = os.path.abspath(sys.argv[1])
FETCHCTL = os.path.join(BIN, "fetchctl")
PASSWORD = "pr0xy-s3cret-4711"


def jobs_file(base, pki):
    return f"""version: 1
settings: {{concurrency: 8, output_dir: out, tls: {{ca_file: "{pki}/ca.pem"}}, cache: {{policy: reload, behavior: do_not_cache}},
           retry: {{limit: 1, backoff: {{scale: 100ms}}}}}}
jobs:
  - id: page
    url: "{base}/bytes/8192?seed={{{{matrix.n}}}}"
    matrix: {{n: [{", ".join(str(n) for n in range(40))}]}}
    save: "pages/{{{{matrix.n}}}}.bin"
"""


def main():
    work = tempfile.mkdtemp(prefix="fetchctl-proxy-test-")
    pki = os.path.join(work, "pki")
    server = subprocess.Popen([FETCHCTL, "test-server", "--tls", pki], stdout=subprocess.PIPE, text=True)
    plain = subprocess.Popen([FETCHCTL, "test-server"], stdout=subprocess.PIPE, text=True)
    proxy = socks = None
    try:
        base = server.stdout.readline().strip()
        server_port = base.rsplit(":", 1)[1]
        port = free_port()
        log = os.path.join(work, "tinyproxy.log")
        conf = os.path.join(work, "tinyproxy.conf")
        with open(conf, "w") as f:
            f.write(f"""Port {port}
Listen 127.0.0.1
Timeout 60
MaxClients 200
LogFile "{log}"
LogLevel Info
PidFile "{work}/tinyproxy.pid"
Allow 127.0.0.1
BasicAuth fetchctl {PASSWORD}
""")
        proxy = subprocess.Popen(["tinyproxy", "-d", "-c", conf], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        wait_for_port(port)
        jobs = os.path.join(work, "jobs.yaml")
        with open(jobs, "w") as f:
            f.write(jobs_file(base, pki))

        def run(name, env, jobs=jobs):
            environment = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
            environment.update(env)
            directory = os.path.join(work, name)
            os.makedirs(directory)
            shutil.copy(jobs, os.path.join(directory, "jobs.yaml"))
            result = subprocess.run([FETCHCTL, "run", "jobs.yaml", "--log-format", "json", "--log-file", "log.jsonl",
                                     "--report", "json", "report.json"], cwd=directory, env=environment,
                                    capture_output=True, text=True, timeout=120)
            events = [json.loads(line) for line in open(os.path.join(directory, "log.jsonl")) if line.strip()]
            return result, events, directory

        def tunnels():
            return sum(1 for line in open(log) if f"CONNECT 127.0.0.1:{server_port}" in line)

        print("== 1. 40 HTTPS jobs through tinyproxy, credentials in HTTPS_PROXY")
        proxy_url = f"http://fetchctl:{PASSWORD}@127.0.0.1:{port}"
        result, events, directory = run("through", {"HTTPS_PROXY": proxy_url})
        check(result.returncode == 0, f"exit 0 (got {result.returncode}) {result.stderr[-400:] if result.returncode else ''}")
        done = [e for e in events if e["event"] == "job.finished" and e["outcome"] == "succeeded"]
        check(len(done) == 40, f"40 jobs succeeded ({len(done)})")
        check(len(os.listdir(os.path.join(directory, "out/pages"))) == 40, "40 files saved")
        opened = tunnels()
        check(1 <= opened <= 8, f"the jobs went through CONNECT tunnels, reused ({opened} for 40 jobs)")
        written = written_texts(directory, [result.stdout, result.stderr])
        check(not any(PASSWORD in text for text in written), "the proxy password is in no byte fetchctl wrote (stdout, stderr, log, report, state)")

        print("== 2. NO_PROXY=127.0.0.1: straight to the server")
        result, events, _ = run("direct", {"HTTPS_PROXY": proxy_url, "NO_PROXY": "127.0.0.1"})
        check(result.returncode == 0, f"exit 0 (got {result.returncode})")
        check(tunnels() == opened, f"no new tunnel ({tunnels() - opened})")

        print("== 3. wrong credentials: refused (tinyproxy answers 401, not 407), the code proxy, retried once")
        result, events, _ = run("refused", {"HTTPS_PROXY": f"http://fetchctl:wrong-{PASSWORD}@127.0.0.1:{port}"})
        check(result.returncode == 1, f"exit 1 (got {result.returncode})")
        failures = [e for e in events if e["event"] == "job.finished" and e["outcome"] == "failed"]
        check(len(failures) == 40 and all(e.get("error") == "proxy" for e in failures), "every job failed with the code proxy")
        message = failures[0].get("message", "") if failures else ""
        check(all("refused the tunnel" in e.get("message", "") for e in failures), f"the message says the proxy refused: {message}")
        retries = [e for e in events if e["event"] == "request.retrying"]
        check(len(retries) == 40, f"each retried once as a transport failure ({len(retries)})")
        check(PASSWORD not in result.stderr + open(os.path.join(work, "refused", "log.jsonl")).read(), "no password in the log")

        print("== 4. through a SOCKS5 proxy (microsocks)")
        socks_port = free_port()
        socks = subprocess.Popen(["microsocks", "-i", "127.0.0.1", "-p", str(socks_port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(socks_port)
        result, events, directory = run("socks", {"ALL_PROXY": f"socks5h://127.0.0.1:{socks_port}"})
        check(result.returncode == 0, f"exit 0 (got {result.returncode}) {result.stderr[-400:] if result.returncode else ''}")
        done = [e for e in events if e["event"] == "job.finished" and e["outcome"] == "succeeded"]
        check(len(done) == 40, f"40 jobs succeeded through SOCKS5 ({len(done)})")
        socks.send_signal(signal.SIGTERM)
        socks.wait(timeout=5)
        result, events, _ = run("socks-gone", {"ALL_PROXY": f"socks5h://127.0.0.1:{socks_port}"})
        failures = [e for e in events if e["event"] == "job.finished" and e["outcome"] == "failed"]
        check(result.returncode == 1 and len(failures) == 40 and all(e.get("error") == "proxy" for e in failures),
              f"with the SOCKS5 proxy gone, every job fails with proxy ({failures[0].get('message', '') if failures else result.stderr[-300:]})")

        print("== 5. 40 plain http:// jobs with http_proxy: forwarded, not tunnelled")
        plain_base = plain.stdout.readline().strip()
        plain_port = plain_base.rsplit(":", 1)[1]
        plain_jobs = os.path.join(work, "plain.yaml")
        with open(plain_jobs, "w") as f:
            f.write(jobs_file(plain_base, pki))
        result, events, directory = run("forwarded", {"http_proxy": proxy_url}, jobs=plain_jobs)
        check(result.returncode == 0, f"exit 0 (got {result.returncode}) {result.stderr[-400:] if result.returncode else ''}")
        done = [e for e in events if e["event"] == "job.finished" and e["outcome"] == "succeeded"]
        check(len(done) == 40, f"40 jobs succeeded ({len(done)})")
        retries = [e for e in events if e["event"] == "request.retrying"]
        check(not retries, f"no retry spent: tinyproxy closes each connection after its response, which the transport handles "
                           f"({len(retries)}{': ' + retries[0].get('reason', '') if retries else ''})")
        lines = open(log).read()
        forwarded = lines.count(f"GET http://127.0.0.1:{plain_port}/bytes/8192?seed=")
        check(forwarded == 40, f"the proxy forwarded 40 absolute-form GETs ({forwarded})")
        check(f"CONNECT 127.0.0.1:{plain_port}" not in lines, "no CONNECT to the plain server")
        written = written_texts(directory, [result.stdout, result.stderr])
        check(not any(PASSWORD in text for text in written), "the proxy password is in no byte fetchctl wrote")
    finally:
        stop(proxy, server, socks, plain)
        shutil.rmtree(work, ignore_errors=True)
    finish()


main()
