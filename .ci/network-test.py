#!/usr/bin/env python3
"""Outages across a real link (issue 15), run by .ci/run as root.

Two network namespaces joined by a veth pair: the test server in `fkt-srv` on 10.77.9.9 (its
loopback, reached only through the client's default route), the real fetchctl binary in `fkt-cli`.
The link is shaped to 200 Mbit/s (tc tbf) so a 64 MiB download lasts a few seconds. Scenarios:

1. the link goes down for 3 s in the middle of a 64 MiB download and of a 500-job batch with
   `retry: {limit: 1}`: everything completes, sha256 right, no retry spent, network.lost and
   network.restored logged;
2. the link stays down past `network.max_wait: 5s`: exit 75, the job `offline`, the .part kept;
   the next run with the link up resumes it (download.resumed) and finishes;
3. only the default route is deleted for 3 s (the link stays up): as 1.

4. TRIALS times: a 24 MiB download killed with SIGKILL at a random moment, then rerun with a new
   query string (a re-signed URL): it must resume (download.resumed) and end with the right sha256.

The namespaces are removed even when a scenario fails.

  .ci/network-test.py BIN_DIR [TRIALS]     (BIN_DIR holds fetchctl and test-server; TRIALS: 5)
"""
import hashlib, json, os, random, shutil, subprocess, sys, tempfile, threading, time

BIN = sys.argv[1]
TRIALS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
SRV, CLI = "fkt-srv", "fkt-cli"
SERVER = "http://10.77.9.9:8080"
DOWNLOAD = f"{SERVER}/bytes/67108864?seed=42"


def sh(*args, check=True):
    return subprocess.run(list(args), check=check, capture_output=True, text=True)


def cli(*args, check=True):
    return sh("ip", "netns", "exec", CLI, *args, check=check)


def setup():
    teardown()
    sh("ip", "netns", "add", SRV)
    sh("ip", "netns", "add", CLI)
    sh("ip", "link", "add", "v-srv", "netns", SRV, "type", "veth", "peer", "name", "v-cli", "netns", CLI)
    for ns, dev, address in [(SRV, "v-srv", "10.77.0.1/24"), (CLI, "v-cli", "10.77.0.2/24")]:
        sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
        sh("ip", "netns", "exec", ns, "ip", "addr", "add", address, "dev", dev)
        sh("ip", "netns", "exec", ns, "ip", "link", "set", dev, "up")
    sh("ip", "netns", "exec", SRV, "ip", "addr", "add", "10.77.9.9/32", "dev", "lo")
    sh("ip", "netns", "exec", SRV, "tc", "qdisc", "add", "dev", "v-srv", "root", "tbf", "rate", "200mbit", "burst", "64kb", "latency", "400ms")
    add_default_route()


def add_default_route():
    cli("ip", "route", "replace", "default", "via", "10.77.0.1", "dev", "v-cli")


def link(up):
    cli("ip", "link", "set", "v-cli", "up" if up else "down")
    if up:
        # Taking a link down drops its IPv4 routes; DHCP or the network manager would add the default back.
        time.sleep(0.2)
        add_default_route()


def teardown():
    for ns in (SRV, CLI):
        sh("ip", "netns", "del", ns, check=False)


def outage(after, seconds, kind="link"):
    """Starts a thread that cuts the network `after` seconds from now for `seconds`."""
    def run():
        time.sleep(after)
        if kind == "link":
            link(False)
        else:
            cli("ip", "route", "del", "default")
        time.sleep(seconds)
        if kind == "link":
            link(True)
        else:
            add_default_route()
    thread = threading.Thread(target=run)
    thread.start()
    return thread


def run_fetchctl(directory, jobs):
    path = os.path.join(directory, "jobs.yaml")
    with open(path, "w") as f:
        f.write(jobs)
    log = os.path.join(directory, "run.log")
    result = cli(os.path.join(BIN, "fetchctl"), "run", path, "--log-format", "json", "--log-file", log, "--progress", "never", check=False)
    events = [json.loads(line) for line in open(log)] if os.path.exists(log) else []
    return result.returncode, events, result.stderr


def names(events, name):
    return [e for e in events if e["event"] == name]


failures = []


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what)
    if not condition:
        failures.append(what)


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def main():
    setup()
    server = subprocess.Popen(["ip", "netns", "exec", SRV, os.path.join(BIN, "test-server"), "10.77.9.9", "8080"], stdout=subprocess.PIPE, text=True)
    work = tempfile.mkdtemp(prefix="fetchctl-network-")
    try:
        print("test server:", server.stdout.readline().strip())
        # The expected digest, fetched once with the link up (curl in the client namespace).
        reference = os.path.join(work, "reference.bin")
        cli("curl", "-sSf", "-o", reference, DOWNLOAD)
        expected = sha256(reference)

        print("== 1. the link down for 3 s during a 64 MiB download and a 500-job batch")
        d = os.path.join(work, "one")
        os.makedirs(d)
        cut = outage(after=1.0, seconds=3)
        status, events, stderr = run_fetchctl(d, f"""version: 1
settings: {{output_dir: out, concurrency: 8, retry: {{limit: 1}}}}
jobs:
  - {{id: big, url: "{DOWNLOAD}", download: big.bin, checksum: "sha256:{expected}"}}
  - id: batch
    url: "{SERVER}/delay/60?n={{{{matrix.n}}}}"
    matrix: {{n: [{", ".join(str(n) for n in range(500))}]}}
""")
        cut.join()
        check(status == 0, f"exit 0 (got {status}) {stderr[-500:] if status else ''}")
        check(sha256(os.path.join(d, "out/big.bin")) == expected, "sha256 of the download")
        check(len([e for e in names(events, "job.finished") if e["outcome"] == "succeeded"]) == 501, "501 jobs succeeded")
        check(not names(events, "request.retrying"), f"no retry spent ({len(names(events, 'request.retrying'))} retries)")
        check(names(events, "network.lost") and names(events, "network.restored"), "network.lost and network.restored logged")
        restored = names(events, "network.restored")
        check(restored and 2500 <= restored[0]["down_ms"] <= 8000, f"down_ms about 3 s ({restored[0]['down_ms'] if restored else None})")

        print("== 2. the link down past max_wait: exit 75, offline, .part kept; the next run resumes")
        d = os.path.join(work, "two")
        os.makedirs(d)
        jobs = f"""version: 1
settings: {{output_dir: out, network: {{max_wait: 5s}}}}
jobs:
  - {{id: big, url: "{DOWNLOAD}", download: big.bin, checksum: "sha256:{expected}"}}
"""
        cut = outage(after=1.0, seconds=12)
        status, events, stderr = run_fetchctl(d, jobs)
        check(status == 75, f"exit 75 (got {status})")
        finished = names(events, "job.finished")
        check(finished and finished[0].get("error") == "offline", f"the job failed offline ({finished[0].get('error') if finished else None})")
        part = os.path.join(d, "out/big.bin.part")
        check(os.path.exists(part) and os.path.getsize(part) > 0, "the .part is kept")
        cut.join()
        status, events, stderr = run_fetchctl(d, jobs)
        check(status == 0, f"the rerun exits 0 (got {status})")
        check(names(events, "download.resumed"), "the rerun resumed the .part")
        check(sha256(os.path.join(d, "out/big.bin")) == expected, "sha256 after resuming")

        print("== 3. only the default route deleted for 3 s during the batch")
        d = os.path.join(work, "three")
        os.makedirs(d)
        cut = outage(after=1.0, seconds=3, kind="route")
        status, events, stderr = run_fetchctl(d, f"""version: 1
settings: {{output_dir: out, concurrency: 8, retry: {{limit: 1}}}}
jobs:
  - id: batch
    url: "{SERVER}/delay/60?n={{{{matrix.n}}}}"
    matrix: {{n: [{", ".join(str(n) for n in range(500))}]}}
""")
        cut.join()
        check(status == 0, f"exit 0 (got {status}) {stderr[-500:] if status else ''}")
        check(len([e for e in names(events, "job.finished") if e["outcome"] == "succeeded"]) == 500, "500 jobs succeeded")
        check(not names(events, "request.retrying"), "no retry spent")
        check(names(events, "network.lost") and names(events, "network.restored"), "network.lost and network.restored logged")

        print(f"== 4. {TRIALS} downloads killed with SIGKILL at a random moment, each rerun at a re-signed URL")
        small = f"{SERVER}/bytes/25165824?seed=9"
        small_reference = os.path.join(work, "small.bin")
        cli("curl", "-sSf", "-o", small_reference, small)
        small_expected = sha256(small_reference)
        resumed = 0
        for trial in range(TRIALS):
            d = os.path.join(work, f"kill-{trial}")
            os.makedirs(d)
            def jobs(sig):
                return f"""version: 1
settings: {{output_dir: out}}
jobs:
  - {{id: file, url: "{small}&sig={sig}", download: file.bin}}
"""
            with open(os.path.join(d, "jobs.yaml"), "w") as f:
                f.write(jobs(f"{trial}-first"))
            process = subprocess.Popen(["ip", "netns", "exec", CLI, os.path.join(BIN, "fetchctl"), "run", os.path.join(d, "jobs.yaml"),
                                        "--progress", "never"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            # 24 MiB at 200 Mbit/s is about a second: somewhere in the middle of it.
            part = os.path.join(d, "out/file.bin.part")
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and not (os.path.exists(part) and os.path.getsize(part) > 0):
                time.sleep(0.01)
            time.sleep(random.uniform(0.05, 0.6))
            process.kill()
            process.wait()
            part_size = os.path.getsize(part) if os.path.exists(part) else 0
            had_part = part_size > 0
            status, events, _ = run_fetchctl(d, jobs(f"{trial}-second"))
            ok = status == 0 and had_part and names(events, "download.resumed") and sha256(os.path.join(d, "out/file.bin")) == small_expected
            resumed += 1 if ok else 0
            print(f"  trial {trial + 1}: killed with {part_size:,} of 25,165,824 bytes in the .part; "
                  + ("resumed, sha256 right" if ok else f"NOT resumed (exit {status}, part {had_part})"))
        check(resumed == TRIALS, f"{resumed} of {TRIALS} killed downloads resumed at a new URL")
    finally:
        server.terminate()
        server.wait()
        teardown()
        shutil.rmtree(work, ignore_errors=True)
    print(f"{len(failures)} failed" if failures else "all network scenarios passed")
    sys.exit(1 if failures else 0)


main()
