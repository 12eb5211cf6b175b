#!/usr/bin/env python3
"""Merges hyperfine --export-json files of the same commands (bench/compare.sh's rounds) into one.

    merge_rounds.py OUT.json ROUND.json...

Each command's run times are concatenated in round order; mean, median, min and max are computed
over all of them, and the result has hyperfine's shape (results[].command/times/mean/median/min/max/
user/system), which bench/render_table.py reads.
"""
import json
import statistics
import sys


def main() -> None:
    out, *rounds = sys.argv[1:]
    if not rounds:
        sys.exit("usage: merge_rounds.py OUT.json ROUND.json...")
    merged = {}  # command -> {"times": [...], "user": [...], "system": [...]}
    order = []
    for path in rounds:
        with open(path) as f:
            for result in json.load(f)["results"]:
                name = result["command"]
                if name not in merged:
                    merged[name] = {"times": [], "user": [], "system": []}
                    order.append(name)
                runs = len(result["times"])
                merged[name]["times"] += result["times"]
                # hyperfine gives user and system time as means per invocation.
                merged[name]["user"] += [result["user"]] * runs
                merged[name]["system"] += [result["system"]] * runs
    results = []
    for name in order:
        times = merged[name]["times"]
        results.append({
            "command": name,
            "times": times,
            "mean": statistics.fmean(times),
            "stddev": statistics.stdev(times) if len(times) > 1 else None,
            "median": statistics.median(times),
            "min": min(times),
            "max": max(times),
            "user": statistics.fmean(merged[name]["user"]),
            "system": statistics.fmean(merged[name]["system"]),
        })
    with open(out, "w") as f:
        json.dump({"results": results}, f, indent=2)


if __name__ == "__main__":
    main()
