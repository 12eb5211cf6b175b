#!/usr/bin/env python3
"""--metrics-file and --metrics-push against real parts: Prometheus's own text parser
(prometheus_client) reads the file, and Debian's prometheus-pushgateway, started on 127.0.0.1,
receives the pushes and serves them back.

  python3 .ci/metrics-test.py BIN_DIR

1. a run with 20 good jobs and 2 that fail after a retry: the file parses; jobs by outcome, failures
   by code, requests by host and status class, retries, bytes, cache results, timestamps and the
   finished flag have the values the run had; no last success yet;
2. the good jobs alone (--job ok): exit 0, last success = this run;
3. the whole batch again (fails): last success still the second run's (from the state store);
4. the pushes: the Pushgateway serves the last push per group (jobs file; and a --shard run's own).
Prints one line per check and 'N passed, N failed'; exits non-zero on any failure.
"""
import os, shutil, subprocess, sys, tempfile, time, urllib.request
from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import check, finish, stop, free_port

BIN = os.path.abspath(sys.argv[1])
FETCHCTL = os.path.join(BIN, "fetchctl")


def samples(text):
    """{(name, frozenset(labels)): value} from the text format, through Prometheus's parser."""
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return out


def value(found, name, **labels):
    for (n, l), v in found.items():
        if n == name and all((k, w) in l for k, w in labels.items()):
            return v
    return None


def main():
    work = tempfile.mkdtemp(prefix="fetchctl-metrics-test-")
    server = subprocess.Popen([FETCHCTL, "test-server"], stdout=subprocess.PIPE, text=True)
    port = free_port()
    gateway = subprocess.Popen(["prometheus-pushgateway", f"--web.listen-address=127.0.0.1:{port}"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = server.stdout.readline().strip()
        host = base.split("://", 1)[1]
        gateway_url = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                urllib.request.urlopen(gateway_url + "/-/ready", timeout=0.5)
                break
            except OSError:
                time.sleep(0.1)
        with open(os.path.join(work, "jobs.yaml"), "w") as f:
            f.write(f"""version: 1
settings: {{output_dir: out, concurrency: 4, retry: {{limit: 1, backoff: {{scale: 10ms}}}}}}
jobs:
  - id: ok
    url: "{base}/echo?n={{{{matrix.n}}}}"
    matrix: {{n: [{", ".join(str(n) for n in range(20))}]}}
    save: "ok/{{{{matrix.n}}}}.json"
  - id: broken
    url: "{base}/status/503?n={{{{matrix.n}}}}"
    matrix: {{n: [1, 2]}}
""")

        def run(*extra):
            before = time.time()
            result = subprocess.run([FETCHCTL, "run", "jobs.yaml", "--progress", "never", "--metrics-file", "metrics/fetchctl.prom",
                                     "--metrics-push", gateway_url, *extra], cwd=work, capture_output=True, text=True, timeout=120)
            with open(os.path.join(work, "metrics/fetchctl.prom")) as f:
                text = f.read()
            return result, text, before, time.time()

        print("== 1. 20 good jobs, 2 failing after a retry")
        result, text, before, after = run()
        check(result.returncode == 1, f"exit 1 (got {result.returncode}) {result.stderr[-300:] if result.returncode != 1 else ''}")
        check(not any(name.startswith(".") for name in os.listdir(os.path.join(work, "metrics"))), "no temporary file left beside the metrics file")
        found = samples(text)
        check(value(found, "fetchctl_jobs", outcome="succeeded", jobs_file="jobs.yaml") == 20, "fetchctl_jobs{outcome=succeeded} 20")
        check(value(found, "fetchctl_jobs", outcome="failed") == 2, "fetchctl_jobs{outcome=failed} 2")
        check(value(found, "fetchctl_jobs", outcome="skipped") == 0, "fetchctl_jobs{outcome=skipped} 0 (every outcome present)")
        check(value(found, "fetchctl_job_failures", error="status") == 2, "fetchctl_job_failures{error=status} 2")
        check(value(found, "fetchctl_requests_total", host=host, status_class="2xx") == 20, "fetchctl_requests_total{status_class=2xx} 20")
        check(value(found, "fetchctl_requests_total", host=host, status_class="5xx") == 4, "fetchctl_requests_total{status_class=5xx} 4 (2 jobs × 2 attempts)")
        check(value(found, "fetchctl_retries_total") == 2, "fetchctl_retries_total 2")
        check((value(found, "fetchctl_downloaded_bytes_total") or 0) > 20 * 100, f"fetchctl_downloaded_bytes_total {value(found, 'fetchctl_downloaded_bytes_total')}")
        check(value(found, "fetchctl_cache_results_total", result="miss") == 24, "fetchctl_cache_results_total{result=miss} 24 (every request: 20, and 2 × 2 attempts)")
        check(value(found, "fetchctl_run_finished") == 1 and value(found, "fetchctl_run_exit_code") == 1, "finished, exit code 1")
        last_run = value(found, "fetchctl_last_run_timestamp_seconds") or 0
        check(before <= last_run <= after + 1, "fetchctl_last_run_timestamp_seconds is the run's end")
        check(0 < (value(found, "fetchctl_run_duration_seconds") or 0) < after - before + 1, "fetchctl_run_duration_seconds")
        check(value(found, "fetchctl_last_success_timestamp_seconds") is None, "no last success yet")

        print("== 2. the good jobs alone: a success")
        result, text, before, after = run("--job", "ok")
        check(result.returncode == 0, f"exit 0 (got {result.returncode})")
        success = value(samples(text), "fetchctl_last_success_timestamp_seconds") or 0
        check(before <= success <= after + 1, "fetchctl_last_success_timestamp_seconds is this run's end")

        print("== 3. the whole batch again: it fails, the last success stays")
        result, text, before, after = run()
        check(result.returncode == 1, f"exit 1 (got {result.returncode})")
        found = samples(text)
        check(abs((value(found, "fetchctl_last_success_timestamp_seconds") or 0) - success) < 0.01,
              "fetchctl_last_success_timestamp_seconds is still the second run's")
        check((value(found, "fetchctl_last_run_timestamp_seconds") or 0) >= before, "fetchctl_last_run_timestamp_seconds moved on")

        print("== 4. the Pushgateway has the last push of each group")
        shard = subprocess.run([FETCHCTL, "run", "jobs.yaml", "--progress", "never", "--shard", "1/2", "--metrics-push", gateway_url],
                               cwd=work, capture_output=True, text=True, timeout=120)
        check(not shard.stderr.count("error: cannot push") and not "refused the metrics" in shard.stderr, f"the shard's push was taken {shard.stderr[-200:]}")
        served = samples(urllib.request.urlopen(gateway_url + "/metrics", timeout=5).read().decode())
        whole = value(served, "fetchctl_jobs", job="fetchctl", jobs_file="jobs.yaml", outcome="failed")
        check(whole == 2, f"the whole batch's group: fetchctl_jobs{{outcome=failed}} 2 (got {whole})")
        shard_jobs = sum(v for (n, l), v in served.items() if n == "fetchctl_jobs" and ("shard", "1/2") in l)
        check(0 < shard_jobs < 22, f"the shard's own group: {shard_jobs} of the 22 jobs")
        check(value(served, "fetchctl_last_success_timestamp_seconds", job="fetchctl") is not None,
              "fetchctl_last_success_timestamp_seconds is there to alert on")
    finally:
        stop(server, gateway)
        shutil.rmtree(work, ignore_errors=True)
    finish()


main()
