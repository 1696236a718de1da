"""Python and C++ agree (docs/python.md, "Python and fast train agree"): the same model, seed, data order and
synchronous strategy give the same final parameters from a training loop written in Python with fast.torch
and from `fast train`, under the threads runtime (fast.run) and across processes (fast launch, zmq).

The model is written in Python and handed to `fast train` as a TorchScript file, whose initial values it
keeps; the Python loop visits Fashion-MNIST in fast train's order (fast.epoch_permutation) and uses fast
train's defaults (momentum 0.9, lr 0.05, cosine schedule over the run). `fast train --save-model` writes
its final representative model. Agreement: max |python - c++| <= 1e-6 x max |c++|.
"""
import gzip
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
import torch

import fast
import fast.torch

FAST_BIN = os.environ.get("FAST_BIN", "build/bin/fast")
DATA_DIR = os.environ.get("FAST_DATA_DIR", "/usr/share/datasets/fashion-mnist")
WORKERS, STEPS, BATCH, SEED = 2, 24, 32, 3
MEAN, STD = 0.2860, 0.3530


def mlp():
    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))


def load_train():
    with gzip.open(os.path.join(DATA_DIR, "train-images-idx3-ubyte.gz")) as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)
    with gzip.open(os.path.join(DATA_DIR, "train-labels-idx1-ubyte.gz")) as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)
    return (torch.from_numpy(x.copy()).float().div_(255.0).sub_(MEAN).div_(STD),
            torch.from_numpy(y.astype(np.int64)))


def train_python(ctx, initial, x, y):
    """fast train's lockstep loop, in Python: STEPS steps, worker r's batch i at perm[(i W + r) B : +B]."""
    torch.set_num_threads(1)
    model = mlp()
    model.load_state_dict(initial)
    steps_per_epoch = len(y) // (ctx.size * BATCH)
    worker = fast.torch.Worker(model, ctx, strategy="allreduce", steps=STEPS, seed=SEED,
                               steps_per_epoch=steps_per_epoch)
    for step in range(STEPS):
        epoch, i = divmod(step, steps_per_epoch)
        order = torch.from_numpy(fast.epoch_permutation(len(y), SEED, epoch))
        idx = order[(i * ctx.size + ctx.rank) * BATCH:][:BATCH]
        worker.zero_grad()
        torch.nn.functional.cross_entropy(model(x[idx]), y[idx]).backward()
        worker.step()
    worker.finish()
    return worker.params.copy()


def run_bounded(cmd, env, timeout):
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"{cmd[:3]} did not end within {timeout} s")
    assert proc.returncode == 0, f"{' '.join(cmd)} exited with {proc.returncode}:\n{out[-3000:]}"
    return out


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The model file, its initial state and fast train's final parameters."""
    folder = tmp_path_factory.mktemp("agreement")
    torch.manual_seed(7)
    model = mlp()
    initial = {k: v.clone() for k, v in model.state_dict().items()}
    torch.jit.script(model).save(str(folder / "mlp.pt"))
    run_bounded([FAST_BIN, "train", "--model", str(folder / "mlp.pt"), "--workers", str(WORKERS), "--strategy",
                 "allreduce", "--steps", str(STEPS), "--batch", str(BATCH), "--seed", str(SEED), "--data-dir",
                 DATA_DIR, "--save-model", str(folder / "cpp.npy")], dict(os.environ), 300)
    return folder, initial, np.load(folder / "cpp.npy")


def assert_agree(python, cpp):
    assert python.shape == cpp.shape
    assert np.isfinite(cpp).all()
    error = np.max(np.abs(python - cpp)) / np.max(np.abs(cpp))
    assert error <= 1e-6, f"max |python - c++| / max |c++| = {error:.3g}"


def test_threads_runtime_agrees_with_fast_train(reference):
    _, initial, cpp = reference
    x, y = load_train()
    results = fast.run(lambda ctx: train_python(ctx, initial, x, y), workers=WORKERS)
    for params in results:
        assert_agree(params, cpp)


SCRIPT = r'''
import sys, numpy as np, torch
sys.path.insert(0, sys.argv[1])
import test_agreement as t
import fast
ctx = fast.init()
initial = torch.load(sys.argv[2])
x, y = t.load_train()
np.save(sys.argv[3] + f".rank{ctx.rank}.npy", t.train_python(ctx, initial, x, y))
'''


def test_processes_agree_with_fast_train(reference):
    folder, initial, cpp = reference
    torch.save(initial, folder / "initial.pt")
    (folder / "worker.py").write_text(SCRIPT)
    run_bounded([FAST_BIN, "launch", "-n", str(WORKERS), "--timeout", "240", "--", sys.executable,
                 str(folder / "worker.py"), os.path.dirname(os.path.abspath(__file__)), str(folder / "initial.pt"),
                 str(folder / "py")], dict(os.environ), 300)
    for rank in range(WORKERS):
        assert_agree(np.load(folder / f"py.rank{rank}.npy"), cpp)
