"""fast.workers_on_host() (docs/python.md, "Threads"): the workers that share this host's cores, by which a
program sizes torch's threads. Two processes started by hand (FAST_RENDEZVOUS, FAST_WORLD_SIZE and
FAST_PROCESS_RANK set by the test, no launcher saying how many share the host) count 1 before fast.init()
and 2 once they met; under `fast launch -n 2` the launcher's count, 2, holds from the start."""
import os
import socket
import subprocess
import sys

from processes import FAST_BIN, require_runtime, run_bounded

SCRIPT = r'''
import fast
before = fast.workers_on_host()
ctx = fast.init()
print(f"rank {ctx.rank}: before {before}, after {fast.workers_on_host()}", flush=True)
fast.shutdown()
'''


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_processes_started_by_hand_count_each_other_once_they_met(tmp_path):
    require_runtime("zmq")
    script = tmp_path / "count.py"
    script.write_text(SCRIPT)
    port = free_port()
    launchers = ("FAST_LAUNCHED", "FAST_LOCAL_", "FAST_PROCESS_RANK", "LOCAL_WORLD_SIZE", "OMPI_", "PMI", "SLURM_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(launchers)}  # by hand: no launcher's count
    procs = []
    for rank in range(2):
        penv = dict(env, FAST_RENDEZVOUS=f"127.0.0.1:{port}", FAST_WORLD_SIZE="2", FAST_PROCESS_RANK=str(rank),
                    FAST_INSECURE="1")
        procs.append(subprocess.Popen([sys.executable, str(script)], env=penv, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True, start_new_session=True))
    outputs = []
    try:
        for p in procs:
            outputs.append(p.communicate(timeout=120)[0])
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, 9)
                p.communicate()
    for rank, (p, out) in enumerate(zip(procs, outputs)):
        assert p.returncode == 0, out
        assert f"rank {rank}: before 1, after 2" in out, out


def test_under_fast_launch_the_launchers_count_holds_from_the_start(tmp_path):
    require_runtime("zmq")
    script = tmp_path / "count.py"
    script.write_text(SCRIPT)
    _, out = run_bounded([FAST_BIN, "launch", "-n", "2", "--timeout", "100", "--", sys.executable, str(script)], 120)
    for rank in range(2):
        assert f"rank {rank}: before 2, after 2" in out, out
