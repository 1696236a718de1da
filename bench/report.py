#!/usr/bin/python3
"""Tables of the benchmark results written by bench/run.sh (standard library only).

usage: bench/report.py {allreduce|overhead|ddp|codec|processes|ddp_zmq|mpi|windows|python_zmq|python_mpi|all} RESULTS_DIR

  allreduce (a), overhead (b), ddp (c), codec (d), processes (e: all-reduce across processes),
  ddp_zmq (f: `fast train --runtime zmq`, 2 processes, vs DDP), mpi (g: all-reduce through the mpi
  runtime, native and ring, vs MPI_Allreduce), windows (h: one-sided windows under the mpi runtime,
  on MPI RMA and on the service, vs MPI RMA called directly), python_zmq and python_mpi (j: a Python training loop
  with fast.torch, 2 processes under fast launch / mpirun, vs DDP); all: every one with results.

Reads RESULTS_DIR/raw/ (see bench/run.sh for the file names), prints one table per benchmark
with the FAST figure, the peer figure and their ratio (medians over the repetitions), states
whether the goal is met, and writes RESULTS_DIR/<benchmark>_summary.csv and, for `all`,
RESULTS_DIR/summary.json.
"""

import csv
import glob
import json
import math
import os
import re
import statistics
import sys
from collections import defaultdict

from report_mpi import report_mpi, report_windows
from report_util import (DEFAULT_CHUNK, GOAL_ALLREDUCE_FROM, RatioGoal, div, fmt_bw, fmt_ratio, human_bytes,
                         load_text, read_busbw, table, verdict, write_csv)

GOAL_ALLREDUCE = 1.0            # FAST busbw / MPI busbw
GOAL_OVERHEAD = 0.97            # (b) FAST samples/s / plain libtorch samples/s (<= 3% fewer)
GOAL_DDP = {"mlp": 2.0, "cnn": 1.1}  # (c) FAST samples/s / DDP samples/s
GOAL_PROC_MPI_TCP = 0.8         # (e) FAST zmq tcp (CURVE) busbw / OpenMPI tcp busbw, from 1 MiB up
GOAL_PROC_GLOO = 2.0            # (e) FAST zmq tcp (CURVE) busbw / gloo busbw, from 1 MiB up
GOAL_PROC_PLAIN = 1.0           # (e) FAST zmq tcp --insecure / OpenMPI tcp, from 64 KiB up
GOAL_PROC_SHM = 0.8             # (e) FAST zmq, one host (defaults) / OpenMPI shared memory, every size
GOAL_PINGPONG = 2.0             # (e) FAST one-way latency at 4 KiB <= 2x MPI_Send/MPI_Recv's
GOAL_DDP_ZMQ = {"mlp": 2.0, "cnn": 1.2}  # (f) FAST zmq samples/s / DDP samples/s
GOAL_PYTHON = {"mlp": 1.5, "cnn": 1.1}  # (j) FAST from Python samples/s / DDP samples/s
NOISY_SPREAD = 1.25             # (b), (c): max/min of one side's runs above this marks the verdict noisy


# ---------------------------------------------------------------- (a) all-reduce
ALGORITHMS = ("ring", "recursive-doubling", "halving-doubling", "tree")
ALGO_SHORT = {"ring": "ring", "recursive-doubling": "rd", "halving-doubling": "hd", "tree": "tree"}


def report_allreduce(out):
    raw = os.path.join(out, "raw")
    med, reps = read_busbw(raw, "a_*.csv", "all-reduce")
    # impl "fast" is the automatic choice (default chunk); "fast-ALGORITHM" each algorithm (the
    # ring at every chunk of BENCH_CHUNKS, the others at the default chunk).
    chunks = sorted({k[3] for k in med if k[0] == "fast-ring"})
    summary_rows, result = [], {"goal": f"FAST auto busbw >= {GOAL_ALLREDUCE}x MPI at every size", "ranks": {}}
    text = [f"(a) all-reduce bus bandwidth, GB/s (busbw = bytes/time * 2(n-1)/n; median of {reps} runs; "
            f"float sum, in place; {load_text(raw, 'a_*')})",
            "    FAST: threads runtime; auto = the automatic choice (allreduce_algorithm = auto), then each algorithm "
            "(rd recursive-doubling, hd halving-doubling); MPI: OpenMPI MPI_Allreduce(MPI_IN_PLACE, MPI_SUM), "
            "mpirun --bind-to none (4 ranks: --oversubscribe, 4 ranks on 2 cores)",
            "    MPI yield: 2 ranks with --mca mpi_yield_when_idle 1 (4 ranks yield already, being oversubscribed)",
            "    ratio = FAST auto / the better of MPI and MPI yield"]
    for n in sorted({k[1] for k in med}):
        sizes = sorted({k[2] for k in med if k[1] == n})
        rows, goal = [], RatioGoal(GOAL_ALLREDUCE, from_bytes=0)
        for b in sizes:
            mpi_default = med.get(("mpi", n, b, 0))
            mpi_yield = med.get(("mpi_yield", n, b, 0))
            mpi = max((x for x in (mpi_default, mpi_yield) if x is not None), default=None)  # the stronger peer
            auto = med.get(("fast", n, b, DEFAULT_CHUNK))
            algos = {a: med.get((f"fast-{a}", n, b, DEFAULT_CHUNK)) for a in ALGORITHMS}
            known = {a: v for a, v in algos.items() if v is not None}
            best_a = max(known, key=known.get) if known else None
            r = div(auto, mpi)
            goal.add(b, r)
            rows.append([human_bytes(b), fmt_bw(mpi_default), fmt_bw(mpi_yield), fmt_bw(auto), fmt_ratio(r)]
                        + [fmt_bw(algos[a]) for a in ALGORITHMS] + ["-" if best_a is None else ALGO_SHORT[best_a]])
            summary_rows.append({"ranks": n, "bytes": b, "mpi_busbw": mpi_default, "mpi_yield_busbw": mpi_yield,
                                 "mpi_best_busbw": mpi, "fast_auto_busbw": auto, "ratio_auto": r,
                                 "best_algorithm": best_a,
                                 **{f"fast_{a}_busbw": algos[a] for a in ALGORITHMS},
                                 **{f"fast_ring_chunk_{c}": med.get(("fast-ring", n, b, c)) for c in chunks}})
        text.append(f"\n  {n} ranks")
        text.append(table(["size", "MPI", "MPI yield", "FAST auto", "ratio"] + [ALGO_SHORT[a] for a in ALGORITHMS]
                          + ["best"], rows))
        text.append(goal.line(f"FAST auto >= {GOAL_ALLREDUCE}x the better MPI"))
        result["ranks"][str(n)] = goal.result()
    # Ring chunk-size comparison: geometric mean of busbw over sizes >= 1 MiB, per rank count.
    rows = []
    for c in chunks:
        row = [human_bytes(c)]
        for n in sorted({k[1] for k in med}):
            vals = [med[k] for k in med if k[0] == "fast-ring" and k[1] == n and k[3] == c and k[2] >= GOAL_ALLREDUCE_FROM]
            row.append(f"{math.exp(statistics.mean(math.log(v) for v in vals)):.3f}" if vals else "-")
        rows.append(row)
    text.append("\n  FAST ring chunk_bytes: geometric mean busbw (GB/s) over sizes >= 1 MiB")
    text.append(table(["chunk"] + [f"{n} ranks" for n in sorted({k[1] for k in med})], rows))
    write_csv(os.path.join(out, "allreduce_summary.csv"), summary_rows)
    return result, "\n".join(text)


# ---------------------------------------------------------------- (e) all-reduce across processes
E_FAST = ("fast_zmq_tcp", "fast_zmq_tcp_insecure", "fast_zmq_shm")
E_PEERS = ("mpi_shm", "mpi_tcp", "gloo")


def report_processes(out):
    raw = os.path.join(out, "raw")
    med, reps = read_busbw(raw, "e_*.csv", "all-reduce across processes")
    # FAST runs at its default chunk_bytes; the peers have none (0).
    get = lambda impl, n, b: med.get((impl, n, b, DEFAULT_CHUNK if impl.startswith("fast") else 0))
    goal_text = (f"FAST zmq tcp (CURVE) >= {GOAL_PROC_MPI_TCP}x OpenMPI tcp and >= {GOAL_PROC_GLOO}x gloo "
                 "from 1 MiB up")
    summary_rows, result = [], {"goal": goal_text, "ranks": {}}
    text = [f"(e) all-reduce bus bandwidth across processes, GB/s (busbw = bytes/time * 2(n-1)/n; median of {reps} "
            f"runs; float sum, in place; {load_text(raw, 'e_*')})",
            "    FAST: `fast launch -n N -- bench_allreduce_fast --runtime zmq`, one worker per process, chunk 4 MiB; "
            "tcp on 127.0.0.1 without shared memory (FAST_SHM_BYTES=0, as between hosts), CURVE (default) or --insecure; "
            "FAST shm: the default on one host (every message through shared memory, delivered by the waiting worker)",
            "    MPI shm: mpirun --bind-to none, defaults (shared memory, vader); MPI tcp: --mca pml ob1 --mca btl tcp,self "
            "--mca btl_tcp_if_include lo; 4 processes on fewer cores: --oversubscribe",
            "    gloo: torch.distributed all_reduce, N processes on 127.0.0.1 (bench/allreduce_gloo.py)",
            f"    goals: FAST shm >= {GOAL_PROC_SHM}x MPI shm at every size; FAST tcp --insecure >= {GOAL_PROC_PLAIN}x MPI "
            f"tcp from 64 KiB; FAST tcp (CURVE) >= {GOAL_PROC_MPI_TCP}x MPI tcp and >= {GOAL_PROC_GLOO}x gloo from 1 MiB"]
    for n in sorted({k[1] for k in med}):
        sizes = sorted({k[2] for k in med if k[1] == n})
        rows, vs_tcp, vs_gloo = [], RatioGoal(GOAL_PROC_MPI_TCP), RatioGoal(GOAL_PROC_GLOO)
        vs_shm = RatioGoal(GOAL_PROC_SHM, from_bytes=0)
        plain_tcp, plain_gloo = RatioGoal(GOAL_PROC_PLAIN, from_bytes=64 << 10), RatioGoal(0)
        for b in sizes:
            f = {impl: get(impl, n, b) for impl in E_FAST}
            p = {impl: get(impl, n, b) for impl in E_PEERS}
            r_tcp, r_gloo = div(f["fast_zmq_tcp"], p["mpi_tcp"]), div(f["fast_zmq_tcp"], p["gloo"])
            r_shm = div(f["fast_zmq_shm"], p["mpi_shm"])
            r_plain = div(f["fast_zmq_tcp_insecure"], p["mpi_tcp"])
            plain_tcp.add(b, r_plain)
            plain_gloo.add(b, div(f["fast_zmq_tcp_insecure"], p["gloo"]))
            vs_tcp.add(b, r_tcp)
            vs_gloo.add(b, r_gloo)
            vs_shm.add(b, r_shm)
            rows.append([human_bytes(b), fmt_bw(p["mpi_tcp"]), fmt_bw(p["gloo"]), fmt_bw(f["fast_zmq_tcp"]),
                         fmt_ratio(r_tcp), fmt_ratio(r_gloo), fmt_bw(f["fast_zmq_tcp_insecure"]), fmt_ratio(r_plain),
                         fmt_bw(p["mpi_shm"]), fmt_bw(f["fast_zmq_shm"]), fmt_ratio(r_shm)])
            summary_rows.append({"ranks": n, "bytes": b, **{f"{k}_busbw": v for k, v in {**p, **f}.items()},
                                 "ratio_tcp_vs_mpi_tcp": r_tcp, "ratio_tcp_vs_gloo": r_gloo,
                                 "ratio_insecure_vs_mpi_tcp": r_plain, "ratio_shm_vs_mpi_shm": r_shm})
        text.append(f"\n  {n} processes")
        text.append(table(["size", "MPI tcp", "gloo", "FAST tcp", "/ MPI tcp", "/ gloo", "tcp insecure", "/ MPI tcp",
                           "MPI shm", "FAST shm", "/ MPI shm"], rows))
        text.append(vs_tcp.line(f"FAST zmq tcp (CURVE) >= {GOAL_PROC_MPI_TCP}x OpenMPI tcp"))
        text.append(vs_gloo.line(f"FAST zmq tcp (CURVE) >= {GOAL_PROC_GLOO}x gloo"))
        text.append(plain_tcp.line(f"FAST zmq tcp --insecure >= {GOAL_PROC_PLAIN}x OpenMPI tcp (both unencrypted)"))
        text.append(plain_gloo.info("FAST zmq tcp --insecure / gloo (both unencrypted)"))
        text.append(vs_shm.line(f"FAST zmq on one host (defaults) >= {GOAL_PROC_SHM}x OpenMPI shared memory"))
        result["ranks"][str(n)] = {"vs_mpi_tcp": vs_tcp.result(), "vs_gloo": vs_gloo.result(),
                                   "insecure_vs_mpi_tcp": plain_tcp.result(), "shm_vs_mpi_shm": vs_shm.result()}
    pingpong = report_pingpong(raw)
    if pingpong is not None:
        result["pingpong"], ping_text = pingpong
        text.append(ping_text)
    write_csv(os.path.join(out, "processes_summary.csv"), summary_rows)
    return result, "\n".join(text)


def report_pingpong(raw):
    """(e)'s ping-pong: one-way latency of FAST (fast launch -n 2) and MPI_Send/Recv, median per size."""
    times = {}
    for path in sorted(glob.glob(os.path.join(raw, "pp_*.csv"))):
        with open(path) as f:
            for row in csv.DictReader(f):
                times.setdefault((row["impl"], int(row["bytes"])), []).append(float(row["one_way_us"]))
    if not times:
        return None
    med = {k: statistics.median(v) for k, v in times.items()}
    rows, result = [], {"goal": f"FAST one-way at 4 KiB <= {GOAL_PINGPONG}x MPI's", "sizes": {}}
    for b in sorted({k[1] for k in med}):
        f, m = med.get(("fast_pp", b)), med.get(("mpi_pp", b))
        ratio = None if f is None or m is None else f / m
        rows.append([human_bytes(b), "n/a" if m is None else f"{m:.2f}", "n/a" if f is None else f"{f:.2f}",
                     "n/a" if ratio is None else f"{ratio:.2f}x"])
        result["sizes"][str(b)] = {"mpi_us": m, "fast_us": f, "fast_over_mpi": ratio}
    at4k = result["sizes"].get("4096", {}).get("fast_over_mpi")
    result["goal_met"] = None if at4k is None else at4k <= GOAL_PINGPONG
    text = ["\n  ping-pong between 2 processes of one host, one-way latency in us (median of "
            f"{max(len(v) for v in times.values())} runs): FAST Context::send/recv under fast launch (zmq, defaults) vs "
            "MPI_Send/MPI_Recv under mpirun (shared memory)",
            table(["size", "MPI", "FAST", "FAST / MPI"], rows),
            f"  goal (FAST at 4 KiB <= {GOAL_PINGPONG}x MPI's latency): {verdict(result['goal_met'])}"]
    return result, "\n".join(text)


# ---------------------------------------------------------- (b), (c) training runs
def read_runs(raw, prefix):
    """{(model, impl): [record]} from raw/<prefix>_<model>_<impl>_rep<k>.json."""
    runs = defaultdict(list)
    for path in sorted(glob.glob(os.path.join(raw, f"{prefix}_*_rep*.json"))):
        m = re.match(rf"{prefix}_(\w+?)_(\w+)_rep(\d+)\.json$", os.path.basename(path))
        if not m:
            continue
        with open(path) as f:
            runs[(m.group(1), m.group(2))].append(json.load(f))
    return runs


def report_training(out, prefix, peer, title, goal_for, goal_text, summary_name, fast_impl="fast"):
    """fast_impl: the raw files' name for the FAST side ("fast"; (j): "zmq" or "mpi")."""
    raw = os.path.join(out, "raw")
    runs = read_runs(raw, prefix)
    if not runs:
        raise SystemExit(f"report.py: no results {prefix}_* in {raw}")
    rows, summary, result = [], [], {"goal": goal_text, "models": {}}
    for model in ("mlp", "cnn"):
        fast, other = runs.get((model, fast_impl), []), runs.get((model, peer), [])
        if not fast or not other:
            continue
        f_sps = [r["samples_per_second"] for r in fast]
        p_sps = [r["samples_per_second"] for r in other]
        f_med, p_med = statistics.median(f_sps), statistics.median(p_sps)
        ratio = f_med / p_med
        goal = goal_for(model)
        ok = ratio >= goal
        # Runs of one side that differ by more than NOISY_SPREAD: the machine was too busy for the
        # verdict to mean much (typically libtorch's OpenMP threads spinning against other processes).
        spread_ratio = max(max(f_sps) / min(f_sps), max(p_sps) / min(p_sps))
        noisy = spread_ratio > NOISY_SPREAD
        spread = lambda v: f"{min(v):.0f}-{max(v):.0f}"
        rows.append([model, f"{p_med:.0f}", spread(p_sps), f"{f_med:.0f}", spread(f_sps), f"{ratio:.3f}x",
                     f">= {goal}x", verdict(ok) + (f" (noisy: runs differ {spread_ratio:.1f}x)" if noisy else "")])
        result["models"][model] = {"fast_samples_per_second": f_med, f"{peer}_samples_per_second": p_med,
                                   "ratio": ratio, "goal": goal, "goal_met": ok, "runs": len(f_sps),
                                   "noisy": noisy, "max_run_spread": spread_ratio,
                                   "fast_runs": f_sps, f"{peer}_runs": p_sps,
                                   "fast_final_accuracy": [r.get("final_accuracy") for r in fast],
                                   f"{peer}_final_train_loss": [r.get("final_train_loss") for r in other]}
        summary.append({"model": model, "fast": f_med, peer: p_med, "ratio": ratio, "goal": goal, "met": ok})
    meta = {}
    if os.path.exists(os.path.join(out, "meta.json")):
        with open(os.path.join(out, "meta.json")) as f:
            meta = json.load(f)
    threads = f"; FAST_TORCH_THREADS={meta['b_torch_threads']}" if prefix == "b" and "b_torch_threads" in meta else ""
    blas = f"; OPENBLAS_NUM_THREADS={meta.get('openblas_num_threads', '?')}"
    text = [f"{title} ({load_text(raw, prefix + '_*')}{threads}{blas})",
            table(["model", f"{peer} samples/s", "range", "FAST samples/s", "range", "FAST/peer", "goal", ""], rows)]
    write_csv(os.path.join(out, f"{summary_name}_summary.csv"), summary)
    return result, "\n".join(text)


def report_overhead(out):
    return report_training(
        out, "b", "plain",
        "(b) framework overhead: `fast train --workers 1` vs a plain libtorch loop, samples/s "
        "(median; same model, batch, optimizer, threads; timed from step 0 to the last step)",
        lambda m: GOAL_OVERHEAD, "FAST >= 0.97x plain libtorch (<= 3% fewer samples/s)", "overhead")


def report_ddp(out):
    return report_training(
        out, "c", "ddp",
        "(c) 2 workers: `fast train --workers 2` (threads) vs PyTorch DDP over gloo (2 processes), "
        "samples/s of all workers (median; 1 torch thread per worker)",
        lambda m: GOAL_DDP[m], "FAST >= 2x DDP on mlp, >= 1.1x on cnn", "ddp")


def report_ddp_zmq(out):
    return report_training(
        out, "f", "ddp",
        "(f) 2 processes: `fast launch -n 2 -- fast train --runtime zmq` (CURVE, shared memory) vs PyTorch DDP over gloo "
        "(2 processes), samples/s of all workers (median; 1 torch thread per worker)",
        lambda m: GOAL_DDP_ZMQ[m], "FAST zmq >= 2x DDP on mlp, >= 1.2x on cnn", "ddp_zmq")


def report_python(out, runtime, launcher):
    return report_training(
        out, "j", "ddp",
        f"(j) 2 processes, a training loop written in Python: fast.torch under `{launcher}` ({runtime}) vs PyTorch "
        "DDP over gloo (2 processes), samples/s of all workers (median; same model, batch, optimizer; 1 torch "
        "thread per process)",
        lambda m: GOAL_PYTHON[m], f"FAST from Python ({runtime}) >= 1.5x DDP on mlp, >= 1.1x on cnn",
        f"python_{runtime}", fast_impl=runtime)


# ---------------------------------------------------------------- (d) codec throughput
def report_codec(out):
    raw = os.path.join(out, "raw")
    rows = []
    for path in sorted(glob.glob(os.path.join(raw, "d_codec*.csv"))):
        with open(path) as f:
            rows += list(csv.DictReader(f))
    if not rows:
        raise SystemExit(f"report.py: no codec results in {raw}")
    by = defaultdict(list)
    for r in rows:
        by[r["codec"]].append(r)
    result, table_rows = {"goal": "encode + decode GB/s of input: >= 1 for fp16, bf16, int8, sign; >= 0.3 for topk 1%",
                          "codecs": {}}, []
    for codec, rs in by.items():
        gbps = statistics.median(float(r["GBps"]) for r in rs)
        mem = statistics.median(float(r["memcpy_GBps"]) for r in rs)
        goal = float(rs[0]["goal_GBps"])
        met = None if goal == 0 else gbps >= goal
        result["codecs"][codec] = {"GBps": gbps, "memcpy_GBps": mem, "vs_memcpy": gbps / mem, "ratio": float(rs[0]["ratio"]),
                                   "goal_GBps": goal, "goal_met": met}
        enc = statistics.median(float(r["encode_s"]) for r in rs)
        dec = statistics.median(float(r["decode_s"]) for r in rs)
        table_rows.append([codec, f"{float(rs[0]['ratio']):.1f}", f"{enc * 1e3:.2f}", f"{dec * 1e3:.2f}", f"{gbps:.3f}", f"{mem:.2f}", f"{gbps / mem:.3f}",
                           "-" if goal == 0 else f">= {goal}", "-" if met is None else verdict(met)])
    n = int(rows[0]["n"])
    text = [f"(d) codec throughput, encode + decode of {n} f32 ({4 * n / 1e6:.1f} MB, normal(0, 1e-3)), GB/s of input "
            f"(median over runs; {load_text(raw, 'd_*')})",
            table(["codec", "compression", "encode ms", "decode ms", "GB/s", "memcpy GB/s", "x memcpy", "goal", "verdict"],
                  table_rows)]
    with open(os.path.join(out, "codec_summary.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["codec", "GBps", "memcpy_GBps", "vs_memcpy", "ratio", "goal_GBps", "goal_met"])
        for c, v in result["codecs"].items():
            w.writerow([c, v["GBps"], v["memcpy_GBps"], v["vs_memcpy"], v["ratio"], v["goal_GBps"], v["goal_met"]])
    return result, "\n".join(text)


# name: (report function, raw files it reads); `all` runs those with results, in this order.
REPORTS = {
    "allreduce": (report_allreduce, "a_*.csv"),
    "overhead": (report_overhead, "b_*"),
    "ddp": (report_ddp, "c_*"),
    "codec": (report_codec, "d_codec*.csv"),
    "processes": (report_processes, "e_*.csv"),
    "ddp_zmq": (report_ddp_zmq, "f_*"),
    "mpi": (report_mpi, "g_*.csv"),
    "windows": (report_windows, "h_*.csv"),
    "python_zmq": (lambda out: report_python(out, "zmq", "fast launch -n 2"), "j_*_zmq_*"),
    "python_mpi": (lambda out: report_python(out, "mpi", "mpirun -np 2"), "j_*_mpi_*"),
}
TRAINING_TAGS = {"overhead": "(b) overhead", "ddp": "(c) 2 workers vs DDP", "ddp_zmq": "(f) 2 processes (zmq) vs DDP",
                 "python_zmq": "(j) Python, 2 processes (zmq) vs DDP", "python_mpi": "(j) Python, 2 processes (mpi) vs DDP"}


def worst_text(worst):
    return "n/a" if worst is None else f"{worst:.2f}x"


def verdict_lines(name, r):
    """One line per goal of report `name`'s result r."""
    if name == "allreduce":
        return [f"(a) all-reduce, {n} ranks: {verdict(v['goal_met'])} -- {r['goal']}; worst ratio "
                + worst_text(v["worst_ratio_from_1MiB"]) for n, v in r["ranks"].items()]
    if name == "processes":
        lines = []
        for n, v in r["ranks"].items():
            for key, peer in (("vs_mpi_tcp", "OpenMPI tcp"), ("vs_gloo", "gloo")):
                g = v[key]
                lines.append(f"(e) all-reduce, {n} processes: {verdict(g['goal_met'])} -- FAST zmq tcp (CURVE) "
                             f">= {g['goal']}x {peer} from 1 MiB up; worst ratio {worst_text(g['worst_ratio_from_1MiB'])}")
            for key, what in (("insecure_vs_mpi_tcp", f"FAST zmq tcp --insecure >= {GOAL_PROC_PLAIN}x OpenMPI tcp "
                                                        "from 64 KiB up"),
                              ("shm_vs_mpi_shm", f"FAST zmq on one host >= {GOAL_PROC_SHM}x OpenMPI shared memory "
                                                 "at every size")):
                g = v[key]
                lines.append(f"(e) all-reduce, {n} processes: {verdict(g['goal_met'])} -- {what}; worst ratio "
                             f"{worst_text(g['worst_ratio_from_1MiB'])}")
        if "pingpong" in r:
            p = r["pingpong"]
            lines.append(f"(e) ping-pong: {verdict(p['goal_met'])} -- {p['goal']}")
        return lines
    if name == "mpi":  # the goal is judged on the paired measurement where it ran (report_mpi.py)
        return [f"(g) all-reduce through --runtime mpi, {n} ranks: {verdict(v['native']['goal_met'])} -- FAST native "
                f">= {v['native']['goal']}x MPI_Allreduce from 64 KiB up{', paired' if 'paired' in v else ''}; worst "
                f"ratio {worst_text(v['native']['worst_ratio_from_1MiB'])}"
                + (f" (separate programs: worst {worst_text(v['native_separate']['worst_ratio_from_1MiB'])})"
                   if "native_separate" in v else "")
                + f"; ring worst {worst_text(v.get('paired', v).get('ring', {}).get('worst_ratio_from_64KiB'))}"
                for n, v in r["ranks"].items()]
    if name == "windows":
        return ([f"(h) one-sided windows under mpi, owner {o}: information -- on MPI RMA faster than on the service "
                 f"in {v['rma_faster']} of {v['cases']} cases" for o, v in r["owners"].items()]
                + [f"(h) {tag} under mpirun -np 4: information -- samples/s with windows on MPI RMA / on the service "
                   f"{worst_text(v['ratio'])}" for tag, v in r.get("training", {}).items()])
    if name == "codec":
        return [f"(d) codec {c}: {verdict(v['goal_met'])} -- {v['GBps']:.2f} GB/s, goal >= {v['goal_GBps']} GB/s"
                f" ({v['vs_memcpy']:.2f}x memcpy)" for c, v in r["codecs"].items() if v["goal_met"] is not None]
    return [f"{TRAINING_TAGS[name]}, {model}: {verdict(v['goal_met'])} -- FAST/peer {v['ratio']:.3f}x, goal >= {v['goal']}x"
            + (f" (noisy: runs of one side differ {v['max_run_spread']:.1f}x; rerun on a quiet machine)" if v["noisy"] else "")
            for model, v in r["models"].items()]


def main(argv):
    if len(argv) != 3 or (argv[1] not in REPORTS and argv[1] != "all"):
        raise SystemExit(__doc__)
    what, out = argv[1], argv[2]
    if what != "all":
        print(REPORTS[what][0](out)[1])
        return
    # All tables go to RESULTS_DIR/summary.txt; the terminal gets one verdict line per goal.
    result, texts = {}, []
    for name, (fn, pattern) in REPORTS.items():
        if glob.glob(os.path.join(out, "raw", pattern)):
            result[name], text = fn(out)
            texts.append(text)
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write("\n\n".join(texts) + "\n")
    for name, r in result.items():
        for line in verdict_lines(name, r):
            print(line)
    meta = os.path.join(out, "meta.json")
    if os.path.exists(meta):
        with open(meta) as f:
            result["meta"] = json.load(f)
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(result, f, indent=2)
    print(f"tables: {os.path.join(out, 'summary.txt')}; figures: {os.path.join(out, 'summary.json')}")


if __name__ == "__main__":
    main(sys.argv)
