#!/usr/bin/env python3
"""Prints bench/compare.sh's results as the Markdown tables of BENCHMARKS.md.

usage: render_table.py RESULTS_DIR

Reads RESULTS_DIR/<scenario>.json (hyperfine --export-json), rss.tsv and machine.tsv. Times are the
medians of hyperfine's runs; ratios are to curl's median in the same run; "target" is issue #18's
(which tightened issue #5's 1.2 for the 1 KiB files to 1.0). CPU is user + system time a run,
hyperfine's means, against curl's in the same run (issue #18: at or below curl's).
"""
import csv
import json
import os
import sys

results = sys.argv[1]
TOOLS = ["curl", "aria2c", "wget", "fetchctl"]
FLOOR = "ahc-floor"  # AsyncHTTPClient alone (bench/ahc-floor): the floor under fetchctl
SCENARIOS = [  # file, title, fetchctl target as a ratio to curl
    ("one-file", "1. one 1 GiB file to disk", 1.0),
    ("small16k", "2. 2,000 × 16 KiB files, concurrency 16", 1.0),
    ("small1k", "3. 20,000 × 1 KiB files, concurrency 32", 1.0),
]
RSS_ROWS = [("1g", "1 GiB download"), ("4g", "4 GiB download"),
            ("small16k", "2,000 × 16 KiB"), ("small1k", "20,000 × 1 KiB")]


def runs(name):
    """hyperfine's results for a scenario, by command; empty when it was not run."""
    path = os.path.join(results, f"{name}.json")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return {r["command"]: r for r in json.load(f)["results"]}


def medians(name):
    return {command: r["median"] for command, r in runs(name).items()}


def cpu(name):
    """User + system seconds a run, by command (hyperfine's means)."""
    return {command: r["user"] + r["system"] for command, r in runs(name).items() if "user" in r and "system" in r}


def ms(seconds):
    return f"{seconds * 1000:,.0f} ms" if seconds < 10 else f"{seconds:,.1f} s"


with open(os.path.join(results, "machine.tsv")) as f:
    machine = dict(row for row in csv.reader(f, delimiter="\t") if len(row) == 2)

def run_count(name):
    with open(os.path.join(results, f"{name}.json")) as f:
        return len(json.load(f)["results"][0]["times"])


counts = {name: run_count(name) for name, _, _ in SCENARIOS if os.path.exists(os.path.join(results, f"{name}.json"))}
others = sorted({n for name, n in counts.items() if name != "one-file"})
text = " or ".join(map(str, others)) if others else machine.get("runs", "?")
if "one-file" in counts and counts["one-file"] not in others:
    text += f" ({counts['one-file']} for the 1 GiB download)" if others else str(counts["one-file"])
print(f"Wall time, median of {text} runs after a warm-up (hyperfine); in brackets, the ratio to curl.")
print()
print("| scenario | " + " | ".join(TOOLS) + " | fetchctl ÷ curl | target | AsyncHTTPClient alone |")
print("|---|" + "---:|" * len(TOOLS) + "---:|---|---:|")
for name, title, target in SCENARIOS:
    m = medians(name)
    if not m:
        continue
    curl = m["curl"]
    cells = [ms(m[t]) + ("" if t == "curl" else f" ({m[t] / curl:.2f}×)") for t in TOOLS]
    ratio = m["fetchctl"] / curl
    verdict = "met" if ratio <= target else "missed"
    floor = f"{ms(m[FLOOR])} ({m[FLOOR] / curl:.2f}×)" if FLOOR in m else ""
    print(f"| {title} | " + " | ".join(cells) + f" | **{ratio:.2f}** | ≤ {target:.1f} ({verdict}) | {floor} |")
cpu_rows = []
for name, title, _ in SCENARIOS:
    c = cpu(name)
    if "curl" in c and "fetchctl" in c:
        ratio = c["fetchctl"] / c["curl"]
        floor = f"{ms(c[FLOOR])} ({c[FLOOR] / c['curl']:.2f}×)" if FLOOR in c else ""
        cpu_rows.append(f"| {title} | {ms(c['curl'])} | {ms(c['fetchctl'])} | **{ratio:.2f}** | "
                        f"≤ 1.0 ({'met' if ratio <= 1.0 else 'missed'}) | {floor} |")
if cpu_rows:
    print()
    print("CPU a run (user + system, hyperfine's means over the runs); issue #18's target: fetchctl's at or below curl's:")
    print()
    print("| scenario | curl | fetchctl | fetchctl ÷ curl | target | AsyncHTTPClient alone |")
    print("|---|---:|---:|---:|---|---:|")
    print("\n".join(cpu_rows))

m = medians("config")
if m:
    print(f"| 4. 5,000-job file (2,000 routes) | | | | validate {ms(m['fetchctl validate'])}, "
          f"`--dry-run` {ms(m['fetchctl run --dry-run'])} | | | |")

rss = {}
path = os.path.join(results, "rss.tsv")
if os.path.exists(path):
    with open(path) as f:
        for scenario, tool, kib in csv.reader(f, delimiter="\t"):
            rss[(scenario, tool)] = int(kib) / 1024
print()
print("Peak RSS (`/usr/bin/time`, median of the runs):")
print()
print("| run | " + " | ".join(TOOLS + ["AsyncHTTPClient alone"]) + " |")
print("|---|" + "---:|" * (len(TOOLS) + 1))
for key, title in RSS_ROWS:
    if (key, "fetchctl") in rss:
        print(f"| {title} | " + " | ".join(f"{rss[(key, t)]:.1f} MiB" if (key, t) in rss else "" for t in TOOLS + [FLOOR]) + " |")
if ("1g", "fetchctl") in rss and ("4g", "fetchctl") in rss:
    a, b = rss[("1g", "fetchctl")], rss[("4g", "fetchctl")]
    flat = abs(b - a) / a <= 0.10
    print()
    print(f"fetchctl's peak RSS, 1 GiB vs 4 GiB: {a:.1f} vs {b:.1f} MiB "
          f"({(b - a) / a * 100:+.1f}%; target: within 10% and under 40 MiB — "
          f"{'met' if flat and max(a, b) < 40 else 'missed'}).")

print()
print("Machine: " + "; ".join(f"{k}: {v}" for k, v in machine.items() if k != "runs") + ".")
