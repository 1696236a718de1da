#!/usr/bin/python3
"""Benchmark (j), FAST side: data-parallel training throughput of a training loop written in Python
with fast.torch, one process per worker (`fast launch -n 2 -- ...`: zmq; `mpirun -np 2 ...`: mpi).

Mirrors bench/ddp.py line for line except for the coordination: the same model and data (imported
from ddp.py), the same sharding rule and per-worker batch, cross_entropy, zero_grad/backward,
loss.item() every step; instead of DDP + torch.optim.SGD, fast.torch.Worker with strategy allreduce
and FAST's momentum optimizer (the same heavy-ball update, constant learning rate). One torch thread
and one inter-op thread per process.

Timing: after a barrier, from the start of step 0 to the end of the last step on each worker, max over
workers; samples/s = steps * B * W / wall; samples_per_second_warm after the first --warmup steps.
Worker 0 prints one line of JSON (and writes it to --out when given).
"""

import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ddp import load_train, make_model  # noqa: E402  (the peer's model and data: one definition)

import fast  # noqa: E402
import fast.torch  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="mlp", choices=["mlp", "cnn"])
    p.add_argument("--batch", type=int, default=64, help="per worker")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--steps", type=int, default=500, help="per worker")
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads per process")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--data-dir", default=os.environ.get("FAST_DATA_DIR", "/usr/share/datasets/fashion-mnist"))
    p.add_argument("--out", default="")
    args = p.parse_args()
    if not (0 <= args.warmup < args.steps):
        p.error("need 0 <= warmup < steps")

    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    ctx = fast.init()
    x_all, y_all = load_train(args.data_dir)
    n = y_all.shape[0]
    W, B, rank = ctx.size, args.batch, ctx.rank
    steps_per_epoch = n // (W * B)

    torch.manual_seed(args.seed)
    model = make_model(args.model)
    worker = fast.torch.Worker(model, ctx, strategy="allreduce", optimizer="momentum", lr=args.lr,
                               momentum=args.momentum, schedule="constant", steps=args.steps, seed=args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    comm = fast.Communicator(ctx)

    perm = None
    losses = []
    comm.barrier()
    t0 = time.perf_counter()
    t_warm = t0
    for s in range(args.steps):
        step = s % steps_per_epoch
        if step == 0:
            perm = torch.randperm(n, generator=gen)
        start = step * W * B + rank * B
        idx = perm[start:start + B]
        xb = x_all.index_select(0, idx)
        yb = y_all.index_select(0, idx)
        worker.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        worker.step()
        losses.append(loss.item())
        if s + 1 == args.warmup:
            t_warm = time.perf_counter()
    t1 = time.perf_counter()
    worker.finish()

    times = comm.allgather(np.array([t1 - t0, t1 - t_warm], dtype=np.float64)).max(axis=0)
    if rank == 0:
        wall, wall_warm = float(times[0]), float(times[1])
        tail = losses[-50:]
        result = {
            "impl": f"fast_python_{ctx.runtime}", "torch": torch.__version__, "model": args.model, "workers": W,
            "batch": B, "steps": args.steps, "warmup": args.warmup, "threads": args.threads,
            "wall_seconds": wall,
            "samples_per_second": args.steps * B * W / wall,
            "samples_per_second_warm": (args.steps - args.warmup) * B * W / wall_warm if args.warmup else
            args.steps * B * W / wall,
            "final_train_loss": sum(tail) / len(tail),
        }
        line = json.dumps(result)
        print(line)
        if args.out:
            with open(args.out, "w") as f:
                f.write(line + "\n")


if __name__ == "__main__":
    sys.exit(main())
