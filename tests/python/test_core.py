"""The framework-free core API (docs/python.md, "The core API") inside one process: fast.Worker's steps
against their closed form under the threads and sim runtimes, buffers shared without copies, the tensor
mover and the collectives against independently computed values."""
import ctypes
import platform

import numpy as np
import pytest
import torch

import fast
import fast.torch

# sim where this build has it (not with -DFAST_MINIMAL=ON).
RUNTIMES = [pytest.param(r, marks=pytest.mark.skipif(r not in fast.runtime_names(), reason=f"this build has no {r} runtime"))
            for r in ("threads", "sim")]


def start(rank, n=6):
    """Worker rank's initial parameters (the same everywhere) and its constant gradient."""
    params = np.linspace(-1.0, 1.0, n, dtype=np.float32)
    grads = (np.arange(n, dtype=np.float32) + 1.0) * (rank + 1)
    return params, grads


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("workers", [1, 3])
def test_allreduce_sgd_steps_by_the_mean_gradient(runtime, workers):
    lr, steps = 0.1, 3

    def body(ctx):
        params, grads = start(ctx.rank)
        w = fast.Worker(ctx, params, grads, strategy="allreduce", optimizer="sgd", lr=lr, schedule="constant",
                        steps=steps)
        reports = [w.step() for _ in range(steps)]
        w.finish()
        return params.copy(), [r.lr for r in reports], w.representative(), w.steps

    results = fast.run(body, workers=workers, runtime=runtime)
    p0 = start(0)[0]
    mean_grad = np.mean([start(r)[1] for r in range(workers)], axis=0)
    expected = p0 - steps * lr * mean_grad
    for params, lrs, representative, count in results:
        np.testing.assert_allclose(params, expected, rtol=1e-6)
        np.testing.assert_allclose(representative, expected, rtol=1e-6)
        assert lrs == pytest.approx([lr] * steps)
        assert count == steps


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_momentum_follows_its_recurrence(runtime):
    """Heavy-ball momentum on a constant mean gradient g: v_t = m v_{t-1} + g, p_t = p_{t-1} - lr v_t."""
    lr, m, steps, workers = 0.05, 0.9, 4, 2

    def body(ctx):
        params, grads = start(ctx.rank)
        w = fast.Worker(ctx, params, grads, optimizer="momentum", lr=lr, momentum=m, schedule="constant",
                        steps=steps)
        for _ in range(steps):
            w.step()
        w.finish()
        return params.copy()

    g = np.mean([start(r)[1] for r in range(workers)], axis=0).astype(np.float64)
    p, v = start(0)[0].astype(np.float64), np.zeros_like(g)
    for _ in range(steps):
        v = m * v + g
        p = p - lr * v
    for params in fast.run(body, workers=workers, runtime=runtime):
        np.testing.assert_allclose(params, p, rtol=1e-5)


def test_buffers_are_shared_not_copied():
    """FAST writes where the caller's array and tensor live: a numpy array and a torch tensor made from
    it see the step, and a FlatModel's parameters are views into its flat buffer."""
    def body(ctx):
        params, grads = start(ctx.rank)
        as_tensor = torch.from_numpy(params)
        w = fast.Worker(ctx, as_tensor, torch.from_numpy(grads), optimizer="sgd", lr=1.0, schedule="constant",
                        steps=1)
        w.step()
        w.finish()
        return params.copy(), as_tensor.numpy().copy()

    (params, tensor), = fast.run(body, workers=1)
    np.testing.assert_allclose(params, start(0)[0] - start(0)[1], rtol=1e-6)
    np.testing.assert_array_equal(params, tensor)

    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2))
    flat = fast.torch.FlatModel(model)
    base = flat.params_tensor.data_ptr()
    end = base + flat.params.nbytes
    for p in model.parameters():
        assert base <= p.data_ptr() < end and p.grad.data_ptr() - flat.grads_tensor.data_ptr() == p.data_ptr() - base
    flat.params[:] = 2.0                        # the module reads the flat buffer
    assert float(model[0].weight.sum()) == pytest.approx(2.0 * 12)
    model(torch.ones(1, 3)).sum().backward()     # autograd writes into the flat gradient
    assert np.count_nonzero(flat.grads) > 0
    assert flat.grads[:12].reshape(4, 3) == pytest.approx(model[0].weight.grad.numpy())


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_send_recv_recv_any_and_sum(runtime):
    def body(ctx):
        peer = (ctx.rank + 1) % ctx.size
        source = (ctx.rank - 1) % ctx.size
        out = np.zeros(4, dtype=np.float64)
        recv = ctx.recv(source, 7, out)
        ctx.send(peer, 7, np.full(4, ctx.rank, dtype=np.float64)).wait()
        recv.wait()
        acc = np.ones(4, dtype=np.float32)
        recv = ctx.recv(source, 8, acc, combine="sum")
        ctx.send(peer, 8, np.arange(4, dtype=np.float32)).wait()
        recv.wait()
        if ctx.rank > 0:
            ctx.send(0, 9, np.array([ctx.rank * 10], dtype=np.int64)).wait()
            return out, acc, None
        got = sorted((source, int(data[0]), data.dtype.name) for source, data in (ctx.recv_any(9) for _ in range(1, ctx.size)))
        return out, acc, got

    size = 3
    results = fast.run(body, workers=size, runtime=runtime)
    for rank, (out, acc, got) in enumerate(results):
        np.testing.assert_array_equal(out, np.full(4, (rank - 1) % size))
        np.testing.assert_array_equal(acc, 1.0 + np.arange(4))
    assert results[0][2] == [(1, 10, "int64"), (2, 20, "int64")]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_collectives(runtime):
    def body(ctx):
        comm = fast.Communicator(ctx)
        data = np.arange(5, dtype=np.float32) * (ctx.rank + 1)
        comm.allreduce(data)
        mean = np.full(3, float(ctx.rank), dtype=np.float64)
        comm.allreduce(mean, op="mean")
        root = np.full(2, ctx.rank + 100, dtype=np.int32)
        comm.broadcast(root, 1)
        rows = comm.allgather(np.array([ctx.rank, -ctx.rank], dtype=np.int64))
        comm.barrier()
        return data, mean, root, rows

    size = 4
    for data, mean, root, rows in fast.run(body, workers=size, runtime=runtime):
        np.testing.assert_allclose(data, np.arange(5) * sum(range(1, size + 1)))
        np.testing.assert_allclose(mean, np.full(3, (size - 1) / 2))
        np.testing.assert_array_equal(root, [101, 101])
        np.testing.assert_array_equal(rows, [[r, -r] for r in range(size)])


def test_window_put_get_accumulate():
    def body(ctx):
        local = np.zeros(4, dtype=np.float32)
        window = fast.Window(fast.Communicator(ctx), "w", local)
        peer = (ctx.rank + 1) % ctx.size
        window.put(peer, np.array([ctx.rank + 1.0], dtype=np.float32), offset=0).wait()
        window.accumulate(peer, np.array([1.0, 2.0], dtype=np.float32), offset=2).wait()
        fast.Communicator(ctx).barrier()          # every worker's operations are applied
        seen = np.zeros(4, dtype=np.float32)
        window.get(peer, seen).wait()
        fast.Communicator(ctx).barrier()
        window.close()
        return local.copy(), seen

    size = 3
    results = fast.run(body, workers=size)
    for rank, (local, seen) in enumerate(results):
        np.testing.assert_array_equal(local, [(rank - 1) % size + 1, 0, 1, 2])
        np.testing.assert_array_equal(seen, results[(rank + 1) % size][0])


def test_a_worker_exception_reaches_the_caller_and_releases_the_others():
    def body(ctx):
        if ctx.rank == 1:
            raise KeyError("worker one fails")
        out = np.zeros(1, dtype=np.float32)
        ctx.recv(1, 3, out).wait()       # never sent: released when worker 1 fails

    with pytest.raises(KeyError, match="worker one fails"):
        fast.run(body, workers=2, op_timeout=60)


def test_tune_malloc_follows_fast_malloc(monkeypatch):
    """fast.tune_malloc(): refused values name the variable, `system` changes nothing, and the default
    applies glibc's settings (what each does is tested in C++: tests/core/malloc_tuning_test.cpp); a
    tuned heap keeps a freed 400 MiB block until fast.release_free_memory() gives it back."""
    for name in ("GLIBC_TUNABLES", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_MAX_",
                 "MALLOC_ARENA_MAX"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FAST_MALLOC", "jemalloc")
    with pytest.raises(fast.InvalidArgument, match="FAST_MALLOC.*tuned or system.*'jemalloc'"):
        fast.tune_malloc()
    monkeypatch.setenv("FAST_MALLOC", "system")
    assert fast.tune_malloc() == (False, "malloc: glibc's defaults (FAST_MALLOC=system)")
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "1048576")
    monkeypatch.delenv("FAST_MALLOC")
    applied, reason = fast.tune_malloc()
    assert not applied and "MALLOC_TRIM_THRESHOLD_" in reason
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_")
    applied, reason = fast.tune_malloc()
    if platform.libc_ver()[0] == "glibc":
        assert applied, reason
        assert "every size and thread" in reason and "its free memory for the next steps" in reason
        libc = ctypes.CDLL(None)
        libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
        libc.free.argtypes = [ctypes.c_void_p]
        libc.mallinfo2.restype = MallInfo2
        huge = 400 << 20
        block = libc.malloc(huge)
        assert block
        with_block = libc.mallinfo2().arena  # bytes of the heaps (the block is no mapping of its own)
        assert with_block >= huge
        libc.free(block)
        # Kept or given back is a difference of 400 MiB; the margins leave room for what other threads
        # of this process (torch's, the interpreter's) allocate or free meanwhile.
        assert libc.mallinfo2().arena > with_block - huge // 2
        fast.release_free_memory()
        assert libc.mallinfo2().arena < with_block - huge // 2


class MallInfo2(ctypes.Structure):
    """glibc's struct mallinfo2 (malloc.h): ten size_t counters, arena first."""
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]
