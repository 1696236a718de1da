"""Python and C++ agree (docs/python.md, "Python and fast train agree"): the same model, seed, data order and
synchronous strategy give the same final parameters from a training loop written in Python with fast.torch
and from `fast train`, under the threads runtime (fast.run) and across processes (fast launch and
torchrun's variables: zmq; mpirun: mpi); the tracked run's records and summary have fast train's schema and values.

The model is written in Python and handed to `fast train` as a TorchScript file, whose initial values it
keeps; the Python loop visits Fashion-MNIST in fast train's order (fast.epoch_permutation) and uses fast
train's defaults (momentum 0.9, lr 0.05, cosine schedule over the run). `fast train --save-model` writes
its final representative model. Agreement: max |python - c++| <= 1e-6 x max |c++|.
"""
import json
import os
import sys

import numpy as np
import pytest
import torch

import fast
import fast.torch
from processes import FAST_BIN, ROOT, require_runtime, run_bounded

sys.path.insert(0, os.path.join(ROOT, "examples", "python"))
from train_fmnist import load  # noqa: E402  (Fashion-MNIST, normalised as fast train does)

DATA_DIR = os.environ.get("FAST_DATA_DIR", "/usr/share/datasets/fashion-mnist")
WORKERS, STEPS, BATCH, SEED = 2, 24, 32, 3


def mlp():
    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))


def load_train():
    return load(DATA_DIR, "train")


def load_test():
    return load(DATA_DIR, "t10k")


def train_python(ctx, initial, x, y, track=None):
    """fast train's lockstep loop, in Python: STEPS steps, worker r's batch i at perm[(i W + r) B : +B].
    track: a folder where fast train's records (py.jsonl) and summary (py.json) are written."""
    torch.set_num_threads(1)
    model = mlp()
    model.load_state_dict(initial)
    steps_per_epoch = len(y) // (ctx.size * BATCH)
    worker = fast.torch.Worker(model, ctx, strategy="allreduce", steps=STEPS, seed=SEED,
                               steps_per_epoch=steps_per_epoch)
    if track is not None:
        worker.track(metrics=track / "py.jsonl", summary=track / "py.json", model="mlp", dataset="fashion-mnist",
                     batch=BATCH, log_every=8)
    for step in range(STEPS):
        epoch, i = divmod(step, steps_per_epoch)
        order = torch.from_numpy(fast.epoch_permutation(len(y), SEED, epoch))
        idx = order[(i * ctx.size + ctx.rank) * BATCH:][:BATCH]
        worker.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx])
        loss.backward()
        worker.step(loss)
    if track is not None:
        x_test, y_test = load_test()
        worker.finish((x_test[ctx.rank::ctx.size], y_test[ctx.rank::ctx.size]))
    else:
        worker.finish()
    return worker.params.copy()


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
                 DATA_DIR, "--save-model", str(folder / "cpp.npy"), "--metrics", str(folder / "cpp.jsonl"), "--summary",
                 str(folder / "cpp.json"), "--log-every", "8"], 300)
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


LAUNCHERS = {
    "fast launch": lambda: [FAST_BIN, "launch", "-n", str(WORKERS), "--timeout", "240", "--"],
    "mpirun": lambda: ["mpirun", "--oversubscribe", "-np", str(WORKERS)],
    # torchrun's variables set by hand (torchrun_vars.py): fast.init() finds a world of WORKERS processes
    "torchrun": lambda: [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "torchrun_vars.py"),
                         "-n", str(WORKERS), "--"],
}


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_processes_agree_with_fast_train(reference, launcher):
    """One process per worker: zmq under fast launch and torchrun's variables, mpi under mpirun."""
    require_runtime("mpi" if launcher == "mpirun" else "zmq")
    folder, initial, cpp = reference
    torch.save(initial, folder / "initial.pt")
    (folder / "worker.py").write_text(SCRIPT)
    # OpenMPI's files in this test's folder: mpiruns of parallel tests that share /tmp/ompi.<host>.<uid>
    # race to create it when the last one to end has removed it.
    (folder / "ompi").mkdir(exist_ok=True)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_orte_tmpdir_base=str(folder / "ompi"))
    prefix = str(folder / launcher.replace(" ", "_"))
    run_bounded(LAUNCHERS[launcher]() + [sys.executable, str(folder / "worker.py"),
                                         os.path.dirname(os.path.abspath(__file__)), str(folder / "initial.pt"), prefix],
                300, env)
    for rank in range(WORKERS):
        assert_agree(np.load(f"{prefix}.rank{rank}.npy"), cpp)

def records_by_event(path):
    """{event: set of keys} over a JSONL metrics file."""
    keys = {}
    with open(path) as f:
        for line in f:
            record = json.loads(line)
            keys.setdefault(record["event"], set()).update(record)
    return keys


def test_records_and_summary_have_fast_trains_schema_and_values(reference):
    """fast.torch.Worker.track writes fast train's records and summary: the same events with the same
    keys, and for the same final model the same test accuracy and loss, steps and bytes."""
    folder, initial, cpp = reference
    x, y = load_train()
    fast.run(lambda ctx: train_python(ctx, initial, x, y, track=folder), workers=WORKERS)
    with open(folder / "cpp.json") as f:
        want = json.load(f)
    with open(folder / "py.json") as f:
        got = json.load(f)
    assert set(got) == set(want), f"keys only in fast train: {set(want) - set(got)}; only in Python: {set(got) - set(want)}"
    for key in ("final_accuracy", "replica_accuracy_min", "replica_accuracy_max"):
        assert got[key] == pytest.approx(want[key], abs=3e-4), key
    assert got["final_loss"] == pytest.approx(want["final_loss"], rel=1e-4)
    assert got["param_norm"] == pytest.approx(want["param_norm"], rel=1e-6)
    for key in ("workers", "strategy", "steps", "steps_per_worker", "parameters", "epochs", "allreduce_algorithms"):
        assert got[key] == want[key], key
    # fast.torch.Worker also broadcasts rank 0's initial parameters (4 bytes each, to the one other
    # worker) and all-gathers the layout's digest and the buffers' policy and layout as text (a few
    # tens of bytes per worker): fast train does neither.
    extra = got["bytes_sent"] - want["bytes_sent"]
    assert 4 * want["parameters"] <= extra <= 4 * want["parameters"] + 200, extra
    assert records_by_event(folder / "py.jsonl") == records_by_event(folder / "cpp.jsonl")
