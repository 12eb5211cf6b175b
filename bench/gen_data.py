#!/usr/bin/env python3
"""Writes the data nginx serves and every client's input for bench/compare.sh's scenarios.

usage: gen_data.py WORK_DIR BASE_URL

WORK_DIR/www/      what nginx serves: big/1g.bin, big/4g.bin (random bytes; 4g is 1g four times),
                   s16k/0..1999.bin (16 KiB each), s1k/0..19999.bin (1 KiB each)
WORK_DIR/inputs/   per scenario (small16k, small1k): curl.cfg (url/output pairs for `curl -K`),
                   aria2.txt (`aria2c -i`), wget.txt (`wget -i`), and fetchctl jobs files
                   (jobs-*.yaml) whose outputs go to WORK_DIR/out; one-*.txt list the big files for
                   bench/ahc-floor.
"""
import os
import subprocess
import sys

work, base = sys.argv[1], sys.argv[2].rstrip("/")
www = os.path.join(work, "www")
inputs = os.path.join(work, "inputs")
out = os.path.join(work, "out")
GiB = 1 << 30

SMALL = {  # scenario name: (folder, count, size, concurrency)
    "small16k": ("s16k", 2000, 16 * 1024, 16),
    "small1k": ("s1k", 20000, 1024, 32),
}


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


# Served data.
os.makedirs(os.path.join(www, "big"), exist_ok=True)
one = os.path.join(www, "big", "1g.bin")
if not os.path.exists(one):
    subprocess.run(["head", "-c", str(GiB), "/dev/urandom"], stdout=open(one, "wb"), check=True)
four = os.path.join(www, "big", "4g.bin")
if not os.path.exists(four):
    with open(four, "wb") as f:
        subprocess.run(["cat", one, one, one, one], stdout=f, check=True)
for folder, count, size, _ in SMALL.values():
    os.makedirs(os.path.join(www, folder), exist_ok=True)
    for n in range(count):
        with open(os.path.join(www, folder, f"{n}.bin"), "wb") as f:
            f.write(os.urandom(size))

# One download, for scenario 1 and the 4 GiB memory run. Default settings: state, log and resume on.
for name in ("1g", "4g"):
    write(os.path.join(inputs, f"one-{name}.txt"), f"{base}/big/{name}.bin\n")  # for ahc-floor
    write(os.path.join(inputs, f"jobs-{name}.yaml"),
          f"version: 1\nsettings: {{output_dir: {out}}}\njobs:\n"
          f"  - id: file\n    url: {base}/big/{name}.bin\n    download: {name}.bin\n")

# Many small saves. per_host matches the scenario's concurrency, as curl --parallel-max and aria2c -j
# open that many connections to the one host.
for scenario, (folder, count, _, concurrency) in SMALL.items():
    urls = [f"{base}/{folder}/{n}.bin" for n in range(count)]
    write(os.path.join(inputs, scenario, "curl.cfg"),
          "".join(f'url = "{u}"\noutput = "{out}/{n}.bin"\n' for n, u in enumerate(urls)))
    write(os.path.join(inputs, scenario, "aria2.txt"),
          "".join(f"{u}\n  out={n}.bin\n" for n, u in enumerate(urls)))
    write(os.path.join(inputs, scenario, "wget.txt"), "".join(f"{u}\n" for u in urls))
    write(os.path.join(inputs, scenario, "jobs.yaml"),
          f"version: 1\n"
          f"settings: {{concurrency: {concurrency}, per_host: {concurrency}, output_dir: {out}}}\n"
          f"jobs:\n"
          f"  - id: f\n"
          f"    url: \"{base}/{folder}/{{{{matrix.n}}}}.bin\"\n"
          f"    matrix: {{n: [{','.join(str(n) for n in range(count))}]}}\n"
          f"    save: \"{{{{matrix.n}}}}.bin\"\n")
