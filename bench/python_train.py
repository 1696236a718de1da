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

import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the peer's model, data, loop and record
from ddp import emit, load_train, make_model, parse_arguments, result, timed_steps  # noqa: E402

import fast  # noqa: E402
import fast.torch  # noqa: E402


def main():
    args = parse_arguments(__doc__.split("\n")[0], workers_flag=False)
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    ctx = fast.init()
    x_all, y_all = load_train(args.data_dir)
    torch.manual_seed(args.seed)
    model = make_model(args.model)
    worker = fast.torch.Worker(model, ctx, strategy="allreduce", optimizer="momentum", lr=args.lr,
                               momentum=args.momentum, schedule="constant", steps=args.steps, seed=args.seed)
    comm = fast.Communicator(ctx)

    def step(xb, yb):
        worker.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        worker.step()
        return loss

    wall, wall_warm, losses = timed_steps(args, x_all, y_all, ctx.size, ctx.rank, comm.barrier, step)
    worker.finish()
    times = comm.allgather(np.array([wall, wall_warm], dtype=np.float64)).max(axis=0)
    if ctx.rank == 0:
        emit(result(f"fast_python_{ctx.runtime}", args, ctx.size, float(times[0]), float(times[1]), losses), args.out)


if __name__ == "__main__":
    sys.exit(main())
