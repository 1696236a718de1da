"""Bad input gets a clear Python exception of FAST's types, naming what is wrong, and no crash
(docs/python.md, "Errors"): unknown names, float64, non-contiguous and non-CPU buffers, layouts that
differ between workers (threads and processes), calling step() after finish()."""
import os
import sys
import textwrap

import numpy as np
import pytest
import torch

import fast
import fast.torch
from processes import FAST_BIN, ROOT, require_runtime, run_bounded



def one_worker(fn):
    """fn(ctx) on a world of one worker; its exception is re-raised here."""
    return fast.run(fn, workers=1)[0]


def buffers(n=8, dtype=np.float32):
    return np.zeros(n, dtype=dtype), np.zeros(n, dtype=dtype)


def test_exception_hierarchy():
    assert issubclass(fast.InvalidArgument, fast.Error) and issubclass(fast.InvalidArgument, ValueError)
    assert issubclass(fast.IoError, OSError)
    for name in ("InvalidUsage", "TimeoutError", "PeerLost", "RemoteError"):
        assert issubclass(getattr(fast, name), fast.Error)


def test_unknown_strategy_names_the_choices():
    with pytest.raises(fast.InvalidArgument, match=r"strategy.*'gossipy'.*allreduce"):
        one_worker(lambda ctx: fast.Worker(ctx, *buffers(), strategy="gossipy", steps=10))


@pytest.mark.parametrize("settings, pattern", [
    (dict(optimizer="adagrad"), r"optimizer.*adagrad"),
    (dict(lr="fast"), r"lr.*fast"),
    (dict(compress="zip"), r"zip"),
    (dict(learning_rate=0.1), r"unknown setting 'learning_rate'; expected"),
    (dict(compres="int8"), r"unknown setting 'compres' \(did you mean 'compress'\?\)"),
    (dict(strategy="ps", mode="asyncc", steps=4), r"mode: unknown value 'asyncc' \(did you mean 'async'\?\)"),
    (dict(steps=[1]), r"setting 'steps' expects a str, int, float or bool, got list"),
    (dict(lr=True), r"setting 'lr' got True \(a bool\): lr: expected a number"),
    (dict(), r"schedule 'cosine'.*steps=N"),
])
def test_bad_settings(settings, pattern):
    with pytest.raises(fast.InvalidArgument, match=pattern):
        one_worker(lambda ctx: fast.Worker(ctx, *buffers(), **settings))


def test_an_option_the_strategy_does_not_read_is_named_in_a_warning(capfd):
    one_worker(lambda ctx: fast.Worker(ctx, *buffers(), strategy="allreduce", mode="async", steps=1))
    err = capfd.readouterr().err
    assert "fast.Worker: mode: an option of ps; allreduce does not read it" in err, err
    one_worker(lambda ctx: fast.Worker(ctx, *buffers(), strategy="ps", mode="async", steps=1))
    assert "does not read it" not in capfd.readouterr().err


def test_an_option_another_setting_turns_off_is_named_in_a_warning(capfd):
    one_worker(lambda ctx: fast.Worker(ctx, *buffers(), strategy="dpsgd", consensus_step=0.5, steps=1))
    assert "fast.Worker: consensus_step: changes nothing with compress = 'none'" in capfd.readouterr().err
    one_worker(lambda ctx: fast.Worker(ctx, *buffers(), strategy="dpsgd", consensus_step=0.5, compress="int8",
                                       steps=1))
    assert "changes nothing" not in capfd.readouterr().err


def test_a_step_count_the_run_is_too_short_for_is_named_in_a_warning(capfd):
    one_worker(lambda ctx: fast.Worker(ctx, *buffers(), strategy="local-sgd", period=8, steps=5))
    assert ("local-sgd': period = 8: the first average of the models would come at step 8, after the run's 5 "
            "steps per worker") in capfd.readouterr().err
    one_worker(lambda ctx: fast.Worker(ctx, *buffers(), strategy="local-sgd", period=5, steps=5))
    assert "period = " not in capfd.readouterr().err


@pytest.mark.parametrize("runtime", ["threads", "sim"])
def test_a_fault_that_kills_a_process_is_refused_where_workers_share_one(runtime):
    with pytest.raises(fast.InvalidArgument, match=f"exit-while-ending kills the worker's process, and under "
                                                   f"runtime '{runtime}' every worker runs in this one process"):
        fast.run(lambda ctx: fast.Worker(ctx, *buffers(), strategy="adpsgd", steps=5,
                                         fault_inject="exit-while-ending@1"), workers=2, runtime=runtime)


@pytest.mark.parametrize("value", [-5.0, -0.5, 0.0, float("nan")])
def test_an_op_timeout_other_than_positive_or_minus_one_is_refused(value):
    """-1 alone means the default (FAST_OP_TIMEOUT); -5 was taken for it without a word."""
    with pytest.raises(fast.InvalidArgument, match="op_timeout: expected seconds > 0, or -1 for the default"):
        fast.run(lambda ctx: 0, workers=1, op_timeout=value)
    assert fast.run(lambda ctx: ctx.rank, workers=1, op_timeout=-1) == [0]


def test_float64_buffers():
    with pytest.raises(fast.InvalidArgument, match=r"fast.Worker: params: expected float32 elements.*got f64"):
        one_worker(lambda ctx: fast.Worker(ctx, *buffers(dtype=np.float64), steps=1))
    with pytest.raises(fast.InvalidArgument, match=r"parameter '0.weight' is torch.float64"):
        fast.torch.FlatModel(torch.nn.Sequential(torch.nn.Linear(2, 2)).double())


def test_non_contiguous_buffers():
    params = np.zeros((4, 4), dtype=np.float32)[:, ::2]
    with pytest.raises(fast.InvalidArgument, match=r"params: expected a C-contiguous array"):
        one_worker(lambda ctx: fast.Worker(ctx, params, np.zeros(8, np.float32), steps=1))
    tensor = torch.zeros(4, 4).t()
    with pytest.raises(fast.InvalidArgument, match=r"grads: expected a contiguous tensor"):
        one_worker(lambda ctx: fast.Worker(ctx, torch.zeros(16), tensor, steps=1))


def test_non_cpu_tensors():
    """A tensor outside host memory (the meta device stands for a GPU here: no data in CPU memory)."""
    with pytest.raises(fast.InvalidArgument, match=r"params: expected a tensor in CPU memory.*'meta'"):
        one_worker(lambda ctx: fast.Worker(ctx, torch.zeros(8, device="meta"), torch.zeros(8), steps=1))
    with pytest.raises(fast.InvalidArgument, match=r"parameter '0.weight' is on device 'meta'"):
        fast.torch.FlatModel(torch.nn.Sequential(torch.nn.Linear(2, 2)).to("meta"))


def test_other_bad_buffers():
    with pytest.raises(fast.InvalidArgument, match=r"params has 8 elements, grads has 4"):
        one_worker(lambda ctx: fast.Worker(ctx, np.zeros(8, np.float32), np.zeros(4, np.float32), steps=1))
    with pytest.raises(fast.InvalidArgument, match=r"expected a numpy array, a torch.Tensor or another buffer, got "
                                                   r"builtins.list"):
        one_worker(lambda ctx: fast.Worker(ctx, [0.0] * 8, np.zeros(8, np.float32), steps=1))
    frozen = np.zeros(8, np.float32)
    frozen.flags.writeable = False
    with pytest.raises(fast.InvalidArgument, match=r"params: FAST writes into this array, got a read-only one"):
        one_worker(lambda ctx: fast.Worker(ctx, frozen, np.zeros(8, np.float32), steps=1))
    with pytest.raises(fast.InvalidArgument, match=r"no parameter that requires a gradient"):
        fast.torch.FlatModel(torch.nn.ReLU())
    both = np.zeros(16, np.float32)
    for params, grads in ((both, both), (both[:8], both[4:12]), (both[7:15], both[:8])):
        with pytest.raises(fast.InvalidArgument, match=r"params and grads share memory"):
            one_worker(lambda ctx: fast.Worker(ctx, params, grads, steps=1))
    fast.run(lambda ctx: fast.Worker(ctx, both[:8], both[8:], steps=1).finish(), workers=1)  # adjacent: separate


def test_a_tensor_numpy_cannot_hold_and_a_bad_layout_are_bad_input_naming_the_argument():
    """A bfloat16 tensor (torch's TypeError from .numpy() before), and a layout shape that is not a
    sequence of integers >= 0 (pybind11's bare RuntimeError before): fast.InvalidArgument naming it."""
    with pytest.raises(fast.InvalidArgument, match=r"params: expected float32, .*got a torch.bfloat16 tensor"):
        one_worker(lambda ctx: fast.Worker(ctx, torch.zeros(8, dtype=torch.bfloat16), torch.zeros(8), steps=1))
    for shape in ((-2,), "ab", (1.5,)):
        with pytest.raises(fast.InvalidArgument, match=r"layout: the shape of 'a' must be a sequence of integers >= 0"):
            one_worker(lambda ctx: fast.Worker(ctx, *buffers(), layout=[("a", shape)], steps=1))
    with pytest.raises(fast.InvalidArgument, match=r"layout: expected \(name, shape\) pairs, got 3"):
        one_worker(lambda ctx: fast.Worker(ctx, *buffers(), layout=[3], steps=1))


@pytest.mark.parametrize("seconds", [float("nan"), float("inf"), 1e300])
def test_a_sleep_of_no_finite_length_is_refused(seconds):
    """Context.sleep(nan), (inf) and (1e300) slept forever, deaf to op_timeout."""
    with pytest.raises(fast.InvalidArgument, match=r"Context.sleep: seconds: expected a number of seconds up to 1e9"):
        one_worker(lambda ctx: ctx.sleep(seconds))


def test_step_after_finish():
    def body(ctx):
        w = fast.Worker(ctx, *buffers(), steps=1)
        w.step()
        w.finish()
        w.step()

    with pytest.raises(fast.InvalidUsage, match=r"step: called after finish\(\)"):
        one_worker(body)


def test_workers_whose_settings_differ_are_refused_naming_the_setting():
    """A worker given another lr trained apart from the others, silently; every worker now raises
    the same InvalidArgument, naming the first worker that differs from worker 0."""
    def body(ctx):
        try:
            fast.Worker(ctx, *buffers(), steps=4, lr=0.05 if ctx.rank == 2 else 0.1)
        except fast.InvalidArgument as e:
            return str(e)
        return None

    for rank, message in enumerate(fast.run(body, workers=3)):
        assert message is not None, f"worker {rank} accepted settings that differ"
        assert "the workers' settings differ: lr = 0.05 in worker 2, 0.1 in worker 0" in message, message

    def asynchronous(ctx):  # each worker takes the steps of its own loop: not compared
        fast.Worker(ctx, *buffers(), strategy="adpsgd", steps=4 + ctx.rank)
        return True

    assert fast.run(asynchronous, workers=2) == [True, True]


def test_a_worker_whose_own_arguments_are_refused_fails_the_others_at_once():
    """Worker 1's lr=-1 raised on worker 1 alone; the others waited for it in the settings exchange
    until op_timeout (30 s here), then failed with a timeout. Now they raise at once, naming worker 1 and its error."""
    def body(ctx):
        try:
            fast.Worker(ctx, *buffers(), steps=4, lr=-1.0 if ctx.rank == 1 else 0.1)
        except fast.InvalidArgument as e:
            return str(e)
        return None

    messages = fast.run(body, workers=3, op_timeout=30)  # without the refusal shared: a timeout, not this
    assert "lr" in messages[1] and "refused its own arguments" not in messages[1], messages[1]
    for rank in (0, 2):
        assert messages[rank] is not None and "worker 1 refused its own arguments, so no worker starts" in \
            messages[rank] and messages[1] in messages[rank], messages[rank]

    def two(ctx):  # workers 1 and 2 refuse, each its own argument: worker 0 names both, each with its error
        try:
            fast.Worker(ctx, *buffers(), steps=4, lr=-1.0 if ctx.rank == 1 else 0.1,
                        momentum=1.5 if ctx.rank == 2 else 0.9)
        except fast.InvalidArgument as e:
            return str(e)
        return None

    messages = fast.run(two, workers=3, op_timeout=30)
    assert messages[1].startswith("fast.Worker: lr: ") and messages[2].startswith("fast.Worker: momentum: "), messages
    assert messages[0] == ("fast.Worker: workers 1, 2 refused their own arguments, so no worker starts; "
                           f"worker 1's error: {messages[1]}; worker 2's error: {messages[2]}"), messages[0]


def net(rank):
    """Rank 1 builds a wider hidden layer than the others."""
    hidden = 16 if rank == 1 else 8
    return torch.nn.Sequential(torch.nn.Linear(4, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 2))


def test_layouts_that_differ_between_workers_threads():
    def body(ctx):
        try:
            fast.torch.Worker(net(ctx.rank), ctx, steps=1)
        except fast.InvalidArgument as e:
            return str(e)
        return None

    messages = fast.run(body, workers=3)
    for rank, message in enumerate(messages):
        assert message is not None, f"worker {rank} accepted a layout that differs"
        assert f"worker {rank} has 4 tensors" in message and "every worker must build the same architecture" in message
    assert "workers [0, 2] have another" in messages[1]


def test_buffer_policies_or_buffers_that_differ_between_workers():
    """A worker syncing its BatchNorm statistics (buffers="broadcast") beside one that does not
    ("local") waited in the broadcast until op_timeout; the same for a module without those buffers.
    Every worker now raises at construction, naming both values; the default and the policy it
    resolves to are the same; a worker's own refused policy is its error, and the others name it."""
    def model(track=True):
        return torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.BatchNorm1d(6, track_running_stats=track),
                                   torch.nn.Linear(6, 2))

    def attempt(make, **settings):
        def body(ctx):
            try:
                fast.torch.Worker(make(ctx), ctx, steps=1, **{k: v(ctx) for k, v in settings.items()})
            except fast.InvalidArgument as e:
                return str(e)
            return None
        return fast.run(body, workers=3, op_timeout=30)

    messages = attempt(lambda ctx: model(), buffers=lambda ctx: "local" if ctx.rank == 1 else None)
    for rank, message in enumerate(messages):
        assert message is not None and "buffers = 'local' in worker 1, 'broadcast' in worker 0" in message, message

    messages = attempt(lambda ctx: model(track=ctx.rank != 2))
    for message in messages:
        assert message is not None and "the workers' module buffers differ: worker 2 has 0, worker 0 has 3; first " \
            "difference: none in worker 2, '1.running_mean' (6,) torch.float32 in worker 0" in message, message

    messages = attempt(lambda ctx: model(), buffers=lambda ctx: "bogus" if ctx.rank == 1 else None)
    assert messages[1] == "fast.torch: buffers must be one of broadcast, average, local; got 'bogus'", messages[1]
    for rank in (0, 2):
        assert messages[rank] == "fast.torch.Worker: worker 1 refused its own buffers=, so no worker starts; its " \
            "error: " + messages[1], messages[rank]
    messages = attempt(lambda ctx: model(), buffers=lambda ctx: "bogus" if ctx.rank > 0 else None)
    assert messages[0] == ("fast.torch.Worker: workers 1, 2 refused their own buffers=, so no worker starts; "
                           f"worker 1's error: {messages[1]}; worker 2's error: {messages[2]}"), messages[0]

    messages = attempt(lambda ctx: model(), strategy=lambda ctx: "adpsgd",
                       buffers=lambda ctx: "broadcast" if ctx.rank == 0 else None)
    assert "is asynchronous (its workers do not step together): use buffers='local'" in messages[0], messages[0]
    assert all("worker 0 refused its own buffers=" in m for m in messages[1:]), messages

    # The default resolves to broadcast under allreduce: the same as saying so.
    assert attempt(lambda ctx: model(), buffers=lambda ctx: "broadcast" if ctx.rank == 2 else None) == [None] * 3


MISMATCH = textwrap.dedent("""
    import sys, torch
    sys.path.insert(0, sys.argv[1])
    import fast, fast.torch, test_errors
    ctx = fast.init()
    try:
        fast.torch.Worker(test_errors.net(ctx.rank), ctx, steps=1)
    except fast.InvalidArgument as e:
        print(f"rank {ctx.rank}: InvalidArgument: {e}", flush=True)
        sys.exit(3)
    print(f"rank {ctx.rank}: accepted", flush=True)
""")


def test_layouts_that_differ_between_processes(tmp_path):
    require_runtime("zmq")
    script = tmp_path / "mismatch.py"
    script.write_text(MISMATCH)
    code, out = run_bounded([FAST_BIN, "launch", "-n", "2", "--timeout", "120", "--", sys.executable, script,
                             os.path.dirname(os.path.abspath(__file__))], 150, check=False)
    assert code != 0, out
    assert "accepted" not in out, out
    for rank in (0, 1):
        assert f"rank {rank}: InvalidArgument: fast.torch: the model's parameter layout differs" in out, out
    assert "Segmentation" not in out and "core dumped" not in out, out


LEAVER = textwrap.dedent("""
    import sys, numpy as np
    import fast
    ctx = fast.init()
    comm = fast.Communicator(ctx)
    a = np.ones(10, np.float32)
    comm.allreduce(a)
    if ctx.rank == int(sys.argv[1]):
        sys.exit(7)
    comm.allreduce(a)   # the other process is gone: fast.PeerLost, uncaught
""")


@pytest.mark.parametrize("leaver", [0, 1])
def test_a_process_that_loses_its_peer_exits_as_fast_train_does(leaver, tmp_path):
    """A process that exits with 7 between two all-reduces: the other one ends on an uncaught fast.PeerLost,
    with the last line and exit code `fast train` gives it (3, "fast: peer lost: ..."), so `fast launch`
    ends the run with the leaver's 7, whichever process it saw end first (docs/launch.md, "Exit code")."""
    require_runtime("zmq")
    script = tmp_path / "leaver.py"
    script.write_text(LEAVER)
    code, out = run_bounded([FAST_BIN, "launch", "-n", "2", "--timeout", "120", "--", sys.executable, script,
                             str(leaver)], 150, check=False)
    assert code == 7, out
    assert f"[{1 - leaver}] fast: peer lost: " in out, out


RAISER = textwrap.dedent("""
    import numpy as np
    import fast
    ctx = fast.init()
    comm = fast.Communicator(ctx)
    a = np.ones(10, np.float32)
    comm.allreduce(a)
    if ctx.rank == 1:
        raise RuntimeError("boom")
    comm.allreduce(a)   # fast.PeerLost (RemoteError when its receive was posted first) naming worker 1's failure, uncaught
""")


def test_a_process_that_fails_hears_the_others_leave(tmp_path):
    """Process 1 raises between two all-reduces: process 0 ends on fast.PeerLost (exit 3) and says bye, and
    process 1, which waits at exit for the others to leave, hears that bye: it does not wait for process 0's
    silence to last a peer timeout. The run's exit code is process 1's own (Python's 1)."""
    require_runtime("zmq")
    script = tmp_path / "raiser.py"
    script.write_text(RAISER)
    code, out = run_bounded([FAST_BIN, "launch", "-n", "2", "--timeout", "120", "--", sys.executable, script], 150,
                            check=False)
    assert code == 1, out
    # Process 0's last line names worker 1's failure: "peer lost: worker 1 (...) failed: ...", or, when
    # its receive was posted before the news came, "peer lost: recv from rank 1 ... refused: worker 1 ...".
    last = [line for line in out.splitlines() if line.startswith("[0] fast: peer lost: ")]
    assert len(last) == 1 and "worker 1 (process 1" in last[0] and "failed: RuntimeError: boom" in last[0], out
    assert "no message or heartbeat" not in out, out


def test_a_python_error_on_one_mpi_rank_ends_the_job(tmp_path):
    """Under mpirun with MPI's own collectives, process 1 raises a Python error (not a FAST one) while
    process 0 waits in MPI_Allreduce with it: process 1 ends without MPI_Finalize, which would wait for
    process 0 forever (the job hung until killed), so mpirun ends the job and process 0 says why."""
    require_runtime("mpi")
    script = tmp_path / "raiser.py"
    script.write_text(RAISER)
    (tmp_path / "ompi").mkdir()
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_orte_tmpdir_base=str(tmp_path / "ompi"))
    code, out = run_bounded(["mpirun", "--oversubscribe", "-np", "2", sys.executable, script], 90, env, check=False)
    assert code != 0, out
    assert "RuntimeError: boom" in out, out
    assert "rank 0: ended by the MPI launcher (SIGTERM): worker 1 (MPI rank 1) failed: RuntimeError: boom" in out, out


@pytest.mark.parametrize("kept", ["asynchronous_worker", "window", "posted_receive"])
def test_a_worker_function_that_raises_keeps_no_object_past_its_world(kept, tmp_path):
    """The traceback of a worker function that raised keeps its objects after fast.run ends the world; a
    Worker's or Window's service must end with the world, not run on against a Context that is gone (the
    interpreter died of a segmentation fault), and a posted receive's Work with it (waiting on it, or
    dropping it, hung on the freed world's mailbox). Run in a child interpreter: a crash would end pytest."""
    script = tmp_path / "raises.py"
    script.write_text(textwrap.dedent(f"""
        import gc
        import numpy as np
        import fast

        KEPT = []

        def body(ctx):
            a, b = np.zeros(10, np.float32), np.zeros(10, np.float32)
            if "{kept}" == "window":
                window = fast.Window(fast.Communicator(ctx), "w", a)
                KEPT.append(lambda: window.put(0, a))
            elif "{kept}" == "posted_receive":  # a receive that no send matches
                work = ctx.recv(1 - ctx.rank, 5, b)
                KEPT.append(lambda: work.wait(1))
            else:
                KEPT.append(fast.Worker(ctx, a, b, strategy="adpsgd", steps=2).finish)
            raise ValueError("raised by worker " + str(ctx.rank))

        try:
            fast.run(body, workers=2)
        except ValueError as e:
            print("caught:", e)
        try:
            KEPT[0]()
        except fast.InvalidUsage as used:
            print("after:", used)
        KEPT.clear()
        gc.collect()
        print("done")
    """))
    code, out = run_bounded([sys.executable, script], timeout=60, env=dict(os.environ), check=False)
    assert code == 0, out
    assert "caught: raised by worker" in out and "done" in out
    assert ("after: fast.Work: its world has ended" if kept == "posted_receive"
            else "after: this fast.Context's world has ended") in out, out


def test_a_later_sim_world_refuses_a_cluster_with_stragglers_instead_of_hanging(tmp_path):
    """SimGrid's clock goes on between the sim worlds of one process and starts straggler draws at its
    time 0: a second fast.run on edge-16 (stragglers) hung with SimGrid's "deadlock detected". It is
    refused before it starts, saying why; a cluster without stragglers still runs after it. In a child
    interpreter: the first sim world of this one may have run already."""
    script = tmp_path / "two_sims.py"
    script.write_text(textwrap.dedent(f"""
        import numpy as np
        import fast

        def body(ctx):
            p, g = np.zeros(8, np.float32), np.ones(8, np.float32)
            worker = fast.Worker(ctx, p, g, strategy="allreduce", optimizer="sgd", lr=0.5, schedule="constant",
                                 steps=2)
            for _ in range(2):
                worker.step()
            worker.finish()
            return float(p[0])

        edge = {str(os.path.join(ROOT, "clusters", "edge-16.toml"))!r}
        print("first:", fast.run(body, workers=3, runtime="sim", cluster=edge))
        try:
            fast.run(body, workers=3, runtime="sim", cluster=edge)
        except fast.InvalidUsage as e:
            print("refused:", e)
        print("plain:", fast.run(body, workers=3, runtime="sim"))
    """))
    code, out = run_bounded([sys.executable, script], timeout=60, env=dict(os.environ), check=False)
    assert code == 0, out
    assert "first: [-1.0, -1.0, -1.0]" in out, out  # two steps of lr 0.5 on the gradient 1
    assert "refused: sim: cluster 'edge-16' has stragglers" in out, out
    assert "run this simulation in a process of its own" in out, out
    assert "plain: [-1.0, -1.0, -1.0]" in out, out


def test_a_second_init_is_refused_before_it_logs_anything(tmp_path):
    """fast.init() while this process is in a world raises InvalidUsage; the launcher line of the
    refused call is not logged (it was, before the refusal). In a child interpreter: its world lasts
    until the interpreter's exit."""
    script = tmp_path / "init_twice.py"
    script.write_text(textwrap.dedent("""
        import fast

        ctx = fast.init()
        try:
            fast.init()
        except fast.InvalidUsage as e:
            print("refused:", e)
        fast.shutdown()
    """))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAST_", "OMPI_", "PMI"))}
    env.update(PYTHONPATH=os.environ.get("PYTHONPATH", ""), FAST_LOG_LEVEL="info")
    code, out = run_bounded([sys.executable, script], timeout=60, env=env, check=False)
    assert code == 0, out
    assert "refused: fast.init: this process already joined a world (runtime 'threads')" in out, out
    assert out.count("fast.init: launcher:") == 1, out


@pytest.mark.parametrize("call, code, line", [
    ("fast.init(runtime='bogus')", 2, "fast: error: "),
    ("fast.init(op_timeout=0)", 2, "fast: error: op_timeout"),
    ("fast.run(lambda ctx: 1, workers=0)", 2, "fast: error: "),
    ("fast.init()\nraise fast.TimeoutError('waited')", 4, "fast: timeout: waited"),
    ("raise fast.TimeoutError('waited')", 1, "TimeoutError: waited"),  # neither init() nor run(): Python's
])
def test_an_uncaught_error_of_init_or_run_exits_as_documented(call, code, line, tmp_path):
    """A FAST error raised by fast.init() itself or by fast.run(), before any world exists, ends the
    program with the code of docs/errors.md and the last line `fast: KIND: MESSAGE` (it ended with
    Python's 1: the hook that sets them was installed only once init() had succeeded); a program that
    called neither keeps Python's own exit."""
    script = tmp_path / "fails.py"
    script.write_text(f"import fast\n{call}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAST_", "OMPI_", "PMI"))}
    env.update(PYTHONPATH=os.environ.get("PYTHONPATH", ""))
    got, out = run_bounded([sys.executable, script], timeout=60, env=env, check=False)
    assert got == code, out
    assert line in out.rstrip().splitlines()[-1], out


def test_metrics_name_the_callers_optimizer_only_where_the_step_is_its_own():
    """fast.Metrics(optimizer=, lr=) names a framework's optimizer in the records; for a Worker that
    steps FAST's own optimizer it is refused (the records would name an optimizer that did not run)."""
    def body(ctx):
        worker = fast.Worker(ctx, *buffers(), strategy="allreduce", steps=4)
        with pytest.raises(fast.InvalidArgument, match=r"optimizer/lr given, but the Worker steps FAST's own"):
            fast.Metrics(worker, optimizer="SGD", lr=0.1)
        worker.finish()
    one_worker(body)


TORCHRUN = {"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": "29999"}


def test_init_refuses_what_contradicts_its_launcher(monkeypatch):
    """Under torchrun's variables for 2 processes, fast.init(runtime="threads") would train 2 copies,
    and zmq without keys nor FAST_INSECURE would be unauthenticated: both refused, naming the way out,
    before any socket is opened."""
    require_runtime("zmq")
    for name in ("FAST_RENDEZVOUS", "FAST_WORLD_SIZE", "FAST_KEY_FILE", "FAST_INSECURE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in TORCHRUN.items():
        monkeypatch.setenv(name, value)
    found = fast.launcher()
    assert (found["source"], found["runtime"], found["rank"], found["world"], found["local_world"],
            found["rendezvous"]) == ("torchrun", "zmq", 0, 2, 2, "127.0.0.1:29999")
    with pytest.raises(fast.InvalidArgument, match="2 independent copies"):
        fast.init(runtime="threads")
    with pytest.raises(fast.InvalidArgument, match="--insecure"):
        fast.init()
    assert fast.context() is None
