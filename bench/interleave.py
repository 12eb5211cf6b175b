#!/usr/bin/env python3
"""Runs benchmark commands in turn, round after round, so a machine whose speed drifts (a shared VM)
treats them alike; hyperfine runs all of one command before the next. Reports each command's median
wall and CPU time and the median of the per-round ratios to the first command.

  bench/interleave.py ROUNDS OUT.json NAME 'PREPARE' 'COMMAND' [NAME 'PREPARE' 'COMMAND' ...]

PREPARE runs (untimed, through the shell) before each timed COMMAND; one warm-up round is dropped.
"""
import json, resource, statistics, subprocess, sys, time

rounds, out, rest = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
commands = [rest[i:i + 3] for i in range(0, len(rest), 3)]
times = {name: [] for name, _, _ in commands}
for round_ in range(rounds + 1):
    for name, prepare, command in commands:
        subprocess.run(prepare, shell=True, check=True)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(command, shell=True, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = (time.perf_counter() - start) * 1000
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
        if round_ > 0:
            times[name].append((wall, cpu))
base = commands[0][0]
report = {}
for name, _, _ in commands:
    walls = [w for w, _ in times[name]]
    cpus = [c for _, c in times[name]]
    ratios = [w / b for (w, _), (b, _) in zip(times[name], times[base])]
    report[name] = {"wall_ms_median": statistics.median(walls), "wall_ms_stdev": statistics.stdev(walls) if len(walls) > 1 else 0,
                    "cpu_ms_median": statistics.median(cpus), "ratio_to_" + base: statistics.median(ratios), "walls": walls}
    print(f"{name:24s} wall {statistics.median(walls):7.1f} ms (σ {report[name]['wall_ms_stdev']:5.1f})  "
          f"cpu {statistics.median(cpus):7.1f} ms  ÷ {base}: {statistics.median(ratios):.3f} (median of rounds)")
json.dump(report, open(out, "w"), indent=1)
