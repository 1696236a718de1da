"""Ctrl-C while FAST waits (docs/python.md, "Interrupting a run"): a SIGINT that reaches a process whose
main thread waits in FAST ends the wait with KeyboardInterrupt, long before op_timeout (120 s here, past
each test's bound), and the other processes learn that it failed. Each script runs in its own
process, bounded in time; the signal comes from a timer thread of the process itself, once the main
thread is waiting."""
import os
import socket
import sys

import pytest

from processes import FAST_BIN, require_runtime, run_bounded

# The signal after 1 s, from a thread: the main thread is in FAST's wait by then.
SIGNAL_SOON = """
import os, signal, threading
def interrupt_soon():
    threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
"""

RUN_SCRIPT = SIGNAL_SOON + """
import sys, time
import numpy as np
import fast

def wait(ctx):
    buf = np.zeros(4, np.float32)
    ctx.recv(1 - ctx.rank, 1, buf).wait()  # never sent

def simulate(ctx):  # simulated all-reduces for 30 s of real time
    comm, buf = fast.Communicator(ctx), np.zeros(1000, np.float32)
    end = time.monotonic() + 30
    while time.monotonic() < end:
        comm.allreduce(buf)

runtime = sys.argv[1]
interrupt_soon()
try:
    fast.run(simulate if runtime == "sim" else wait, workers=2, runtime=runtime, op_timeout=120)
    print("fast.run: returned")
except KeyboardInterrupt:
    print("fast.run: KeyboardInterrupt")
"""


@pytest.mark.parametrize("runtime", ["threads", "sim"])
def test_ctrl_c_ends_fast_run_whose_workers_wait(runtime, tmp_path):
    """Under sim, SimGrid's own SIGINT handler ended the process with 1 (or a crash), silently."""
    require_runtime(runtime)
    script = tmp_path / "run.py"
    script.write_text(RUN_SCRIPT)
    _, out = run_bounded([sys.executable, script, runtime], 60)
    assert "fast.run: KeyboardInterrupt" in out, out


INIT_SCRIPT = SIGNAL_SOON + """
import sys
import numpy as np
import fast

ctx = fast.init(op_timeout=120)
buf = np.zeros(4, np.float32)
if ctx.rank == 1:
    interrupt_soon()
assert ctx.open
try:
    ctx.recv(1 - ctx.rank, 1, buf).wait()  # never sent
except KeyboardInterrupt:
    print(f"rank {ctx.rank}: KeyboardInterrupt, open {ctx.open}", flush=True)
    raise
except fast.Error as e:
    print(f"rank {ctx.rank}: {type(e).__name__}: {e}", flush=True)
    sys.exit(7)
"""


def launch_two(script_text, tmp_path):
    """Runs script_text in 2 processes of `fast launch` (zmq, insecure: loopback), bounded: (code, output)."""
    require_runtime("zmq")
    script = tmp_path / "script.py"
    script.write_text(script_text)
    return run_bounded([FAST_BIN, "launch", "-n", "2", "--insecure", "--timeout", "100", "--", sys.executable, script],
                       60, check=False)


def test_ctrl_c_ends_the_wait_of_one_process_and_the_other_hears_why(tmp_path):
    code, out = launch_two(INIT_SCRIPT, tmp_path)
    assert code != 0, out
    assert "rank 1: KeyboardInterrupt, open False" in out, out  # the interrupted world has ended
    # Rank 0's wait for rank 1 ends with rank 1's failure, named.
    zero = [line for line in out.splitlines() if line.startswith("[0] rank 0: ")]
    assert zero and "KeyboardInterrupt" in zero[0], out


RENDEZVOUS_SCRIPT = SIGNAL_SOON + """
import fast
interrupt_soon()
try:
    fast.init()  # the second process never comes
except KeyboardInterrupt:
    print("fast.init: KeyboardInterrupt", flush=True)
"""


def test_ctrl_c_ends_a_rendezvous_that_waits_for_a_process(tmp_path):
    require_runtime("zmq")
    script = tmp_path / "rendezvous.py"
    script.write_text(RENDEZVOUS_SCRIPT)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    launchers = ("FAST_LAUNCHED", "FAST_LOCAL_", "FAST_PROCESS_RANK", "LOCAL_WORLD_SIZE", "OMPI_", "PMI", "SLURM_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(launchers)}
    env.update(FAST_RENDEZVOUS=f"127.0.0.1:{port}", FAST_WORLD_SIZE="2", FAST_PROCESS_RANK="0", FAST_INSECURE="1",
               FAST_RENDEZVOUS_TIMEOUT="120")
    _, out = run_bounded([sys.executable, script], 60, env=env)
    assert "fast.init: KeyboardInterrupt" in out, out


OWN_HANDLER_SCRIPT = """
import os, signal, threading, time
import numpy as np
import fast

seen = []
signal.signal(signal.SIGINT, lambda signum, frame: seen.append(signum))

def fn(ctx):
    buf = np.zeros(4, np.float32)
    if ctx.rank == 0:
        threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
        ctx.recv(1, 1, buf).wait()  # sent 2 s later: the program's handler leaves the wait alone
    else:
        time.sleep(2.0)
        ctx.send(0, 1, buf + 1).wait()
    return float(buf[0])

print("results", fast.run(fn, workers=2, op_timeout=120), "seen", seen)
"""


def test_a_programs_own_sigint_handler_is_left_to_handle_the_signal(tmp_path):
    script = tmp_path / "own.py"
    script.write_text(OWN_HANDLER_SCRIPT)
    _, out = run_bounded([sys.executable, script], 60)
    assert "results [1.0, 0.0] seen [2]" in out, out


FORK_SCRIPT = """
import asyncio, os, signal, threading, time
import numpy as np
import fast

def wait(ctx):
    buf = np.zeros(4, np.float32)
    ctx.recv(1 - ctx.rank, 1, buf).wait()  # never sent

def interrupted(where):
    threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
    try:
        fast.run(wait, workers=2, op_timeout=120)
    except KeyboardInterrupt:
        print(f"{where}: KeyboardInterrupt", flush=True)

interrupted("parent")
pid = os.fork()  # a child of a process whose FAST already armed a wait: it arms its own
if pid == 0:
    interrupted("child")
    os._exit(0)
os.waitpid(pid, 0)

async def nothing():
    pass

asyncio.run(nothing())  # puts Python's own SIGINT handler back, in place of FAST's
interrupted("after asyncio.run")
"""


def test_ctrl_c_reaches_a_forked_child_and_a_wait_after_asyncio_run(tmp_path):
    script = tmp_path / "fork.py"
    script.write_text(FORK_SCRIPT)
    _, out = run_bounded([sys.executable, script], 100)
    for where in ("parent", "child", "after asyncio.run"):
        assert f"{where}: KeyboardInterrupt" in out, out


EXIT_SCRIPT = """
import os, signal, threading, time
import numpy as np
import fast

ctx = fast.init(op_timeout=120)
fast.Communicator(ctx).barrier()
if ctx.rank == 0:  # leaves first: its shutdown at exit waits for rank 1, and gets a Ctrl-C meanwhile
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    timer.daemon = True
    timer.start()
else:
    time.sleep(4)
print(f"rank {ctx.rank}: leaving", flush=True)
"""


def test_ctrl_c_during_the_shutdown_at_exit_ends_the_process_as_interrupted(tmp_path):
    """It printed "Exception ignored in atexit callback" and exited with the program's 0."""
    _, out = launch_two(EXIT_SCRIPT, tmp_path)
    assert "[0] fast: at exit: interrupted by SIGINT (Ctrl-C) while leaving the world" in out, out
    assert "Exception ignored" not in out, out
    assert "process 0 (pid" in out and "130" in out, out
