#!/usr/bin/env python3
"""A CNN written in PyTorch, trained on Fashion-MNIST with FAST coordinating the workers (docs/python.md).

    fast launch -n 4 -- python examples/python/train_fmnist.py --strategy adpsgd
    mpirun -np 4 python examples/python/train_fmnist.py --strategy allreduce

with `python` the interpreter that has the package: the environment pip installed it into, or, with
`make build`'s package, PYTHONPATH=build/python and /usr/bin/python3.
"""
import argparse, gzip, json, os

import numpy as np
import torch
import torch.nn.functional as F

import fast
import fast.torch

MEAN, STD = 0.2860, 0.3530  # Fashion-MNIST's pixel mean and deviation, as fast train normalises


def load(data_dir, prefix):
    with gzip.open(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz")) as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)
    with gzip.open(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz")) as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)
    x = torch.from_numpy(x.copy()).float().div_(255.0).sub_(MEAN).div_(STD)
    return x, torch.from_numpy(y.astype(np.int64))


class CNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = torch.nn.Conv2d(1, 32, 3), torch.nn.Conv2d(32, 64, 3)
        self.fc1, self.fc2 = torch.nn.Linear(1600, 128), torch.nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--strategy", default="allreduce", help="any of fast train's strategies")
    p.add_argument("--topology", default=None,
                   help="the gossip graph of dpsgd, adpsgd, gosgd and acid (default: the strategy's)")
    p.add_argument("--compress", default="none", help="codec of what the strategy sends (topk:ratio=0.01, ...)")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--steps-per-epoch", type=int, default=0,
                   help="steps of each epoch; 0: the whole training set (a smaller number for a quick try)")
    p.add_argument("--batch", type=int, default=64, help="mini-batch per worker")
    p.add_argument("--lr", type=float, default=None, help="default: fast train's for the optimizer")
    p.add_argument("--optimizer", default="momentum", help="sgd, momentum, nesterov, adam or adamw")
    p.add_argument("--seed", type=int, default=1, help="model initialisation and data order")
    p.add_argument("--summary", default="", help="JSON summary file (fast train's schema)")
    p.add_argument("--metrics", default="", help="JSONL metrics file (fast train's schema)")
    p.add_argument("--data-dir", default=os.environ.get("FAST_DATA_DIR", "/usr/share/datasets/fashion-mnist"))
    args = p.parse_args()

    ctx = fast.init()
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // fast.workers_on_host()))  # this host's cores, shared
    torch.manual_seed(args.seed)
    x, y = load(args.data_dir, "train")
    x_test, y_test = load(args.data_dir, "t10k")
    full_epoch = len(y) // (ctx.size * args.batch)
    steps_per_epoch = min(args.steps_per_epoch, full_epoch) if args.steps_per_epoch > 0 else full_epoch
    settings = dict(strategy=args.strategy, compress=args.compress, optimizer=args.optimizer,
                    seed=args.seed, steps=args.epochs * steps_per_epoch, steps_per_epoch=steps_per_epoch)
    for name in ("topology", "lr"):  # given: passed on; else the strategy's and the optimizer's defaults
        if getattr(args, name) is not None:
            settings[name] = getattr(args, name)
    model = CNN()
    worker = fast.torch.Worker(model, ctx, **settings)
    worker.track(metrics=args.metrics, summary=args.summary, model="cnn (Python)", dataset="fashion-mnist",
                 batch=args.batch)
    test = (x_test[ctx.rank::ctx.size], y_test[ctx.rank::ctx.size])  # every worker scores its slice
    for epoch in range(args.epochs):
        order = torch.from_numpy(fast.epoch_permutation(len(y), args.seed, epoch))
        for i in range(steps_per_epoch):
            start = (i * ctx.size + ctx.rank) * args.batch
            idx = order[start:start + args.batch]
            worker.zero_grad()
            loss = F.cross_entropy(model(x[idx]), y[idx])
            loss.backward()
            worker.step(loss)
        if not worker.worker.asynchronous and epoch + 1 < args.epochs:
            r = worker.evaluate(test)
            if ctx.rank == 0:
                print(f"epoch {epoch + 1}: test accuracy {r['accuracy']:.4f}, loss {r['loss']:.4f}", flush=True)
    summary = worker.finish(test)
    if ctx.rank == 0:
        print(f"final test accuracy {summary['final_accuracy']:.4f} ({args.strategy}, {ctx.size} workers, "
              f"{summary['wall_seconds']:.1f} s)")
        print(json.dumps({k: summary[k] for k in ("final_accuracy", "wall_seconds", "bytes_sent")}))


if __name__ == "__main__":
    main()
