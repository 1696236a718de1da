#!/usr/bin/env python3
"""Benchmark (l), simulation at scale: a `sim` run of N simulated workers against the same
samples trained by one worker under `threads`, in the same run.

For each N (default 256 and 1024): dpsgd on a torus2d of N workers (clusters/scale-N.toml), mlp, one
epoch of Fashion-MNIST at the largest batch that still gives every worker at least 5 steps; then
`fast train --runtime threads --workers 1` with N x (steps per worker) steps at the same batch: the
same number of samples at the same batch size. Both evaluate only the final representative model
once (--no-replica-accuracy, eval_every 0 with less than one epoch for the single worker). Each run's
wall time and peak resident memory come from os.wait4 (its own rusage, not the bench's).

Goals: simulated wall time <= 3x the one-worker time at 256 workers and <= 5x at 1,024; peak memory
<= 2 GB at 1,024 workers. Prints one table and one verdict line per goal; --out writes the figures
as JSON. Commands and recorded figures: docs/benchmarks.md, (l).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

TRAIN_SAMPLES = 60000  # Fashion-MNIST's training set
MIN_STEPS = 5
GOAL_TIME = {256: 3.0, 1024: 5.0}
GOAL_RSS_BYTES = {1024: 2e9}
# Both sides train at this learning rate (momentum 0.9, fast train's default). At the default 0.05
# one worker at batch 8 diverges, and its NaN arithmetic made it 2.5x slower (16.8 s against 6.8 s
# for 7,168 steps), which would flatter the simulation.
LR = "0.01"
CHANCE = 0.2  # the one worker below this after an epoch: it diverged and its time is not a fair peer


def batch_for(workers):
    """The largest power-of-two batch that gives every worker at least MIN_STEPS steps of an epoch."""
    batch = 256
    while batch > 1 and TRAIN_SAMPLES // (workers * batch) < MIN_STEPS:
        batch //= 2
    return batch


def side(n):
    """The side of the square torus of n workers."""
    s = int(round(n ** 0.5))
    if s * s != n:
        sys.exit(f"sim_scale.py: {n} workers is not a square (torus2d:SxS needs one)")
    return s


def timed(cmd, env, timeout):
    """Runs cmd; returns (wall seconds, CPU seconds, peak RSS bytes). Exits naming the command if it fails."""
    start = time.monotonic()
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = start + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                os.wait4(proc.pid, 0)
                sys.exit(f"sim_scale.py: timed out after {timeout} s: {' '.join(cmd)}")
            time.sleep(0.05)
        wall = time.monotonic() - start
        if os.waitstatus_to_exitcode(status) != 0:
            log.seek(0)
            sys.stderr.write(log.read().decode(errors="replace")[-3000:])
            sys.exit(f"sim_scale.py: failed (exit {os.waitstatus_to_exitcode(status)}): {' '.join(cmd)}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


def measure(fast, root, workers, work, env, timeout):
    batch = batch_for(workers)
    s = side(workers)
    sim_summary = os.path.join(work, f"sim_{workers}.json")
    sim_cmd = [fast, "train", "--runtime", "sim", "--cluster", os.path.join(root, "clusters", f"scale-{workers}.toml"),
               "--workers", str(workers), "--model", "mlp", "--strategy", "dpsgd", "--topology", f"torus2d:{s}x{s}",
               "--epochs", "1", "--batch", str(batch), "--lr", LR, "--no-replica-accuracy", "--progress", "never",
               "--summary", sim_summary]
    sim_wall, sim_cpu, sim_rss = timed(sim_cmd, env, timeout)
    with open(sim_summary) as f:
        summary = json.load(f)
    steps = summary["steps_per_worker"][0]
    one_summary = os.path.join(work, f"one_{workers}.json")
    one_cmd = [fast, "train", "--runtime", "threads", "--workers", "1", "--model", "mlp", "--strategy", "allreduce",
               "--steps", str(workers * steps), "--batch", str(batch), "--lr", LR, "--progress", "never",
               "--summary", one_summary]
    one_wall, one_cpu, one_rss = timed(one_cmd, env, timeout)
    with open(one_summary) as f:
        one = json.load(f)
    if one["final_accuracy"] < CHANCE:  # the simulated run takes 7 gossip steps: it may stay near chance
        sys.exit(f"sim_scale.py: the one-worker run for {workers} workers ended at accuracy {one['final_accuracy']} "
                 "(diverged?); its time is not a fair peer")
    return {"workers": workers, "batch": batch, "steps_per_worker": steps, "samples": workers * steps * batch,
            "sim_wall_s": sim_wall, "sim_cpu_s": sim_cpu, "sim_peak_rss_bytes": sim_rss,
            "sim_accuracy": summary["final_accuracy"], "simulated_seconds": summary.get("simulated_seconds"),
            "one_wall_s": one_wall, "one_cpu_s": one_cpu, "one_peak_rss_bytes": one_rss,
            "one_accuracy": one["final_accuracy"], "ratio": sim_wall / one_wall,
            "sim_command": " ".join(sim_cmd[1:]), "one_command": " ".join(one_cmd[1:])}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", required=True, help="the fast command")
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."),
                        help="the source tree (its clusters/ folder)")
    parser.add_argument("--workers", default="256,1024", help="simulated world sizes, comma-separated squares")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds one run may take")
    parser.add_argument("--out", help="write the figures here as JSON")
    args = parser.parse_args()
    env = dict(os.environ)
    rows = []
    with tempfile.TemporaryDirectory(prefix="fast_sim_scale_") as work:
        for n in (int(w) for w in args.workers.split(",")):
            print(f"(l) {n} simulated workers ...", flush=True)
            rows.append(measure(args.fast, args.root, n, work, env, args.timeout))
    print("| workers | batch | steps/worker | samples | sim wall (CPU) | sim peak RSS | sim accuracy "
          "| 1 worker wall (CPU) | 1 worker accuracy | ratio |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['workers']} | {r['batch']} | {r['steps_per_worker']} | {r['samples']} | {r['sim_wall_s']:.2f} s "
              f"({r['sim_cpu_s']:.2f} s) | {r['sim_peak_rss_bytes'] / 1e9:.2f} GB | {r['sim_accuracy']:.4f} "
              f"| {r['one_wall_s']:.2f} s ({r['one_cpu_s']:.2f} s) | {r['one_accuracy']:.4f} | {r['ratio']:.2f}x |")
    for r in rows:
        n = r["workers"]
        if n in GOAL_TIME:
            ok = r["ratio"] <= GOAL_TIME[n]
            print(f"{'MET ' if ok else 'MISSED'} (l) {n} workers: wall time {r['ratio']:.2f}x one worker's "
                  f"(goal <= {GOAL_TIME[n]:g}x)")
        if n in GOAL_RSS_BYTES:
            ok = r["sim_peak_rss_bytes"] <= GOAL_RSS_BYTES[n]
            print(f"{'MET ' if ok else 'MISSED'} (l) {n} workers: peak memory {r['sim_peak_rss_bytes'] / 1e9:.2f} GB "
                  f"(goal <= {GOAL_RSS_BYTES[n] / 1e9:g} GB)")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
