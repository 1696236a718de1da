"""examples/python/train_fmnist.py under `fast launch -n 4` (issue acceptance, docs/python.md): the CNN
written in Python reaches 0.85 test accuracy on Fashion-MNIST with a synchronous, an asynchronous gossip
and a parameter-server strategy, and its summary file has fast train's schema and this run's values."""
import json
import os
import sys

import pytest

from processes import FAST_BIN, ROOT, require_runtime, run_bounded

EXAMPLE = os.path.join(ROOT, "examples", "python", "train_fmnist.py")
WORKERS, TIMEOUT = 4, 420
# allreduce is synchronous: with the example's fixed seed it ends at 0.8751 after 2 epochs, every run;
# the asynchronous strategies get 3 epochs, as their runs differ from one to the next.
EPOCHS = {"allreduce": 2, "adpsgd": 3, "ps": 3}


@pytest.mark.parametrize("strategy", ["allreduce", "adpsgd", "ps"])
def test_reaches_085_with_four_processes(strategy, tmp_path):
    require_runtime("zmq")
    epochs = EPOCHS[strategy]
    summary_file = tmp_path / "summary.json"
    cmd = [FAST_BIN, "launch", "-n", str(WORKERS), "--timeout", str(TIMEOUT - 20), "--", sys.executable, EXAMPLE,
           "--strategy", strategy, "--epochs", str(epochs), "--summary", str(summary_file)]
    _, out = run_bounded(cmd, TIMEOUT)
    with open(summary_file) as f:
        summary = json.load(f)
    assert summary["strategy"] == strategy and summary["workers"] == WORKERS, summary
    assert summary["final_accuracy"] >= 0.85, f"{strategy}: {summary['final_accuracy']:.4f} after {epochs} epochs"
    printed = [line for line in out.splitlines() if "final test accuracy" in line]
    assert printed and f"{summary['final_accuracy']:.4f}" in printed[-1], out[-2000:]
