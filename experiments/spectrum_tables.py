#!/usr/bin/env python3
"""Tables of docs/experiments.md, "The spectrum on simulated clusters", from `fast compare` output.

Usage:
  experiments/spectrum_tables.py out/sim-spectrum-16 [LOG] [out/sim-spectrum-16-extra [LOG] ...]

Each folder is the --out of a `fast compare` of one examples/sim-spectrum-*.toml sweep; LOG (a path
ending in .log, optional) is that compare's terminal output, from which the real wall time of each
simulation is taken ("wall time of the simulation: X s"; the summaries hold simulated time only).
Prints one Markdown table over all given folders, one row per run, in the order of the folders and
of their runs:

  class (the FAST proposal, sec. 3, docs/strategies.md) | strategy | cluster | time to the target accuracy
  (simulated s; the header names the runs' target_accuracy, 0.85 in the 16- and 64-worker sweeps)
  | final accuracy | bytes sent | training (simulated s: summary wall_seconds - eval_seconds, the
  training clock without the intermediate evaluations) | ms per step
  (training / steps of the busiest worker) | steps per worker (min-max; worker 0 in parentheses
  when it is the maximum) | staleness mean / max | wall s
"""
import glob
import json
import os
import re
import sys

CLASSES = [  # (prefix of the run name, class)
    ("allreduce", "1. synchronous"),
    ("ps sync", "1. synchronous"),
    ("local sgd", "1. synchronous, every 8 steps"),
    ("ps ssp", "2. bounded delay"),
    ("ps async", "3. unbounded delay"),
    ("easgd", "3. unbounded delay, elastic"),
    ("dpsgd", "4. partial, synchronous"),
    ("adpsgd", "4. partial, asynchronous"),
    ("gosgd", "4. partial, asynchronous"),
    ("acid", "4. partial, asynchronous"),
]


def klass(name):
    for prefix, c in CLASSES:
        if name.startswith(prefix):
            return c
    return "?"


def walls(log):
    """Run folder -> real seconds of its simulation, from a compare log."""
    out, folder = {}, None
    for line in open(log, errors="replace"):
        m = re.search(r"summary: (\S+)/summary\.json", line)
        if m:
            out[os.path.normpath(m.group(1))] = folder
        m = re.search(r"wall time of the simulation: ([0-9.]+) s", line)
        if m:
            folder = float(m.group(1))
    return out


def rows(folder, log):
    wall = walls(log) if log else {}
    with open(os.path.join(folder, "compare.csv")) as f:
        header = f.readline()
    for run_dir in sorted(glob.glob(os.path.join(folder, "[0-9][0-9]-*"))):
        for rep in sorted(glob.glob(os.path.join(run_dir, "[0-9]*"))):
            s = json.load(open(os.path.join(rep, "summary.json")))
            name = os.path.basename(run_dir)[3:]
            cluster = os.path.basename(s["cluster"]).removesuffix(".toml")
            run = name.split("-cluster-")[0].replace("-", " ")  # "ps-async-16-servers" -> "ps async 16 servers"
            steps = s["steps_per_worker"]
            busiest = max(steps)
            t = s.get("time_to_target_seconds")
            training = s["wall_seconds"] - s["eval_seconds"]
            st = f"{min(steps)}-{busiest}" + (f" (worker 0: {steps[0]})" if steps[0] == busiest and min(steps) != busiest else "")
            yield s["target_accuracy"], (f"| {klass(run)} | {run} | {cluster} | {'not reached' if t is None else f'{t:.3g}'} | "
                   f"{s['final_accuracy']:.4f} | {s['bytes_sent'] / 1e9:.1f} GB | {training:.3g} | "
                   f"{training / busiest * 1e3:.3g} | {st} | {s['staleness_mean']:.2f} / {s['staleness_max']} | "
                   f"{wall.get(os.path.normpath(rep), float('nan')):.0f} |")


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    table, i = [], 0
    while i < len(args):
        folder = args[i]
        log = args[i + 1] if i + 1 < len(args) and args[i + 1].endswith(".log") else None
        i += 2 if log else 1
        table.extend(rows(folder, log))
    targets = sorted({target for target, _ in table})
    target = f"{targets[0]:g}" if len(targets) == 1 else "the target"
    print(f"| class (the FAST proposal sec. 3) | strategy | cluster | time to {target} (simulated s) | final accuracy | "
          "bytes sent | training (simulated s) | ms per step | steps per worker | staleness mean / max | wall s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for _, row in table:
        print(row)


if __name__ == "__main__":
    main()
