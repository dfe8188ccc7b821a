#!/usr/bin/env python3
"""alternate.py ROUNDS NAME=COMMAND [--prep NAME=COMMAND ...] ...: times
shell commands round after round, each once per round in the order given,
so that drift on the machine (other load, thermal, cache) falls on all of
them alike. A command's --prep runs before each of its timed runs and is
not timed. Prints one JSON line per command (bench/report.py's rows):
median wall time, median CPU (user + system of the command and its
children, from getrusage), the runs, and the median (and quartiles) over
rounds of its CPU and wall time divided by the first command's."""
import json
import resource
import statistics
import subprocess
import sys
import time


def timed(cmd):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, shell=True, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    t1 = time.perf_counter()
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
    return (t1 - t0) * 1e3, cpu * 1e3


def quartiles(v):
    """The first and third quartiles (the middle half of the rounds)."""
    if len(v) < 4:
        return [min(v), max(v)]
    q = statistics.quantiles(v, n=4)
    return [q[0], q[2]]


def main(argv):
    rounds = int(argv[0])
    specs, prep = [], {}
    i = 1
    while i < len(argv):
        if argv[i] == "--prep":
            name, cmd = argv[i + 1].split("=", 1)
            prep[name] = cmd
            i += 2
            continue
        name, cmd = argv[i].split("=", 1)
        specs.append((name, cmd))
        i += 1
    res = {name: [] for name, _ in specs}
    for _ in range(rounds):
        for name, cmd in specs:
            if name in prep:
                subprocess.run(prep[name], shell=True, check=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
            res[name].append(timed(cmd))
    base = res[specs[0][0]]
    for name, cmd in specs:
        w = [x[0] for x in res[name]]
        c = [x[1] for x in res[name]]
        print(json.dumps({
            "bench": name, "median_ms": statistics.median(w), "mean_ms": statistics.mean(w),
            "stddev_ms": statistics.stdev(w) if len(w) > 1 else 0.0, "runs": len(w),
            "cpu_ms": statistics.median(c),
            "cpu_ratio_median": statistics.median(x[1] / b[1] for x, b in zip(res[name], base)),
            "cpu_ratio_quartiles": quartiles([x[1] / b[1] for x, b in zip(res[name], base)]),
            "wall_ratio_median": statistics.median(x[0] / b[0] for x, b in zip(res[name], base)),
            "command": cmd}))


if __name__ == "__main__":
    main(sys.argv[1:])
