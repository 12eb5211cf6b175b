#!/usr/bin/env python3
"""Writes a large, valid config for timing `fetchctl validate`: N_ROUTES routes over 20 route files
and N_JOBS jobs (some with matrices and needs) in one jobs file.

usage: gen_validate_config.py OUT_DIR [N_ROUTES] [N_JOBS]
"""
import os
import sys

out = sys.argv[1]
n_routes = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
n_jobs = int(sys.argv[3]) if len(sys.argv) > 3 else 5000
files = 20
os.makedirs(out, exist_ok=True)
per_file = n_routes // files
includes = []
route_names = []
for f in range(files):
    service = f"svc{f}"
    lines = [
        "version: 1",
        f"service: {service}",
        f"base_url: ${{BENCH_API_{f}:-https://api{f}.example.org}}",
        "defaults:",
        "  headers: {Accept: application/json, X-Bench: \"yes\"}",
        "  retry: {limit: 3, backoff: {scale: 250ms, max: 10s}, statuses: [429, \"5xx\"]}",
        "  timeout: {connect: 5s, read: 30s, total: 2m}",
        "routes:",
    ]
    for r in range(per_file):
        name = f"route_{r}"
        route_names.append(f"{service}.{name}")
        kind = r % 4
        if kind == 0:
            lines += [
                f"  {name}:",
                f"    path: /items/{{{{id}}}}/r{r}",
                "    params:",
                "      id: {type: integer, minimum: 1}",
                "      page: {type: integer, default: 1, minimum: 1, maximum: 1000}",
                "    parameters: {page: \"{{page}}\", q: fixed}",
            ]
        elif kind == 1:
            lines += [
                f"  {name}:",
                "    method: POST",
                f"    path: /create/r{r}",
                "    encoding: json",
                "    params:",
                "      id: {type: integer}",
                "      tags: {type: array, default: [a, b]}",
                "    parameters: {id: \"{{id}}\", tags: \"{{tags}}\", meta: {source: bench, n: 1}}",
                "    validate: {status: [\"2xx\", 304]}",
            ]
        elif kind == 2:
            lines += [
                f"  {name}:",
                f"    path: /search/r{r}",
                "    params:",
                "      id: {type: string, pattern: \"^[0-9]+$\"}",
                "      sort: {enum: [stars, updated], default: stars}",
                "    parameters: {q: \"id:{{id}}\", sort: \"{{sort}}\"}",
                "    encoding_options: {arrays: no_brackets, spaces: plus}",
                "    cache: {policy: protocol, stale_if_error: 1d}",
            ]
        else:
            lines += [
                f"  {name}:",
                f"    path: /files/{{{{id}}}}/r{r}.bin",
                "    download: {resumable: true}",
            ]
    path = os.path.join(out, f"svc{f}.routes.yaml")
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    includes.append(os.path.basename(path))

lines = [
    "version: 1",
    "include: [" + ", ".join(includes) + "]",
    "settings:",
    "  concurrency: 16",
    "  per_host: 8",
    "  output_dir: out",
    "jobs:",
]
for j in range(n_jobs):
    route = route_names[j % len(route_names)]
    kind = int(route.rsplit("_", 1)[1]) % 4
    job = [f"  - id: job-{j}", f"    route: {route}"]
    if kind == 3:
        job.append(f"    params: {{id: {j + 1}}}")
        job.append(f"    download: files/{j}.bin")
    else:
        job.append(f"    params: {{id: \"{j + 1}\"}}")
        job.append(f"    save: json/{j}.json")
    if j % 50 == 1:
        job.append(f"    needs: [job-{j - 1}]")
    lines += job
with open(os.path.join(out, "jobs.yaml"), "w") as fh:
    fh.write("\n".join(lines) + "\n")
print(f"wrote {n_routes} routes in {files} files and {n_jobs} jobs to {out}")
