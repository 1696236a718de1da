#!/usr/bin/env python3
"""Deep Gradient Compression against dense training (docs/compression.md, "Deep Gradient Compression").

Usage: experiments/dgc.py [--fast PATH] [--out DIR] [--models mlp,cnn] [--strategies allreduce,ps]
                          [--seeds 1,2,3] [--extra "FLAGS"]

Fashion-MNIST, 4 workers, optimizer momentum 0.9, lr 0.05, per model, strategy (allreduce; ps --mode
sync) and seed, these runs:
  dense 1 epoch | topk 1% 1 epoch | topk 1% + dgc 1 epoch
  dense 3 epochs | topk 0.1% 3 epochs | topk 0.1% + dgc 3 epochs
(topk always with error feedback; dgc with its defaults, momentum correction and the local view:
--extra="--dgc-local-view off --dgc-masking on" runs the paper's DGC instead). Every run writes DIR/<model>/<strategy>/<name>/seed<S>/summary.json
and is skipped when that file exists, so an interrupted sweep continues where it stopped. Prints
the command of every run before it starts, then one Markdown table (also DIR/table.md): per
row the accuracies of the seeds, their mean, the mean gap to dense of the same length, and two
byte ratios: "payload" = dense gradient bytes / encoded bytes of every message the codec
encoded (what a worker puts on the wire per tensor), and "wire" = bytes_sent of the dense run /
bytes_sent of this run (every byte the runtime sent, all-gather forwarding and ps replies included).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

RUNS = [  # name, epochs, flags
    ("dense", 1, []),
    ("topk 1%", 1, ["--compress", "topk:ratio=0.01"]),
    ("topk 1% + dgc", 1, ["--compress", "topk:ratio=0.01", "--dgc"]),
    ("dense", 3, []),
    ("topk 0.1%", 3, ["--compress", "topk:ratio=0.001"]),
    ("topk 0.1% + dgc", 3, ["--compress", "topk:ratio=0.001", "--dgc"]),
]
STRATEGIES = {"allreduce": ["--strategy", "allreduce"], "ps": ["--strategy", "ps", "--mode", "sync"]}


def run(fast, out_dir, model, strategy, name, epochs, flags, seed, extra):
    folder = os.path.join(out_dir, model, strategy, f"{name.replace(' ', '_').replace('%', 'pct')}_{epochs}ep",
                          f"seed{seed}")
    summary = os.path.join(folder, "summary.json")
    if not os.path.exists(summary):
        os.makedirs(folder, exist_ok=True)
        cmd = [fast, "train", "--workers", "4", "--model", model, "--optimizer", "momentum", "--momentum", "0.9",
               "--lr", "0.05", "--schedule", "constant", "--epochs", str(epochs), "--seed", str(seed), "--progress", "never",
               "--summary", summary + ".tmp"] + STRATEGIES[strategy] + flags + extra
        print("$ " + " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        os.replace(summary + ".tmp", summary)
    with open(summary) as f:
        return json.load(f)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--fast", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build",
                                                  "bin", "fast"))
    p.add_argument("--out", default="build/experiments/dgc")
    p.add_argument("--models", default="mlp,cnn")
    p.add_argument("--strategies", default="allreduce,ps")
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--extra", default="", help="more fast train flags for every run")
    a = p.parse_args()
    seeds = [int(s) for s in a.seeds.split(",")]
    lines = ["| model | strategy | run | epochs | " + " | ".join(f"seed {s}" for s in seeds) +
             " | mean | gap to dense (points) | payload ratio | wire ratio |",
             "| --- | --- | --- | --- | " + " | ".join("---" for _ in seeds) + " | --- | --- | --- | --- |"]
    for model in a.models.split(","):
        for strategy in a.strategies.split(","):
            dense = {}
            for name, epochs, flags in RUNS:
                got = [run(a.fast, a.out, model, strategy, name, epochs, flags, s, a.extra.split()) for s in seeds]
                acc = [g["final_accuracy"] for g in got]
                if name == "dense":
                    dense[epochs] = got
                gap = statistics.mean(acc) - statistics.mean(d["final_accuracy"] for d in dense[epochs])
                raw = sum(g.get("compressed_raw_bytes", 0) for g in got)
                wire = sum(g.get("compressed_wire_bytes", 0) for g in got)
                payload = f"{raw / wire:.0f}x" if wire else "1x"
                wire_ratio = sum(d["bytes_sent"] for d in dense[epochs]) / sum(g["bytes_sent"] for g in got)
                lines.append(f"| {model} | {strategy} | {name} | {epochs} | " +
                             " | ".join(f"{x:.4f}" for x in acc) +
                             f" | {statistics.mean(acc):.4f} | {100 * gap:+.2f} | {payload} | {wire_ratio:.0f}x |")
                print(lines[-1], flush=True)
    table = "\n".join(lines) + "\n"
    with open(os.path.join(a.out, "table.md"), "w") as f:
        f.write(table)
    sys.stdout.write(table)


if __name__ == "__main__":
    main()
