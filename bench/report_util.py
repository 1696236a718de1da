"""Helpers shared by the benchmark reports (bench/report.py, bench/report_mpi.py): formatting,
tables, medians of the all-reduce CSVs (bench/allreduce_common.hpp's columns) and ratio goals.
Standard library only."""

import csv
import glob
import math
import os
import statistics
from collections import defaultdict

DEFAULT_CHUNK = 4 << 20  # fast::collective::AllreduceOptions::chunk_bytes
GOAL_ALLREDUCE_FROM = 1 << 20   # (a) goal applies from 1 MiB up (RatioGoal's default start)


def human_bytes(b):
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= size and b % size == 0:
            return f"{b // size} {unit}"
    return f"{b} B"


def loads(raw, pattern):
    """Mean 1-minute load average recorded before the runs matching pattern."""
    vals = []
    for path in glob.glob(os.path.join(raw, pattern + ".load")):
        with open(path) as f:
            vals.append(float(f.read().split()[0]))
    return (statistics.mean(vals), min(vals), max(vals)) if vals else None


def load_text(raw, pattern):
    l = loads(raw, pattern)
    return "load n/a" if l is None else f"1-min load avg {l[0]:.2f} (min {l[1]:.2f}, max {l[2]:.2f}) on {os.cpu_count()} cores"


def table(header, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    line = lambda r: "| " + " | ".join(str(x).rjust(w) for x, w in zip(r, widths)) + " |"
    out = [line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(r) for r in rows]
    return "\n".join(out)


def verdict(ok):
    return "NO DATA" if ok is None else "MET" if ok else "MISSED"


def fmt_bw(x):
    return "-" if x is None else f"{x:.3f}"


def fmt_ratio(x):
    return "-" if x is None else f"{x:.2f}x"


def div(a, b):
    return a / b if a and b else None


def write_csv(path, rows):
    """rows: a list of dicts with the same keys (the first row's are the columns)."""
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()) if rows else ["none"])
        w.writeheader()
        w.writerows(rows)


# ---------------------------------------------------------------- all-reduce tables ((a), (e))
def read_busbw(raw, pattern, what):
    """Medians of busbw_GBps over the CSVs raw/<pattern> (allreduce_common.hpp's columns):
    ({(impl, ranks, bytes, chunk_bytes): median GB/s}, the most runs of one key)."""
    busbw = defaultdict(list)
    for path in sorted(glob.glob(os.path.join(raw, pattern))):
        with open(path) as f:
            for row in csv.DictReader(f):
                key = (row["impl"], int(row["ranks"]), int(row["bytes"]), int(row["chunk_bytes"]))
                busbw[key].append(float(row["busbw_GBps"]))
    if not busbw:
        raise SystemExit(f"report.py: no {what} results ({pattern}) in {raw}")
    return {k: statistics.median(v) for k, v in busbw.items()}, max(len(v) for v in busbw.values())


class RatioGoal:
    """A goal 'ratio >= goal for every size >= GOAL_ALLREDUCE_FROM': fed one ratio per size."""

    def __init__(self, goal, from_bytes=None):
        self.goal, self.ratios = goal, []
        self.from_bytes = GOAL_ALLREDUCE_FROM if from_bytes is None else from_bytes

    def add(self, nbytes, ratio):
        if nbytes >= self.from_bytes and ratio is not None:
            self.ratios.append(ratio)

    @property
    def met(self):  # None: no size >= 1 MiB had both figures
        return None if not self.ratios else min(self.ratios) >= self.goal

    @property
    def worst(self):
        return min(self.ratios) if self.ratios else None

    @property
    def best(self):
        return max(self.ratios) if self.ratios else None

    @property
    def geomean(self):
        return math.exp(statistics.mean(math.log(r) for r in self.ratios)) if self.ratios else None

    def line(self, text):
        return (f"  goal ({text} for sizes >= {human_bytes(self.from_bytes)}): {verdict(self.met)}"
                + ("" if self.worst is None else f" (worst ratio {self.worst:.2f}x)"))

    def info(self, text):  # the same ratios as information, without a verdict
        return (f"  information: {text}, sizes >= {human_bytes(self.from_bytes)}: "
                + ("n/a" if self.worst is None else f"worst {self.worst:.2f}x, geometric mean {self.geomean:.2f}x"))

    def spread(self, text):  # information with both ends: for ratios that may fall on either side of 1
        return (f"  information: {text}, sizes >= {human_bytes(self.from_bytes)}: "
                + ("n/a" if self.worst is None
                   else f"{self.worst:.2f}x to {self.best:.2f}x, geometric mean {self.geomean:.2f}x"))

    def result(self):
        return {"goal": self.goal, "goal_met": self.met, "worst_ratio_from_1MiB": self.worst}
