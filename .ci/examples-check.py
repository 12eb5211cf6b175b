#!/usr/bin/env python3
"""The deployment examples, checked without a cluster, a Docker engine or systemd:

  python3 .ci/examples-check.py REPO_ROOT

- examples/kubernetes/job.yml parses, is an Indexed Job with backoffLimitPerIndex, its
  `completions` equals the N of its `--shard index-env=JOB_COMPLETION_INDEX/N` argument, its pod
  failure policy gives up on exit codes 2 and 64 and counts 75, and the image is the one thing
  left to fill in;
- examples/kubernetes/Dockerfile copies files that exist and runs the static binary;
- examples/github-actions/fetch.yml parses, its shard matrix matches the `--shard …/N` it runs, it
  retries exit 75 and merges the shards' reports;
- examples/systemd's service treats 75 as success and runs `fetchctl run`; its timer is persistent;
- examples/cron/crontab's line does not mail for exit 75.
(Every examples/*/*.yaml jobs file is validated by .ci/run with `fetchctl validate`.)
"""
import os, re, sys
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import check, finish

root = sys.argv[1]


def read(path):
    with open(os.path.join(root, path)) as f:
        return f.read()


documents = list(yaml.safe_load_all(read("examples/kubernetes/job.yml")))
job = next(d for d in documents if d.get("kind") == "Job")
spec = job["spec"]
check(spec.get("completionMode") == "Indexed", "the Job is an Indexed Job")
check(isinstance(spec.get("backoffLimitPerIndex"), int), "each index is retried on its own (backoffLimitPerIndex)")
container = spec["template"]["spec"]["containers"][0]
args = container["args"]
shard = args[args.index("--shard") + 1]
match = re.fullmatch(r"index-env=JOB_COMPLETION_INDEX/(\d+)", shard)
check(match is not None and int(match.group(1)) == spec["completions"] == spec["parallelism"],
      f"--shard {shard} matches completions {spec['completions']}")
rules = spec["podFailurePolicy"]["rules"]
codes = {rule["action"]: set(rule["onExitCodes"]["values"]) for rule in rules}
check({2, 64} <= codes.get("FailIndex", set()) and 75 in codes.get("Count", set()), "exit codes 2 and 64 fail the index, 75 is retried")
check(container["image"] == "REGISTRY/fetchctl:TAG", "the image is the placeholder to fill in")
check(spec["template"]["spec"]["restartPolicy"] == "Never", "restartPolicy Never (required by podFailurePolicy)")
claims = [d for d in documents if d.get("kind") == "PersistentVolumeClaim"]
check(claims and "ReadWriteMany" in claims[0]["spec"]["accessModes"], "the pods share a ReadWriteMany volume")

dockerfile = read("examples/kubernetes/Dockerfile")
copies = re.findall(r"^COPY (.+) \S+$", dockerfile, re.M)
sources = [s for line in copies for s in line.split()]
check(sources and all(os.path.exists(os.path.join(root, s)) or s.startswith(".build/") for s in sources),
      f"the Dockerfile copies files that exist ({', '.join(sources)})")
check(re.search(r"^FROM debian:\S+-slim$", dockerfile, re.M) is not None, "a slim base image")
check('ENTRYPOINT ["/usr/local/bin/fetchctl"]' in dockerfile, "the entrypoint is the binary")

workflow = yaml.safe_load(read("examples/github-actions/fetch.yml"))
shards = workflow["jobs"]["shard"]["strategy"]["matrix"]["shard"]
run_steps = " ".join(step.get("run", "") for step in workflow["jobs"]["shard"]["steps"])
check(f"--shard ${{{{ matrix.shard }}}}/{len(shards)}" in run_steps and shards == list(range(1, len(shards) + 1)),
      f"the workflow's matrix ({shards}) matches its --shard …/{len(shards)}")
check('"$code" -ne 75' in run_steps, "the workflow retries exit 75")
merge = " ".join(step.get("run", "") for step in workflow["jobs"]["report"]["steps"])
check("fetchctl report merge" in merge and workflow["jobs"]["report"]["needs"] == "shard", "the reports are merged after the shards")

service = read("examples/systemd/fetchctl-batch.service")
check(re.search(r"^SuccessExitStatus=75$", service, re.M) is not None, "systemd: exit 75 is not a failure")
check(re.search(r"^ExecStart=/usr/local/bin/fetchctl run ", service, re.M) is not None, "systemd: the service runs fetchctl run")
check(re.search(r"^Type=oneshot$", service, re.M) is not None, "systemd: a oneshot service")
timer = read("examples/systemd/fetchctl-batch.timer")
check("Persistent=true" in timer and "OnCalendar=" in timer, "systemd: the timer is persistent")

crontab = [line for line in read("examples/cron/crontab").splitlines() if line and not line.startswith("#") and "=" not in line.split()[0]]
check(len(crontab) == 1 and "fetchctl run" in crontab[0] and "-eq 75" in crontab[0], "cron: one line, running fetchctl, quiet on 75")
fields = crontab[0].split()[:5] if crontab else []
check(len(fields) == 5 and all(re.fullmatch(r"[\d*/,-]+", f) for f in fields), f"cron: five schedule fields ({' '.join(fields)})")

finish()
