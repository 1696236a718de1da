"""(g) all-reduce through the mpi runtime and (h) one-sided windows under it: the tables of
bench/report.py's `mpi` and `windows` reports (standard library only)."""

import csv
import glob
import json
import os
import re
import statistics
from collections import defaultdict

from report_util import (DEFAULT_CHUNK, RatioGoal, div, fmt_bw, fmt_ratio, human_bytes, load_text, read_busbw,
                         table, write_csv)


# ---------------------------------------------------------------- (g) all-reduce through the mpi runtime
# mpi_direct_again: the same program as mpi_direct, run again in the same repetition (an A/A
# comparison): how far this machine scatters between two runs of one program, next to the goal's 5%.
G_KINDS = ("mpi_direct", "mpi_direct_multiple", "fast_mpi_native", "fast_mpi_fast", "mpi_direct_again")
GOAL_MPI_NATIVE, GOAL_MPI_FROM = 0.95, 64 << 10
# gp_n<N>.csv (bench_allreduce_mpi_paired): the implementations compared with "direct", round by round.
GP_IMPLS = ("fast_native", "fast_ring", "direct_again")


def read_paired(raw):
    """raw/gp_n<N>.csv: {ranks: {(impl, bytes): {round: time_us}}} (empty without such files)."""
    paired = defaultdict(lambda: defaultdict(dict))
    for path in sorted(glob.glob(os.path.join(raw, "gp_n*.csv"))):
        with open(path) as f:
            for row in csv.DictReader(f):
                paired[int(row["ranks"])][(row["impl"], int(row["bytes"]))][int(row["round"])] = float(row["time_us"])
    return paired


def paired_ratio(times, impl, b):
    """Median over the rounds of direct's time / impl's time in the same round (> 1: impl faster)."""
    direct, other = times.get(("direct", b), {}), times.get((impl, b), {})
    ratios = [direct[r] / other[r] for r in direct if r in other and other[r] > 0]
    return statistics.median(ratios) if ratios else None


def report_paired(n, times, summary_rows):
    """(g), paired, n ranks: (text lines, result). The goal's verdict is taken here when these exist."""
    native, ring, again, rows = (RatioGoal(GOAL_MPI_NATIVE, GOAL_MPI_FROM), RatioGoal(0, GOAL_MPI_FROM),
                                 RatioGoal(0, GOAL_MPI_FROM), [])
    rounds = max(len(v) for v in times.values())
    busbw = lambda impl, b, t: (b / (t * 1e-6) / 1e9 * 2 * (n - 1) / n) if t else None
    for b in sorted({k[1] for k in times}):
        med = {impl: (statistics.median(times[(impl, b)].values()) if times.get((impl, b)) else None)
               for impl in ("direct",) + GP_IMPLS}
        r = {impl: paired_ratio(times, impl, b) for impl in GP_IMPLS}
        native.add(b, r["fast_native"])
        ring.add(b, r["fast_ring"])
        again.add(b, r["direct_again"])
        rows.append([human_bytes(b), fmt_bw(busbw("direct", b, med["direct"])),
                     fmt_bw(busbw("fast_native", b, med["fast_native"])), fmt_ratio(r["fast_native"]),
                     fmt_bw(busbw("fast_ring", b, med["fast_ring"])), fmt_ratio(r["fast_ring"]),
                     fmt_ratio(r["direct_again"])])
        summary_rows.append({"ranks": n, "bytes": b, "paired_rounds": rounds,
                             **{f"paired_{impl}_us": med[impl] for impl in med},
                             **{f"paired_ratio_{impl}": r[impl] for impl in GP_IMPLS}})
    text = [f"\n  {n} ranks, paired: one mpirun, the implementations taking turns in each of {rounds} rounds on one "
            "buffer (bench_allreduce_mpi_paired)",
            table(["size", "MPI_Allreduce", "FAST native", "/ MPI", "FAST ring", "/ MPI", "MPI again / MPI"], rows),
            "    GB/s: medians over the rounds; ratios: medians over the rounds of MPI's time / the other's in the same "
            "round",
            native.line(f"FAST native >= {GOAL_MPI_NATIVE}x MPI_Allreduce, paired"),
            ring.info("FAST ring / MPI_Allreduce, paired"),
            again.spread("MPI_Allreduce again / MPI_Allreduce, paired (what this method cannot tell apart)")]
    result = {"native": native.result(), "ring": {"worst_ratio_from_64KiB": ring.worst,
                                                  "geomean_ratio_from_64KiB": ring.geomean},
              "mpi_again": {"lowest_ratio_from_64KiB": again.worst, "highest_ratio_from_64KiB": again.best}}
    return text, result


def report_mpi(out):
    raw = os.path.join(out, "raw")
    paired = read_paired(raw)
    med, reps = read_busbw(raw, "g_*.csv", "all-reduce through the mpi runtime")
    get = lambda impl, n, b: med.get((impl, n, b, DEFAULT_CHUNK if impl.startswith("fast") else 0))
    text = [f"(g) all-reduce bus bandwidth through `--runtime mpi`, GB/s (median of {reps} runs; float sum, in place; "
            f"{load_text(raw, 'g_*')})",
            "    MPI: bench_allreduce_mpi (MPI_Allreduce called directly; MPI_Init, and MPI_Init_thread(MULTIPLE) as FAST "
            "initialises it); FAST native: bench_allreduce_fast --runtime mpi "
            "--collectives native (Communicator::allreduce -> MPI_Allreduce); FAST ring: --collectives fast (chunk 4 MiB)",
            "    all under mpirun --bind-to none with OpenMPI's defaults (shared memory); --oversubscribe above the cores"]
    summary_rows, result = [], {"goal": f"FAST native >= {GOAL_MPI_NATIVE}x MPI_Allreduce from 64 KiB up", "ranks": {}}
    for n in sorted({k[1] for k in med}):
        native, ring, rows = RatioGoal(GOAL_MPI_NATIVE, GOAL_MPI_FROM), RatioGoal(0, GOAL_MPI_FROM), []
        same_level, again = RatioGoal(0, GOAL_MPI_FROM), RatioGoal(0, GOAL_MPI_FROM)
        for b in sorted({k[2] for k in med if k[1] == n}):
            f = {impl: get(impl, n, b) for impl in G_KINDS}
            r_native, r_ring = div(f["fast_mpi_native"], f["mpi_direct"]), div(f["fast_mpi_fast"], f["mpi_direct"])
            r_same_level = div(f["fast_mpi_native"], f["mpi_direct_multiple"])
            r_again = div(f["mpi_direct_again"], f["mpi_direct"])
            native.add(b, r_native)
            again.add(b, r_again)
            ring.add(b, r_ring)
            same_level.add(b, r_same_level)
            rows.append([human_bytes(b), fmt_bw(f["mpi_direct"]), fmt_bw(f["mpi_direct_multiple"]),
                         fmt_bw(f["fast_mpi_native"]), fmt_ratio(r_native), fmt_ratio(r_same_level),
                         fmt_bw(f["fast_mpi_fast"]), fmt_ratio(r_ring), fmt_ratio(r_again)])
            summary_rows.append({"ranks": n, "bytes": b, **{f"{k}_busbw": v for k, v in f.items()},
                                 "ratio_native": r_native, "ratio_native_vs_multiple": r_same_level,
                                 "ratio_ring": r_ring, "ratio_mpi_again": r_again})
        text.append(f"\n  {n} ranks")
        text.append(table(["size", "MPI_Allreduce", "MPI (MULTIPLE)", "FAST native", "/ MPI", "/ MPI (MULTIPLE)",
                           "FAST ring", "/ MPI", "MPI again / MPI"], rows))
        if n in paired:  # the goal is judged on the paired measurement below
            text.append(native.spread("FAST native / MPI_Allreduce, separate programs (the goal is judged paired, "
                                      "below)"))
        else:
            text.append(native.line(f"FAST native >= {GOAL_MPI_NATIVE}x MPI_Allreduce"))
        text.append(same_level.info("FAST native / MPI_Allreduce initialised with MPI_THREAD_MULTIPLE (as FAST is)"))
        text.append(ring.info("FAST ring / MPI_Allreduce"))
        text.append(again.spread("MPI_Allreduce run again / MPI_Allreduce (the same program twice: this "
                                 "machine's scatter)"))
        result["ranks"][str(n)] = {"native": native.result(),
                                   "native_vs_multiple": {"worst_ratio_from_64KiB": same_level.worst,
                                                          "geomean_ratio_from_64KiB": same_level.geomean},
                                   "ring": {"worst_ratio_from_64KiB": ring.worst, "geomean_ratio_from_64KiB": ring.geomean},
                                   "mpi_again": {"lowest_ratio_from_64KiB": again.worst,
                                                 "highest_ratio_from_64KiB": again.best,
                                                 "geomean_ratio_from_64KiB": again.geomean}}
    paired_rows = []
    for n in sorted(paired):
        lines, paired_result = report_paired(n, paired[n], paired_rows)
        text.extend(lines)
        entry = result["ranks"].setdefault(str(n), {})
        if "native" in entry:
            entry["native_separate"] = entry["native"]
        entry.update(native=paired_result["native"], paired=paired_result)
    write_csv(os.path.join(out, "mpi_paired_summary.csv"), paired_rows)
    write_csv(os.path.join(out, "mpi_summary.csv"), summary_rows)
    return result, "\n".join(text)


# ---------------------------------------------------------- (h) one-sided windows under the mpi runtime
H_IMPLS = ("fast_window_service", "fast_window_rma", "mpi_rma_create", "mpi_rma_allocate")


def report_windows(out):
    """(h): microseconds per window operation; the decision it informs is where the mpi runtime's windows run."""
    raw = os.path.join(out, "raw")
    times, reps = defaultdict(list), defaultdict(set)
    for path in sorted(glob.glob(os.path.join(raw, "h_*.csv"))):
        owner = os.path.basename(path).split("_")[1]  # h_<owner>_rep<k>.csv
        with open(path) as f:
            for row in csv.DictReader(f):
                key = (owner, row["impl"], row["op"], int(row["bytes"]))
                times[key].append(float(row["seconds_per_op"]) * 1e6)
                reps[owner].add(path)
    med = {k: statistics.median(v) for k, v in times.items()}
    text = [f"(h) one-sided windows under mpirun -np 2, microseconds per operation (median of the runs; "
            f"{load_text(raw, 'h_*')})",
            "    FAST service: Window over --runtime mpi with FAST_WINDOWS=service (the owner's service activity); "
            "FAST RMA: the default (MPI RMA, the requester applies the operation under an exclusive lock);",
            "    MPI RMA create: the same lock, get, add, put and version count called directly on MPI_Win_create "
            "memory; MPI RMA allocate: a shared lock and MPI_Accumulate / MPI_Get on MPI_Win_allocate memory",
            "    owner idle: rank 0 waits in MPI; owner busy: rank 0 computes without calling MPI (as a training worker)"]
    summary_rows, result = [], {"owners": {}}
    for owner in sorted({k[0] for k in med}):
        rows, faster = [], []
        for b in sorted({k[3] for k in med if k[0] == owner}):
            for op in ("accumulate", "get"):
                f = {impl: med.get((owner, impl, op, b)) for impl in H_IMPLS}
                speedup = div(f["fast_window_service"], f["fast_window_rma"])
                overhead = div(f["fast_window_rma"], f["mpi_rma_create"])
                faster.append(speedup)
                fmt = lambda x: "n/a" if x is None else f"{x:.1f}"
                rows.append([human_bytes(b), op] + [fmt(f[i]) for i in H_IMPLS[:2]] + [fmt_ratio(speedup)]
                            + [fmt(f["mpi_rma_create"]), fmt_ratio(overhead), fmt(f["mpi_rma_allocate"])])
                summary_rows.append({"owner": owner, "bytes": b, "op": op, **{f"{i}_us": f[i] for i in H_IMPLS},
                                     "service_over_rma": speedup, "rma_over_direct": overhead})
        known = [x for x in faster if x is not None]
        text.append(f"\n  owner {owner} ({len(reps[owner])} runs)")
        text.append(table(["size", "op", "FAST service", "FAST RMA", "service / RMA", "MPI RMA create",
                           "FAST RMA / create", "MPI RMA allocate"], rows))
        text.append("  information: FAST's windows on MPI RMA are faster than on the service at "
                    f"{sum(x > 1 for x in known)} of {len(known)} sizes and operations"
                    + ("" if not known else f" (service / RMA {min(known):.2f}x to {max(known):.2f}x)"))
        result["owners"][owner] = {"rma_faster": sum(x > 1 for x in known), "cases": len(known),
                                   "min_speedup": min(known) if known else None,
                                   "max_speedup": max(known) if known else None}
    write_csv(os.path.join(out, "windows_summary.csv"), summary_rows)
    training = report_windows_training(raw, result)
    return result, "\n".join(text + training)


def report_windows_training(raw, result):
    """(h), second part: h_train_<tag>_<windows>_rep<k>.json, 4-rank trainings with each kind of window."""
    runs = defaultdict(list)  # (tag, windows) -> summaries
    for path in sorted(glob.glob(os.path.join(raw, "h_train_*.json"))):
        m = re.match(r"h_train_(.+)_(rma|service)_rep\d+\.json$", os.path.basename(path))
        if m:
            with open(path) as f:
                runs[(m.group(1), m.group(2))].append(json.load(f))
    if not runs:
        return []
    med = lambda tag, w, key: (statistics.median(r[key] for r in runs[(tag, w)]) if runs.get((tag, w)) else None)
    rows, result["training"] = [], {}
    for tag in sorted({k[0] for k in runs}):
        f = {w: med(tag, w, "samples_per_second") for w in ("rma", "service")}
        acc = {w: med(tag, w, "final_accuracy") for w in ("rma", "service")}
        ratio = div(f["rma"], f["service"])
        fmt = lambda x, spec: "n/a" if x is None else format(x, spec)
        rows.append([tag, fmt(f["rma"], ".0f"), fmt(f["service"], ".0f"), fmt_ratio(ratio), fmt(acc["rma"], ".4f"),
                     fmt(acc["service"], ".4f"), str(len(runs.get((tag, "rma"), [])))])
        result["training"][tag] = {"samples_per_second_rma": f["rma"], "samples_per_second_service": f["service"],
                                   "ratio": ratio, "accuracy_rma": acc["rma"], "accuracy_service": acc["service"]}
    return [f"\n  asynchronous strategies, mlp, mpirun -np 4 `fast train --runtime mpi` (median of the runs; "
            f"{load_text(raw, 'h_train_*')})",
            table(["strategy", "samples/s RMA", "samples/s service", "RMA / service", "accuracy RMA",
                   "accuracy service", "runs"], rows)]
