#!/usr/bin/env python3
"""Benchmark (l), simulation at scale: a `sim` run of N simulated workers against the same
samples trained by one worker under `threads`, the simulation's speed-up with its compute
threads, and the memory of every strategy against its floor.

1. Time. For each N of --workers (default 256 and 1024): dpsgd on a torus2d of N workers
   (clusters/scale-N.toml), mlp, one epoch of Fashion-MNIST at the largest batch that still gives
   every worker at least 5 steps, with the simulation's default compute threads (sim_threads 0:
   the cores); then `fast train --runtime threads --workers 1` with N x (steps per worker) steps at
   the same batch: the same number of samples at the same batch size. Both evaluate only the final
   representative model once (--no-replica-accuracy; eval_every 0 with less than one epoch for the
   single worker). Each command runs --repeat times (default 3), the two in turn, and the table
   shows the run of median wall time of each: on a shared virtual machine one run's wall time moves
   by a quarter and more. Goals: simulated wall time <= 1.2x the one worker's at 256 workers, <= 2.0x
   at 1,024.
2. Compute threads. The same simulated run at --scaling-workers (default 256) with sim_threads 1,
   2, 4, ... up to the cores this process may run on (--sim-threads gives the list): wall time and
   speed-up over one thread. No goal; the results must not change with the threads (the table
   shows each run's param_hash).
3. Memory. For each strategy of --strategies (allreduce, dpsgd, ps in sync mode, adpsgd, gosgd) at
   --memory-workers (default 1024): 10 steps of batch 8 on clusters/scale-N.toml; the summary's
   memory_floor_bytes (every worker's training state plus the dataset, docs/simulation.md "Memory
   floor") and peak_rss_bytes. Goal: peak <= 1.3x the floor for every strategy, and below 23 GB. A
   run whose resident memory passes --max-rss-gb (default 80% of the machine's memory) is killed
   and reported as over it.

Each run's wall time and peak resident memory come from os.wait4 (its own rusage, not the
bench's). Prints one table per part and one verdict line per goal; --out writes the figures as
JSON. Commands: docs/benchmarks.md, (l).
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
GOAL_TIME = {256: 1.2, 1024: 2.0}
GOAL_PEAK_OVER_FLOOR = 1.3
GOAL_PEAK_BYTES = 23e9
MEMORY_STEPS = 10
MEMORY_BATCH = 8
STRATEGIES = {"allreduce": ["--strategy", "allreduce"], "dpsgd": ["--strategy", "dpsgd"],
              "ps": ["--strategy", "ps", "--mode", "sync"], "adpsgd": ["--strategy", "adpsgd"],
              "gosgd": ["--strategy", "gosgd"]}
# Both sides train at this learning rate (momentum 0.9, fast train's default). At the default 0.05
# one worker at batch 8 diverges, and its NaN arithmetic made it 2.5x slower (16.8 s against 6.8 s
# for 7,168 steps), which would flatter the simulation.
LR = "0.01"
CHANCE = 0.2  # the one worker below this after an epoch: it diverged and its time is not a fair peer


class OverMemory(Exception):
    """A run passed the resident-memory limit and was killed."""


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


def rss_bytes(pid):
    """The resident memory of a running process (VmRSS), or 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def timed(cmd, env, timeout, max_rss=None):
    """Runs cmd; returns (wall seconds, CPU seconds, peak RSS bytes). Exits naming the command if it
    fails or times out; raises OverMemory (after killing it) if its RSS passes max_rss bytes."""
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
            if max_rss is not None and rss_bytes(proc.pid) > max_rss:
                proc.kill()
                os.wait4(proc.pid, 0)
                raise OverMemory(f"more than {max_rss / 1e9:.1f} GB resident")
            time.sleep(0.05)
        wall = time.monotonic() - start
        if os.waitstatus_to_exitcode(status) != 0:
            log.seek(0)
            sys.stderr.write(log.read().decode(errors="replace")[-3000:])
            sys.exit(f"sim_scale.py: failed (exit {os.waitstatus_to_exitcode(status)}): {' '.join(cmd)}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


def sim_command(fast, root, workers, strategy_args, summary):
    s = side(workers)
    return [fast, "train", "--runtime", "sim", "--cluster", os.path.join(root, "clusters", f"scale-{workers}.toml"),
            "--workers", str(workers), "--model", "mlp", *strategy_args, "--topology", f"torus2d:{s}x{s}",
            "--lr", LR, "--no-replica-accuracy", "--progress", "never", "--summary", summary]


def load(path):
    with open(path) as f:
        return json.load(f)


def median_run(runs):
    """The run of median wall time among (wall, cpu, rss) tuples (the lower middle one of an even count)."""
    return sorted(runs)[(len(runs) - 1) // 2]


def measure_time(fast, root, workers, work, env, timeout, repeat):
    """Part 1: dpsgd on N simulated workers, one epoch, against one threads worker on the same samples;
    each command `repeat` times, in turn, and the run of median wall time of each."""
    batch = batch_for(workers)
    sim_summary = os.path.join(work, f"sim_{workers}.json")
    sim_cmd = sim_command(fast, root, workers, STRATEGIES["dpsgd"], sim_summary) + ["--epochs", "1", "--batch",
                                                                                     str(batch)]
    sim_runs = [timed(sim_cmd, env, timeout)]
    summary = load(sim_summary)
    steps = summary["steps_per_worker"][0]
    one_summary = os.path.join(work, f"one_{workers}.json")
    one_cmd = [fast, "train", "--runtime", "threads", "--workers", "1", "--model", "mlp", "--strategy", "allreduce",
               "--steps", str(workers * steps), "--batch", str(batch), "--lr", LR, "--progress", "never",
               "--summary", one_summary]
    one_runs = [timed(one_cmd, env, timeout)]
    for _ in range(repeat - 1):
        sim_runs.append(timed(sim_cmd, env, timeout))
        one_runs.append(timed(one_cmd, env, timeout))
    sim_wall, sim_cpu, sim_rss = median_run(sim_runs)
    one_wall, one_cpu, one_rss = median_run(one_runs)
    one = load(one_summary)
    if one["final_accuracy"] < CHANCE:  # the simulated run takes 7 gossip steps: it may stay near chance
        sys.exit(f"sim_scale.py: the one-worker run for {workers} workers ended at accuracy {one['final_accuracy']} "
                 "(diverged?); its time is not a fair peer")
    return {"workers": workers, "batch": batch, "steps_per_worker": steps, "samples": workers * steps * batch,
            "sim_wall_s": sim_wall, "sim_cpu_s": sim_cpu, "sim_peak_rss_bytes": sim_rss,
            "sim_accuracy": summary["final_accuracy"], "simulated_seconds": summary.get("simulated_seconds"),
            "one_wall_s": one_wall, "one_cpu_s": one_cpu, "one_peak_rss_bytes": one_rss,
            "one_accuracy": one["final_accuracy"], "ratio": sim_wall / one_wall, "repeat": repeat,
            "sim_walls_s": [r[0] for r in sim_runs], "one_walls_s": [r[0] for r in one_runs],
            "sim_command": " ".join(sim_cmd[1:]), "one_command": " ".join(one_cmd[1:])}


def measure_threads(fast, root, workers, threads, work, env, timeout):
    """Part 2: the part-1 simulated run with each compute-thread count."""
    batch = batch_for(workers)
    rows = []
    for t in threads:
        summary_path = os.path.join(work, f"threads_{workers}_{t}.json")
        cmd = sim_command(fast, root, workers, STRATEGIES["dpsgd"], summary_path) + [
            "--epochs", "1", "--batch", str(batch), "--sim-threads", str(t)]
        wall, cpu, rss = timed(cmd, env, timeout)
        summary = load(summary_path)
        rows.append({"workers": workers, "sim_threads": t, "wall_s": wall, "cpu_s": cpu, "peak_rss_bytes": rss,
                     "param_hash": summary.get("param_hash"), "command": " ".join(cmd[1:])})
    for r in rows:
        r["speedup"] = rows[0]["wall_s"] / r["wall_s"]
    return rows


def measure_memory(fast, root, workers, strategies, work, env, timeout, max_rss):
    """Part 3: each strategy's memory floor and peak at `workers`, 10 steps of batch 8."""
    rows = []
    for name in strategies:
        summary_path = os.path.join(work, f"memory_{name}_{workers}.json")
        cmd = sim_command(fast, root, workers, STRATEGIES[name], summary_path) + [
            "--steps", str(MEMORY_STEPS), "--batch", str(MEMORY_BATCH)]
        print(f"(l) memory: {name} on {workers} simulated workers ...", flush=True)
        row = {"strategy": name, "workers": workers, "command": " ".join(cmd[1:])}
        try:
            wall, _, rss = timed(cmd, env, timeout, max_rss)
        except OverMemory as e:
            row.update({"over_memory": str(e), "peak_rss_bytes": max_rss})
            rows.append(row)
            continue
        summary = load(summary_path)
        floor = summary["memory_floor_bytes"]
        peak = max(rss, summary.get("peak_rss_bytes") or 0)
        row.update({"wall_s": wall, "memory_floor_bytes": floor, "peak_rss_bytes": peak, "peak_over_floor": peak / floor})
        rows.append(row)
    return rows


def thread_counts(spec):
    """1, 2, 4, ... up to the cores this process may run on (the cores themselves last), or a given list."""
    if spec != "auto":
        return [int(t) for t in spec.split(",")]
    cores = len(os.sched_getaffinity(0))
    counts = [1]
    while counts[-1] * 2 < cores:
        counts.append(counts[-1] * 2)
    if cores > 1:
        counts.append(cores)
    return counts


def machine_memory_bytes():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    return 0


def print_time(rows):
    print("| workers | batch | steps/worker | samples | sim wall (CPU) | sim peak RSS | sim accuracy "
          "| 1 worker wall (CPU) | 1 worker accuracy | ratio |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['workers']} | {r['batch']} | {r['steps_per_worker']} | {r['samples']} | {r['sim_wall_s']:.2f} s "
              f"({r['sim_cpu_s']:.2f} s) | {r['sim_peak_rss_bytes'] / 1e9:.2f} GB | {r['sim_accuracy']:.4f} "
              f"| {r['one_wall_s']:.2f} s ({r['one_cpu_s']:.2f} s) | {r['one_accuracy']:.4f} | {r['ratio']:.2f}x |")
    for r in rows:
        walls = lambda key: ", ".join(f"{w:.2f}" for w in r[key])
        print(f"{r['workers']} workers, wall of each run (s): simulated {walls('sim_walls_s')}; "
              f"one worker {walls('one_walls_s')}")


def print_threads(rows):
    print("| workers | sim_threads | wall (CPU) | speed-up over 1 thread | peak RSS | param_hash |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['workers']} | {r['sim_threads']} | {r['wall_s']:.2f} s ({r['cpu_s']:.2f} s) | {r['speedup']:.2f}x "
              f"| {r['peak_rss_bytes'] / 1e9:.2f} GB | {r['param_hash']} |")


def print_memory(rows):
    print("| strategy | workers | memory floor | peak RSS | peak / floor |")
    print("| --- | --- | --- | --- | --- |")
    for r in rows:
        if "over_memory" in r:
            print(f"| {r['strategy']} | {r['workers']} | - | {r['over_memory']} | - |")
        else:
            print(f"| {r['strategy']} | {r['workers']} | {r['memory_floor_bytes'] / 1e9:.2f} GB "
                  f"| {r['peak_rss_bytes'] / 1e9:.2f} GB | {r['peak_over_floor']:.2f}x |")


def verdicts(time_rows, thread_rows, memory_rows):
    for r in time_rows:
        n = r["workers"]
        if n in GOAL_TIME:
            ok = r["ratio"] <= GOAL_TIME[n]
            print(f"{'MET ' if ok else 'MISSED'} (l) {n} workers: wall time {r['ratio']:.2f}x one worker's "
                  f"(goal <= {GOAL_TIME[n]:g}x)")
    hashes = {r["param_hash"] for r in thread_rows}
    if len(hashes) > 1:
        print(f"MISSED (l) compute threads: the results differ with sim_threads ({', '.join(sorted(hashes))})")
    for r in memory_rows:
        if "over_memory" in r:
            print(f"MISSED (l) {r['strategy']} at {r['workers']} workers: {r['over_memory']}")
            continue
        ok = r["peak_over_floor"] <= GOAL_PEAK_OVER_FLOOR and r["peak_rss_bytes"] <= GOAL_PEAK_BYTES
        print(f"{'MET ' if ok else 'MISSED'} (l) {r['strategy']} at {r['workers']} workers: peak "
              f"{r['peak_rss_bytes'] / 1e9:.2f} GB = {r['peak_over_floor']:.2f}x the floor "
              f"(goal <= {GOAL_PEAK_OVER_FLOOR:g}x and <= {GOAL_PEAK_BYTES / 1e9:g} GB)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", required=True, help="the fast command")
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."),
                        help="the source tree (its clusters/ folder)")
    parser.add_argument("--workers", default="256,1024",
                        help="part 1: simulated world sizes timed against one worker, comma-separated squares")
    parser.add_argument("--scaling-workers", type=int, default=256,
                        help="part 2: the world size timed with each compute-thread count (0: skip the part)")
    parser.add_argument("--sim-threads", default="auto",
                        help="part 2: compute-thread counts, comma-separated; auto: 1, 2, 4, ... up to the cores")
    parser.add_argument("--memory-workers", type=int, default=1024,
                        help="part 3: the world size of the memory runs (0: skip the part)")
    parser.add_argument("--strategies", default=",".join(STRATEGIES),
                        help=f"part 3: strategies, comma-separated, of {', '.join(STRATEGIES)}")
    parser.add_argument("--max-rss-gb", type=float, default=0.0,
                        help="part 3: kill a run above this resident memory (0: 80%% of the machine's memory)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="part 1: runs of each command, in turn; the table shows the run of median wall time")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds one run may take")
    parser.add_argument("--out", help="write the figures here as JSON")
    args = parser.parse_args()
    strategies = [s for s in args.strategies.split(",") if s]
    for s in strategies:
        if s not in STRATEGIES:
            sys.exit(f"sim_scale.py: --strategies: unknown strategy '{s}', expected some of {', '.join(STRATEGIES)}")
    if args.repeat < 1:
        sys.exit(f"sim_scale.py: --repeat: expected a count >= 1, got {args.repeat}")
    threads = thread_counts(args.sim_threads)
    if any(t < 1 for t in threads):
        sys.exit(f"sim_scale.py: --sim-threads: expected counts >= 1, got {args.sim_threads}")
    max_rss = args.max_rss_gb * 1e9 if args.max_rss_gb > 0 else 0.8 * machine_memory_bytes()
    env = dict(os.environ)
    time_rows, thread_rows, memory_rows = [], [], []
    with tempfile.TemporaryDirectory(prefix="fast_sim_scale_") as work:
        for n in (int(w) for w in args.workers.split(",") if w):
            print(f"(l) {n} simulated workers against one worker ...", flush=True)
            time_rows.append(measure_time(args.fast, args.root, n, work, env, args.timeout, args.repeat))
        if args.scaling_workers > 0:
            print(f"(l) {args.scaling_workers} simulated workers with sim_threads {threads} ...", flush=True)
            thread_rows = measure_threads(args.fast, args.root, args.scaling_workers, threads, work, env, args.timeout)
        if args.memory_workers > 0:
            memory_rows = measure_memory(args.fast, args.root, args.memory_workers, strategies, work, env,
                                         args.timeout, max_rss)
    if time_rows:
        print_time(time_rows)
    if thread_rows:
        print_threads(thread_rows)
    if memory_rows:
        print_memory(memory_rows)
    verdicts(time_rows, thread_rows, memory_rows)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"time": time_rows, "threads": thread_rows, "memory": memory_rows}, f, indent=1)


if __name__ == "__main__":
    main()
