#!/usr/bin/env python3
"""Calibrates a sim cluster file to this machine and checks its predictions against `threads`.

Usage:
  experiments/calibrate.py measure [--fast PATH] [--pingpong PATH] [--out clusters/this-machine.toml]
  experiments/calibrate.py compare [--fast PATH] [--cluster clusters/this-machine.toml] [--out DIR]
  experiments/calibrate.py validate [--repeat 3] [--out DIR] [--cluster clusters/this-machine.toml]

`measure` (docs/simulation.md, "Validation"):
  - flop/s of one worker: `fast train --runtime threads --workers 1` of the mlp at batch 64 with
    FAST_TORCH_THREADS=1 (as each worker of a 2- or 4-worker threads run on this 2-core machine),
    no evaluation during training; speed = flops_per_step / (wall_seconds / steps), where
    flops_per_step = batch x model_flops_per_sample (the trainer's flop model, docs/simulation.md).
    So the speed covers everything a worker does alone in a step: data gathering, forward,
    backward, optimizer step.
  - message latency and bandwidth of the threads runtime: bench_pingpong_threads --cold-mib
    (ping-pong between two workers pinned to two cores, on buffers out of the caches as in a
    training run), fitted by fit_link below (latency of small messages; bandwidth over 128 KiB to
    1 MiB, the sizes of the mlp's messages).
  - memory bandwidth (hosts.memory_bandwidth, bytes streamed per second): 2 x the copy bandwidth
    of one core on cold memory that the same benchmark reports (docs/simulation.md, "Memory
    traffic").
  Each measurement is repeated --repeat times and the median taken; the load average is recorded.
  Writes the cluster file: one host with the machine's cores, the workers sharing it, messages on
  its loopback link.

`validate`: --repeat rounds of (measure once, write DIR/round-K.toml, then every configuration of
  `compare` once under threads and once under sim with that round's file): each prediction uses a
  calibration taken a minute before the run it predicts, because the speed of a core of this shared
  machine drifts with the other processes' load (1-worker step times of 1.0 to 1.3 ms within
  minutes). Writes the medians of the rounds' calibrations to --cluster and DIR/validate.md.

`compare`: for 2 and 4 workers and each strategy of STRATEGIES, runs `fast train` under threads
  and under sim with the cluster, same model, batch, steps and seed, no evaluation during training;
  mean step time = summary wall_seconds / steps (threads: real seconds; sim: simulated seconds);
  prints a Markdown table (medians of --repeat threads runs; the sim is deterministic, run once).

Measured runs (the threads runs, the 1-worker run, the ping-pong) run under --priority, by default
in a session of their own whose scheduling group has nice -20 (needs root; /proc/self/autogroup),
because the machine is shared: with Linux's autogroup scheduling, `nice` alone only orders the
threads of one session, and at equal group weight the other sessions' processes take a varying
share of the 2 cores and delay every wake-up of a waiting worker (measured at load 7: ping-pong
latency 150-220 us instead of 2 us, and threads step times varying 3x between repetitions).
Inside the group the threads are scheduled as on an idle machine (CFS/EEVDF), but the other
groups keep a share. `rr` (chrt --rr 10) isolates the measured runs better but does not preempt
on wake-up, which matters when threads outnumber cores (docs/simulation.md, "Validation").
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

MLP_FLOPS_PER_SAMPLE = 1408512  # fast::torch::model_flops_per_sample("mlp"), docs/simulation.md
STRATEGIES = [
    ("allreduce", ["--strategy", "allreduce"]),
    ("adpsgd", ["--strategy", "adpsgd"]),
    ("ps async", ["--strategy", "ps", "--mode", "async"]),
]
NO_EVAL = ["--eval-every", "1000000", "--target-accuracy", "0", "--progress", "never",
           # the optimizer of the recorded validations (fast train's former defaults)
           "--optimizer", "sgd", "--lr", "0.01", "--schedule", "constant"]


def load():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def prefix(priority):
    """The command prefix of a measured run: "autogroup" (a session of nice -20), "rr" (real-time
    round robin, chrt --rr 10), "nice:N" or "none"."""
    if priority == "rr":
        return ["chrt", "--rr", "10"]
    if priority == "autogroup":
        # A new session whose scheduling group (Linux autogroup) has nice -20: ordinary CFS
        # scheduling inside the group, the group ahead of the other sessions' groups.
        return ["setsid", "--wait", "sh", "-c", 'echo -20 > /proc/self/autogroup && exec "$0" "$@"']
    if priority.startswith("nice:"):
        return ["nice", "-n", priority[5:]]
    return []


def train(fast, priority, args, env_extra=None):
    """Runs `fast train` with args; returns (summary dict, load average before the run)."""
    with tempfile.TemporaryDirectory() as tmp:
        summary = os.path.join(tmp, "summary.json")
        env = dict(os.environ, FAST_LOG_LEVEL="warn", **(env_extra or {}))
        before = load()
        cmd = prefix(priority) + [fast, "train", *args, *NO_EVAL, "--summary", summary]
        print("$", " ".join(cmd), file=sys.stderr)
        subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
        with open(summary) as f:
            return json.load(f), before


def fit_link(sizes, lo=128 * 1024, hi=1024 * 1024):
    """(latency, bandwidth) of one-way times [[bytes, seconds], ...]: latency = median time of the
    messages up to 1 KiB; bandwidth W from the messages of lo..hi bytes, the sizes the strategies
    send for the mlp (its 235,146 parameters are 940,584 bytes; a ring all-reduce of 2 or 4
    workers sends pieces of 1/2 or 1/4 of it): least squares of time - latency = bytes / W.
    The per-byte cost of the threads runtime depends on the size (a large copy streams better
    than a small one), so a fit over all sizes would overstate the bandwidth of the mlp's messages."""
    latency = statistics.median(t for b, t in sizes if b <= 1024)
    big = [(b, t - latency) for b, t in sizes if lo <= b <= hi]
    return latency, sum(b * b for b, _ in big) / sum(b * t for b, t in big)


def calibrate_once(a):
    """One calibration: (speed flop/s, latency s, bandwidth B/s, memory bandwidth B/s streamed,
    load average before)."""
    before = load()
    s, _ = train(a.fast, a.priority, ["--runtime", "threads", "--workers", "1", "--model", "mlp", "--batch", str(a.batch),
                                      "--steps", str(a.steps), "--seed", "1"], {"FAST_TORCH_THREADS": "1"})
    step = s["wall_seconds"] / s["steps"]
    speed = a.batch * MLP_FLOPS_PER_SAMPLE / step
    cmd = prefix(a.priority) + [a.pingpong, "--cold-mib", str(a.cold_mib)]
    print("$", " ".join(cmd), file=sys.stderr)
    r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    latency, bandwidth = fit_link(r["sizes"])
    # A copy of B bytes streams 2B (read + write): hosts.memory_bandwidth counts both.
    memory = 2 * r["copy_bandwidth_bytes_per_second"]
    print(f"  1 worker: {step * 1e3:.3f} ms per step, {speed / 1e9:.3f} Gflop/s; ping-pong: latency "
          f"{latency * 1e6:.2f} us, bandwidth {bandwidth / 1e9:.3f} GB/s; memory {memory / 1e9:.3f} GB/s streamed "
          f"(load {before})", file=sys.stderr)
    return speed, latency, bandwidth, memory, before


def cluster_text(a, how, speed, latency, bandwidth, memory, loads):
    cores = os.cpu_count()
    return f"""# this-machine: the development machine as the sim runtime sees it, calibrated by
#   experiments/calibrate.py {how}
# (load average {min(loads):.2f} to {max(loads):.2f} before the measurements, which ran with
# --priority {a.priority}; docs/simulation.md, "Validation").
# One host with the machine's {cores} cores: the workers of a `threads` run are threads of one
# process sharing these cores, so all workers go to host-0 (worker r -> host r mod 1) and share
# its cores as SimGrid shares a host's cores between its executions (up to {cores} workers compute at
# full speed, more divide it). Their messages take the host's loopback link, calibrated to the
# threads runtime's ping-pong (one memory copy from the sender's buffer to the receiver's), and
# the copies and element-wise passes the strategies make on their own cost memory_bandwidth.
name = "this-machine"

[hosts]
count = 1
# flop/s of one core on the mlp training step at batch {a.batch}: {a.batch} x {MLP_FLOPS_PER_SAMPLE} flops
# per step / measured seconds per step of `fast train --workers 1` with one libtorch thread
# (data gathering, forward, backward and the optimizer step all fall in that time).
speed = {speed:.6g}
cores = {cores}
# bytes streamed (read + written) per second by one core on memory that is not in the caches:
# 2 x the memcpy bandwidth of 1 MiB blocks (bench_pingpong_threads --cold-mib {a.cold_mib}).
memory_bandwidth = {memory:.6g}

[network]
topology = "star"
# threads ping-pong (bench_pingpong_threads --cold-mib {a.cold_mib}: buffers out of the caches, as
# in a training run): median one-way time of messages up to 1 KiB, and the bandwidth that fits the
# one-way times of 128 KiB to 1 MiB messages (least squares), the sizes of the mlp's exchanges.
loopback_latency = {latency:.6g}
loopback_bandwidth = {bandwidth:.6g}
model = "CM02"
"""


def write_cluster(path, text):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    print(f"wrote {path}", file=sys.stderr)


def measure(a):
    runs = [calibrate_once(a) for _ in range(a.repeat)]
    speed, latency, bandwidth, memory = (statistics.median(r[k] for r in runs) for k in range(4))
    text = cluster_text(a, f"measure --batch {a.batch} --steps {a.steps} --repeat {a.repeat} (medians)",
                        speed, latency, bandwidth, memory, [r[4] for r in runs])
    write_cluster(a.out, text)
    print(text)


def configs(a):
    for workers in a.workers:
        for name, flags in STRATEGIES:
            yield workers, name, ["--workers", str(workers), "--model", "mlp", "--batch", str(a.batch), "--steps",
                                  str(a.steps), "--seed", "1", *flags]


def validate(a):
    """Rounds of: calibrate, then every configuration once under threads and once under sim with
    that round's cluster file, so that each prediction uses a calibration taken minutes before
    the run it predicts (the speed of a core of this shared machine drifts with the others' load)."""
    out = a.out or "out/validate"
    results = {}  # (workers, name) -> list of (threads, sim, load)
    calibrations = []
    for k in range(a.repeat):
        cal = calibrate_once(a)
        calibrations.append(cal)
        cluster = os.path.join(out, f"round-{k + 1}.toml")
        write_cluster(cluster, cluster_text(a, f"validate (round {k + 1})", *cal[:4], [cal[4]]))
        for workers, name, common in configs(a):
            s, l = train(a.fast, a.priority, ["--runtime", "threads", *common])
            sim, _ = train(a.fast, "none", ["--runtime", "sim", "--cluster", cluster, *common])
            t, p = s["wall_seconds"] / s["steps"], sim["wall_seconds"] / sim["steps"]
            results.setdefault((workers, name), []).append((t, p, l))
            print(f"  round {k + 1}, {workers} workers, {name}: threads {t * 1e3:.3f} ms, sim {p * 1e3:.3f} ms, "
                  f"ratio {p / t:.3f} (load {l})", file=sys.stderr)
    speed, latency, bandwidth, memory = (statistics.median(c[i] for c in calibrations) for i in range(4))
    write_cluster(a.cluster, cluster_text(a, f"validate --steps {a.steps} --repeat {a.repeat} (medians of the rounds)",
                                          speed, latency, bandwidth, memory, [c[4] for c in calibrations]))
    lines = [f"calibration rounds: " + "; ".join(f"{c[0] / 1e9:.1f} Gflop/s, {c[1] * 1e6:.2f} us, link {c[2] / 1e9:.2f} GB/s, "
                                                 f"memory {c[3] / 1e9:.2f} GB/s (load {c[4]})" for c in calibrations), "",
             "| workers | strategy | threads: ms per step, per round | sim: ms per step, per round | sim / threads, per round | median ratio | load before each threads run |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for (workers, name), rs in results.items():
        ratios = [p / t for t, p, _ in rs]
        lines.append(f"| {workers} | {name} | {', '.join(f'{t * 1e3:.3f}' for t, _, _ in rs)} | "
                     f"{', '.join(f'{p * 1e3:.3f}' for _, p, _ in rs)} | {', '.join(f'{x:.2f}' for x in ratios)} | "
                     f"{statistics.median(ratios):.2f} | {', '.join(f'{l:.2f}' for _, _, l in rs)} |")
    table = "\n".join(lines)
    print(table)
    with open(os.path.join(out, "validate.md"), "w") as f:
        f.write(table + "\n")


def compare(a):
    rows = []
    for workers, name, common in configs(a):
            times, loads = [], []
            for _ in range(a.repeat):
                s, l = train(a.fast, a.priority, ["--runtime", "threads", *common])
                times.append(s["wall_seconds"] / s["steps"])
                loads.append(l)
            sim, _ = train(a.fast, "none", ["--runtime", "sim", "--cluster", a.cluster, *common])
            t, p = statistics.median(times), sim["wall_seconds"] / sim["steps"]
            row = (workers, name, t, p, p / t, times, loads)
            rows.append(row)
            print(f"  {workers} workers, {name}: threads {t * 1e3:.3f} ms ({', '.join(f'{x * 1e3:.3f}' for x in times)}; "
                  f"load {', '.join(str(x) for x in loads)}), sim {p * 1e3:.3f} ms, ratio {p / t:.3f}", file=sys.stderr)
    lines = ["| workers | strategy | threads: ms per step (median; runs) | load before the runs | sim: ms per step | sim / threads |",
             "| --- | --- | --- | --- | --- | --- |"]
    for w, name, t, p, ratio, times, loads in rows:
        lines.append(f"| {w} | {name} | {t * 1e3:.3f} ({', '.join(f'{x * 1e3:.3f}' for x in times)}) | "
                     f"{', '.join(f'{x:.2f}' for x in loads)} | {p * 1e3:.3f} | {ratio:.3f} |")
    table = "\n".join(lines)
    print(table)
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "compare.md"), "w") as f:
            f.write(table + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", choices=["measure", "compare", "validate"])
    build = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build", "bin")
    p.add_argument("--fast", default=os.path.join(build, "fast"))
    p.add_argument("--pingpong", default=os.path.join(build, "bench_pingpong_threads"))
    p.add_argument("--cluster", default="clusters/this-machine.toml")
    p.add_argument("--out", default=None, help="measure: the cluster file; compare: a folder for compare.md")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--workers", type=lambda s: [int(x) for x in s.split(",")], default=[2, 4])
    p.add_argument("--cold-mib", type=int, default=256,
                   help="bench_pingpong_threads --cold-mib: region the messages and copies rotate through (0: cache-hot)")
    p.add_argument("--priority", default="autogroup", help="autogroup, rr, nice:N or none")
    a = p.parse_args()
    if a.command == "measure":
        a.out = a.out or "clusters/this-machine.toml"
        measure(a)
    elif a.command == "validate":
        validate(a)
    else:
        compare(a)


if __name__ == "__main__":
    main()
