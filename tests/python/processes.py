"""Starting the commands under test from pytest: bounded in time, killed by process group."""
import os
import signal
import subprocess

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FAST_BIN = os.environ.get("FAST_BIN", os.path.join(ROOT, "build", "bin", "fast"))


def require_runtime(name):
    """Skips the calling test where this build lacks the runtime `name` (FAST_WITH_SIM, FAST_WITH_ZMQ or
    FAST_WITH_MPI off, e.g. -DFAST_MINIMAL=ON); `fast launch` starts zmq processes."""
    import fast
    if name not in fast.runtime_names():
        pytest.skip(f"this build has no {name} runtime")


def run_bounded(cmd, timeout, env=None, check=True):
    """Runs cmd (a list) in its own process group with stdout and stderr together; the test fails if
    it runs past timeout seconds (the whole group is killed first) or, with check, if it exits with
    anything but 0. Returns (exit code, output)."""
    proc = subprocess.Popen([str(c) for c in cmd], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"{' '.join(str(c) for c in cmd[:4])} ... did not end within {timeout} s")
    if check:
        assert proc.returncode == 0, f"{' '.join(str(c) for c in cmd)} exited with {proc.returncode}:\n{out[-3000:]}"
    return proc.returncode, out
