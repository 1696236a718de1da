#!/usr/bin/env python3
"""Table of docs/experiments.md "Learning-rate semantics" from a `fast compare --repeat N` folder.

Usage: experiments/lr_semantics_table.py OUT_DIR   (OUT_DIR of examples/lr-semantics-*.toml)
One row per configuration: its label (config.toml's "# run: NAME, lr=X"), the final accuracy of
every repetition and their median, how many diverged, the median time to the target (a run that
never reached it counts as never), and repetition 1's simulated training time, bytes and staleness.
"""
import json
import os
import statistics
import sys


def main(out):
    print("| run | lr | final accuracy per seed | median | diverged | time to target (simulated s, median) "
          "| simulated training s | bytes sent | staleness mean |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for d in sorted(os.listdir(out)):
        path = os.path.join(out, d)
        if not os.path.isdir(path):
            continue
        label = open(os.path.join(path, "config.toml")).readline()[len("# run: "):].strip()
        reps = sorted((r for r in os.listdir(path) if r.isdigit()), key=int)
        ss = [json.load(open(os.path.join(path, r, "summary.json"))) for r in reps]
        accs = [s["final_accuracy"] for s in ss]
        ttt = statistics.median([s["time_to_target_seconds"] if s["time_to_target_seconds"] is not None
                                 else float("inf") for s in ss])
        name, lr = label.split(", lr=")
        div = sum(s["diverged"] for s in ss)
        diverged = "no" if div == 0 else "yes" if div == len(ss) else f"{div} of {len(ss)}"
        reached = "not reached" if ttt == float("inf") else f"{ttt:.2f}"
        print(f"| {name} | {lr} | {' / '.join('%.4f' % a for a in accs)} | {statistics.median(accs):.4f} | {diverged} "
              f"| {reached} | {ss[0]['wall_seconds']:.3g} | {ss[0]['bytes_sent'] / 1e9:.1f} GB "
              f"| {ss[0]['staleness_mean']:.1f} |")


if __name__ == "__main__":
    main(sys.argv[1])
