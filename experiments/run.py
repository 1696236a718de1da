#!/usr/bin/env python3
"""Runs `fast train` once per named configuration and prints a Markdown table of the summaries.

Usage: experiments/run.py TABLE [--fast PATH] [--out DIR] [--only NAME,...] [--repeat N] [-- FLAGS...]
TABLE is one of the tables below ("compression", "strategies", "stragglers"); FLAGS after `--` go to
every run. The runs start in the repository's root (where their config files, examples/*.toml, are),
whatever the folder this script is run from; --fast and --out are taken relative to that folder. Every run
writes its metrics and summary under DIR/TABLE/NAME/K/ (NAME = the row's name with each character other
than a letter or digit replaced by "-", dashes at either end dropped; K = repetition, counted from 0, unlike fast compare's folders,
which count from 1); bytes, steps and staleness come from the first repetition; the table is printed on
stdout and written to DIR/TABLE/table.md.
The exact command of every run is printed before it starts, so a row can be reproduced alone.
"""
import argparse
import difflib
import json
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASE = ["--config", "examples/fmnist-allreduce.toml"]  # 4 workers, mlp, 3 epochs, adam, cosine
# A run whose flags name their own --config does not use BASE.

TABLES = {
    # Every strategy on the same model, data and budget.
    # docs/compression.md: the codecs on allreduce and dpsgd, each lossy one with error
    # feedback (allreduce: on each gradient; dpsgd: CHOCO-gossip's public copies).
    "compression": [
        ("allreduce, none", ["--strategy", "allreduce"]),
        ("allreduce, topk 1%", ["--strategy", "allreduce", "--compress", "topk:ratio=0.01"]),
        ("allreduce, sign", ["--strategy", "allreduce", "--compress", "sign"]),
        ("dpsgd, none", ["--strategy", "dpsgd"]),
        ("dpsgd, topk 1%", ["--strategy", "dpsgd", "--compress", "topk:ratio=0.01"]),
        ("dpsgd, sign", ["--strategy", "dpsgd", "--compress", "sign"]),
    ],
    "strategies": [
        ("allreduce", ["--strategy", "allreduce"]),
        ("ps sync", ["--strategy", "ps", "--mode", "sync"]),
        ("ps async", ["--strategy", "ps", "--mode", "async", "--lr-semantics", "per-gradient"]),
        ("ps ssp (s=4)", ["--strategy", "ps", "--mode", "ssp", "--staleness", "4", "--lr-semantics", "per-gradient"]),
        ("local-sgd", ["--strategy", "local-sgd"]),
        ("easgd", ["--strategy", "easgd"]),
        ("dpsgd", ["--strategy", "dpsgd"]),
        ("adpsgd", ["--strategy", "adpsgd"]),
        ("gosgd", ["--strategy", "gosgd", "--topology", "exponential-peer"]),
        ("acid", ["--strategy", "acid"]),
    ],
    # Worker 3 computes 4x slower (examples/fmnist-stragglers.toml).
    "stragglers": [
        (name, ["--config", "examples/fmnist-stragglers.toml"] + args)
        for name, args in [
            ("allreduce", ["--strategy", "allreduce"]),
            ("ps async", ["--strategy", "ps", "--mode", "async", "--lr-semantics", "per-gradient"]),
            ("ps async, 4 servers", ["--strategy", "ps", "--mode", "async", "--servers", "4", "--lr-semantics", "per-gradient"]),
            ("ps ssp (s=4)", ["--strategy", "ps", "--mode", "ssp", "--staleness", "4", "--lr-semantics", "per-gradient"]),
            ("local-sgd", ["--strategy", "local-sgd"]),
            ("dpsgd", ["--strategy", "dpsgd"]),
            ("adpsgd", ["--strategy", "adpsgd"]),
            ("adpsgd, complete graph", ["--strategy", "adpsgd", "--topology", "complete"]),
            ("gosgd", ["--strategy", "gosgd", "--topology", "exponential-peer"]),
            ("acid", ["--strategy", "acid"]),
        ]
    ],
}


def slug(name):
    return "".join(c if c.isalnum() else "-" for c in name).strip("-")


def fmt(v, spec):
    return "n/a" if v is None else format(v, spec)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("table", choices=sorted(TABLES))
    ap.add_argument("--fast", default=os.path.join(REPO, "build", "bin", "fast"))
    ap.add_argument("--out", default="out/experiments")
    ap.add_argument("--only", default="", help="comma-separated run names")
    ap.add_argument("--repeat", type=int, default=1, help="runs per configuration; the table shows medians and ranges")
    ap.add_argument("--vary-seed", action="store_true", help="run k of a configuration uses --seed k+1 (default: the config's seed every time)")
    argv = sys.argv[1:]
    # Everything after the first `--` is for the runs, wherever the options stand before it.
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    a = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    fast = os.path.abspath(a.fast)
    out_dir = os.path.abspath(a.out)
    only = {s.strip() for s in a.only.split(",") if s.strip()}
    names = [name for name, _ in TABLES[a.table]]
    unknown = sorted(only - set(names))
    if unknown:
        for u in unknown:
            near = difflib.get_close_matches(u, names, n=1)
            hint = f" (did you mean '{near[0]}'?)" if near else ""
            print(f"run.py: --only: table '{a.table}' has no run '{u}'{hint}", file=sys.stderr)
        ap.exit(2, "run.py: its runs: " + ", ".join(f"'{n}'" for n in names) + "\n")
    rows = []
    failed = 0  # runs that exited non-zero: the table marks them, and the script exits with 1
    for name, args in TABLES[a.table]:
        if only and name not in only:
            continue
        runs = []
        for k in range(a.repeat):
            d = os.path.join(out_dir, a.table, slug(name), str(k))
            os.makedirs(d, exist_ok=True)
            base = [] if "--config" in args else BASE
            seed = ["--seed", str(k + 1)] if a.vary_seed else []
            cmd = [fast, "train", *base, *args, *seed, *extra, "--metrics", f"{d}/metrics.jsonl", "--summary",
                   f"{d}/summary.json", "--progress", "never"]
            print("$", " ".join(cmd), file=sys.stderr, flush=True)
            t0 = time.time()
            r = subprocess.run(cmd, stdout=subprocess.DEVNULL, cwd=REPO)
            if r.returncode != 0:
                print(f"run '{name}' failed with exit code {r.returncode}", file=sys.stderr)
                failed += 1
                continue
            with open(f"{d}/summary.json") as f:
                s = json.load(f)
            print(f"  {name}: accuracy {s['final_accuracy']:.4f}, {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
            runs.append(s)
        rows.append((name, runs))
    rep = f" (median of {a.repeat}, range)" if a.repeat > 1 else ""
    out = [f"| strategy | final accuracy{rep} | wall s{rep} | time to 0.85 s{rep} | bytes sent | steps per worker | "
           "staleness mean / max | compression ratio |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]

    def cell(values, spec):
        if not values:
            return "not reached"
        values = sorted(values)
        med = statistics.median(values)
        text = format(med, spec)
        if len(values) > 1:
            text += f" ({format(values[0], spec)}-{format(values[-1], spec)})"
        return text

    for name, runs in rows:
        if not runs:
            out.append(f"| {name} | failed | | | | | | |")
            continue
        reached = [s["time_to_target_seconds"] for s in runs if s.get("time_to_target_seconds") is not None]
        ttt = cell(reached, ".2f")
        if reached and len(reached) < len(runs):
            ttt += f", reached in {len(reached)} of {len(runs)} runs"
        first = runs[0]
        out.append(
            f"| {name} | {cell([s['final_accuracy'] for s in runs], '.4f')} | {cell([s['wall_seconds'] for s in runs], '.1f')} | "
            f"{ttt} | {first['bytes_sent'] / 1e6:.0f} MB | {', '.join(str(x) for x in first['steps_per_worker'])} | "
            f"{first['staleness_mean']:.2f} / {first['staleness_max']} | {first.get('compression_ratio', 1.0):.1f} |")
    text = "\n".join(out) + "\n"
    with open(os.path.join(out_dir, a.table, "table.md"), "w") as f:
        f.write(text)
    print(text)
    if failed:
        sys.exit(f"run.py: {failed} run(s) failed (above; the table marks them)")


if __name__ == "__main__":
    main()
