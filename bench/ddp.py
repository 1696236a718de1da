#!/usr/bin/python3
"""Benchmark (c), peer side: data-parallel training throughput of PyTorch DDP over gloo.

Mirrors `fast train --workers W` (threads runtime, strategy allreduce):
  * the same models as src/adapters/torch/models.cpp (mlp, cnn; written out below),
  * Fashion-MNIST read from the gzip IDX files with gzip + numpy, normalised as FAST does
    ((x/255 - 0.2860) / 0.3530), kept in memory as tensors,
  * the same sharding rule as FAST's ShardedLoader: one permutation per epoch shared by all workers,
    worker r at step t takes P[t*W*B + r*B : t*W*B + (r+1)*B] (index_select), so the W workers
    together see W*B samples per step,
  * per-worker batch B, SGD with momentum (torch.optim.SGD), cross_entropy, zero_grad/backward/step,
    loss.item() every step (FAST reads the loss every step too),
  * torch.set_num_threads(--threads) and one inter-op thread in each process.
W processes (torch.multiprocessing.spawn) join a gloo process group on 127.0.0.1; DDP keeps its
defaults (25 MB buckets, gradient all-reduce overlapped with backward).

Timing: after a barrier, from the start of step 0 to the end of the last step on each rank (what
`fast train` reports), max over ranks; samples/s = steps * B * W / wall. The rate after the first
--warmup steps is reported as samples_per_second_warm.

Prints one line of JSON (and writes it to --out when given).
"""

import argparse
import gzip
import json
import os
import socket
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

MEAN, STD = 0.2860, 0.3530


def make_model(name):
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                             nn.Linear(128, 10))
    if name == "cnn":
        # 28x28 -conv3-> 26x26 -pool2-> 13x13 -conv3-> 11x11 -pool2-> 5x5; 64*5*5 = 1600.
        return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3), nn.ReLU(),
                             nn.MaxPool2d(2), nn.Flatten(), nn.Linear(1600, 128), nn.ReLU(), nn.Linear(128, 10))
    raise SystemExit(f"ddp.py: unknown model '{name}': expected mlp or cnn")


def read_idx(path):
    if not os.path.exists(path):
        raise SystemExit(f"ddp.py: missing {path} (Debian package dataset-fashion-mnist)")
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_train(data_dir):
    images = read_idx(os.path.join(data_dir, "train-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(data_dir, "train-labels-idx1-ubyte.gz"))
    x = torch.from_numpy(images.astype(np.float32)).reshape(-1, 1, 28, 28)
    x = (x / 255.0 - MEAN) / STD
    y = torch.from_numpy(labels.astype(np.int64))
    return x.contiguous(), y


def timed_steps(args, x_all, y_all, workers, rank, barrier, step):
    """The timed training loop (shared with bench/python_train.py, so both sides take the same
    batches the same way): after barrier(), args.steps calls of step(xb, yb) -> loss tensor on worker
    rank's slice of a per-epoch permutation. Returns (seconds from step 0, seconds after the warm-up
    steps, the losses)."""
    n = y_all.shape[0]
    B = args.batch
    steps_per_epoch = n // (workers * B)
    gen = torch.Generator().manual_seed(args.seed)
    perm = None
    losses = []
    barrier()
    t0 = time.perf_counter()
    t_warm = t0
    for s in range(args.steps):
        i = s % steps_per_epoch
        if i == 0:
            perm = torch.randperm(n, generator=gen)
        start = i * workers * B + rank * B
        idx = perm[start:start + B]
        losses.append(step(x_all.index_select(0, idx), y_all.index_select(0, idx)).item())
        if s + 1 == args.warmup:
            t_warm = time.perf_counter()
    t1 = time.perf_counter()
    return t1 - t0, t1 - t_warm, losses


def result(impl, args, workers, wall, wall_warm, losses):
    """The JSON record of a run (both sides): wall and warm times are the maxima over the workers."""
    B, tail = args.batch, losses[-50:]
    return {
        "impl": impl, "torch": torch.__version__, "model": args.model, "workers": workers,
        "batch": B, "steps": args.steps, "warmup": args.warmup, "threads": args.threads,
        "wall_seconds": wall,
        "samples_per_second": args.steps * B * workers / wall,
        "samples_per_second_warm": (args.steps - args.warmup) * B * workers / wall_warm if args.warmup else
        args.steps * B * workers / wall,
        "final_train_loss": sum(tail) / len(tail),
    }


def emit(record, out):
    """Prints the record as one line of JSON and writes it to the file out (when not empty)."""
    line = json.dumps(record)
    print(line)
    if out:
        with open(out, "w") as f:
            f.write(line + "\n")


def worker(rank, args, port, queue):
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=args.workers)
    try:
        x_all, y_all = load_train(args.data_dir)
        torch.manual_seed(args.seed)
        model = make_model(args.model)
        ddp = nn.parallel.DistributedDataParallel(model)
        opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=args.momentum)

        def step(xb, yb):
            opt.zero_grad()
            loss = F.cross_entropy(ddp(xb), yb)
            loss.backward()
            opt.step()
            return loss

        wall, wall_warm, losses = timed_steps(args, x_all, y_all, args.workers, rank, dist.barrier, step)
        times = torch.tensor([wall, wall_warm], dtype=torch.float64)
        dist.all_reduce(times, op=dist.ReduceOp.MAX)
        if rank == 0:
            queue.put(result("pytorch_ddp_gloo", args, args.workers, *times.tolist(), losses))
    finally:
        dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse_arguments(description, workers_flag):
    """The command line both sides take (bench/python_train.py: the world gives the worker count)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--model", default="mlp", choices=["mlp", "cnn"])
    if workers_flag:
        p.add_argument("--workers", type=int, default=2)
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
    return args


def main():
    args = parse_arguments(__doc__.split("\n")[0], workers_flag=True)
    if not dist.is_available() or not dist.is_gloo_available():
        raise SystemExit("ddp.py: this torch has no gloo backend")

    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    mp.start_processes(worker, args=(args, free_port(), queue), nprocs=args.workers, join=True,
                       start_method="spawn")
    if queue.empty():
        raise SystemExit("ddp.py: no result from rank 0")
    emit(queue.get(), args.out)


if __name__ == "__main__":
    sys.exit(main())
