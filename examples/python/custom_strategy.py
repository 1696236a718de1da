#!/usr/bin/env python3
"""A strategy of your own on FAST's tensor mover: gossip SGD on a ring, in Python (docs/python.md).

    fast launch -n 4 -- /usr/bin/python3 examples/python/custom_strategy.py
"""
import argparse, os, sys

import numpy as np
import torch
import torch.nn.functional as F

import fast
import fast.torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_fmnist import load  # noqa: E402  (Fashion-MNIST as tensors)


class RingGossip:
    """D-PSGD on a ring: a local SGD step, then the average of the model with both ring neighbours'.

    Messages: the model to the right neighbour under tag 1 and to the left one under tag 2. Messages of
    one (peer, tag) pair arrive in the order sent, so every step can reuse the same two tags.
    """

    def __init__(self, ctx, params, grads, lr):
        self.ctx, self.params, self.grads, self.lr = ctx, params, grads, lr
        self.left, self.right = (ctx.rank - 1) % ctx.size, (ctx.rank + 1) % ctx.size
        self.from_left, self.from_right = np.empty_like(params), np.empty_like(params)

    def step(self):
        self.params -= self.lr * self.grads                      # local SGD step, in place
        work = [self.ctx.send(self.right, 1, self.params), self.ctx.send(self.left, 2, self.params),
                self.ctx.recv(self.left, 1, self.from_left), self.ctx.recv(self.right, 2, self.from_right)]
        for w in work:
            w.wait()                                             # params may change only after the sends
        self.params += self.from_left
        self.params += self.from_right
        self.params /= 3

    def finish(self):
        fast.Communicator(self.ctx).allreduce(self.params, op="mean")   # the consensus model


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--data-dir", default=os.environ.get("FAST_DATA_DIR", "/usr/share/datasets/fashion-mnist"))
    args = p.parse_args()
    ctx = fast.init()
    torch.set_num_threads(1)
    torch.manual_seed(1)                                         # the same initial model on every worker
    x, y = load(args.data_dir, "train")
    x_test, y_test = load(args.data_dir, "t10k")
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    flat = fast.torch.FlatModel(model)
    flat.check_same_layout(ctx)
    strategy = RingGossip(ctx, flat.params, flat.grads, args.lr)
    steps = len(y) // (ctx.size * args.batch)
    for epoch in range(args.epochs):
        order = torch.from_numpy(fast.epoch_permutation(len(y), 1, epoch))
        for i in range(steps):
            idx = order[(i * ctx.size + ctx.rank) * args.batch:][:args.batch]
            flat.zero_grad()
            F.cross_entropy(model(x[idx]), y[idx]).backward()
            strategy.step()
    strategy.finish()
    correct, _, count = flat.score((x_test, y_test))(flat.params)
    if ctx.rank == 0:
        print(f"ring gossip, {ctx.size} workers: test accuracy {correct / count:.4f}")


if __name__ == "__main__":
    main()
