"""The Python examples (docs/python.md): the custom strategy of examples/python/custom_strategy.py takes the
step its closed form gives, and the example programs run to the end under `fast launch`."""
import os
import sys

import numpy as np
import pytest

import fast
from processes import FAST_BIN, ROOT, require_runtime, run_bounded

sys.path.insert(0, os.path.join(ROOT, "examples", "python"))
from custom_strategy import RingGossip  # noqa: E402


@pytest.mark.parametrize("workers", [1, 2, 3, 5])
def test_ring_gossip_step_is_the_neighbour_average_of_the_local_steps(workers):
    lr, n = 0.25, 7

    def start(rank):  # worker r's parameters and gradient, known to every worker
        return np.arange(n, dtype=np.float32) * (rank + 1), np.full(n, rank - 1.5, dtype=np.float32)

    def body(ctx):
        params, grads = start(ctx.rank)
        strategy = RingGossip(ctx, params, grads, lr)
        strategy.step()
        after = params.copy()
        strategy.finish()
        return after, params

    results = fast.run(body, workers=workers)
    local = [p - lr * g for p, g in (start(r) for r in range(workers))]
    for r, (after, final) in enumerate(results):
        expected = (local[(r - 1) % workers] + local[r] + local[(r + 1) % workers]) / 3
        np.testing.assert_allclose(after, expected, rtol=1e-6)
        np.testing.assert_allclose(final, np.mean([res[0] for res in results], axis=0), rtol=1e-6)


def run_example(args, timeout):
    require_runtime("zmq")
    return run_bounded([FAST_BIN, "launch", "-n", "2", "--timeout", str(timeout - 10), "--", sys.executable] + args,
                       timeout)[1]


def test_custom_strategy_example_trains():
    out = run_example([os.path.join(ROOT, "examples", "python", "custom_strategy.py")], 180)
    line = [l for l in out.splitlines() if "test accuracy" in l][-1]
    assert float(line.split()[-1]) >= 0.75, line
