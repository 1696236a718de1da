"""FAST: Flexible (A)synchronous Scalable Training, from Python (docs/python.md).

The core API works on flat buffers (numpy arrays or CPU torch tensors, shared without copies):

    import fast
    ctx = fast.init()                 # this process's worker (fast launch, mpirun/srun, torchrun, or one)
    worker = fast.Worker(ctx, params, grads, strategy="adpsgd", steps=1000)
    for batch in data:
        ...                           # write the gradient into grads
        worker.step()                 # exchange, aggregate, update params in place
    worker.finish()
    model = worker.representative()

fast.torch wraps a torch.nn.Module (parameters and gradients re-pointed into one flat buffer each).
The tensor mover (Context.send/recv, Window) and the collectives (Communicator) serve those who write
their own strategies. FAST's exceptions are fast.Error and its subclasses InvalidArgument (also a
ValueError), InvalidUsage, IoError (also an OSError), TimeoutError, PeerLost and RemoteError.
"""

import atexit as _atexit
import os as _os
import sys as _sys

from fast import _fast
from fast._fast import (  # noqa: F401  (the public API)
    Communicator,
    Context,
    Error,
    InvalidArgument,
    InvalidUsage,
    IoError,
    Metrics,
    PeerLost,
    RemoteError,
    StepReport,
    TimeoutError,
    Window,
    Work,
    Worker,
    context,
    epoch_permutation,
    launcher,
    release_free_memory,
    runtime_names,
    tune_malloc,
    worker_settings,
    workers_on_host,
)

__version__ = _fast.__version__   # CMakeLists.txt's project(VERSION), as `fast --version` prints it
source_commit = _fast.source_commit  # `git describe --always --dirty` of the build; "" outside a git checkout

__all__ = [
    "Communicator", "Context", "Error", "InvalidArgument", "InvalidUsage", "IoError", "Metrics", "PeerLost",
    "RemoteError", "StepReport", "TimeoutError", "Window", "Work", "Worker", "context", "epoch_permutation", "init",
    "launcher", "release_free_memory", "run", "runtime_names", "shutdown", "source_commit", "tune_malloc",
    "worker_settings", "workers_on_host",
]

_failure = None          # the uncaught exception that ends this process, told to the others at exit
_exit_status = None      # (exit code, kind, message) of an uncaught FAST error, the process's own at exit
_hooks_installed = False


def _exit_as_fast_does():
    """At the interpreter's exit after an uncaught FAST error (registered at import, so it runs after
    the world's shutdown and every handler registered later): the last line on stderr and the exit
    code `fast train` gives that error (docs/errors.md: 2 bad input, 3 a peer lost or an I/O error, 4
    a timeout, 5 another FAST error) instead of Python's 1, so that `fast launch` tells the process
    that failed from the ones that lost it. os._exit: Python's own exit would say 1."""
    if _exit_status is None:
        return
    code, kind, message = _exit_status
    print(f"fast: {kind}: {message}", file=_sys.stderr)
    for stream in (_sys.stdout, _sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    _os._exit(code)


_atexit.register(_exit_as_fast_does)


def init(runtime=None, op_timeout=-1.0, collectives="", windows=""):
    """Joins the world this process was started into; returns this process's worker's Context.

    runtime: None follows the launcher that started this process (docs/launch.md): "zmq" under
    `fast launch` and torchrun, "mpi" under mpirun and srun, else "threads" (a world of this one
    worker); a runtime that contradicts the launcher raises InvalidArgument. op_timeout: seconds
    a blocking operation may wait (> 0; -1: FAST_OP_TIMEOUT, else the default). windows: "rma" (MPI RMA under mpi, its default),
    "service" (the owner's service activity) or "" (FAST_WINDOWS, else the runtime's default).
    collectives: "fast", "native" (mpi) or ""
    (the runtime's default). The world lasts until shutdown(), which runs at the interpreter's exit;
    if the program ends with an uncaught exception, the other processes are told this one failed.
    """
    _install_exit_hooks()  # first: an error of init itself (a rendezvous timeout) exits as documented
    return _fast.init(runtime, op_timeout, collectives, windows)


def run(fn, workers, runtime="threads", cluster="", op_timeout=-1.0):
    _install_exit_hooks()
    return _fast.run(fn, workers, runtime, cluster, op_timeout)


run.__doc__ = _fast.run.__doc__


def shutdown(failure=""):
    """Leaves the world of init() (every process calls it: it ends the run's connections). A failure
    message tells the other processes that this one failed. Nothing happens without a world."""
    _fast.shutdown(failure)


def _install_exit_hooks():
    """From the first init() or run() on (before either starts): an uncaught exception is recorded
    (sys.excepthook, chained to the one before) so that the world's shutdown tells the other
    processes why this one failed, and a FAST error sets the exit code of _exit_as_fast_does, whether
    it came from init() itself (a rendezvous that timed out, a bad argument), from run(), or from an
    operation afterwards. Not at the interactive prompt, where an error does not end the program."""
    global _hooks_installed
    if _hooks_installed:
        return
    _hooks_installed = True
    previous = _sys.excepthook

    def excepthook(kind, value, traceback):
        global _failure, _exit_status
        if hasattr(_sys, "ps1"):  # the interactive prompt: it goes on after an error
            previous(kind, value, traceback)
            return
        _failure = f"{kind.__name__}: {value}" if str(value) else kind.__name__  # KeyboardInterrupt has no text
        status = next((_fast._exit_status[k] for k in kind.__mro__ if k in _fast._exit_status), None)
        if status is not None:
            _exit_status = (*status, str(value))
        previous(kind, value, traceback)

    _sys.excepthook = excepthook

    def at_exit():
        # The world's own error (a peer that failed or was lost) was raised by the operation that
        # met it; at exit it is only shown, on one line, not raised from an atexit callback.
        try:
            _fast.shutdown(_failure or "")
        except Error as e:
            print(f"fast: at exit: {type(e).__name__}: {e}", file=_sys.stderr)
        except KeyboardInterrupt:
            # Ctrl-C while leaving the world: the process ends as one interrupted by SIGINT (130),
            # not with Python's "Exception ignored" and the program's own status.
            print("fast: at exit: interrupted by SIGINT (Ctrl-C) while leaving the world", file=_sys.stderr)
            for stream in (_sys.stdout, _sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass
            _os._exit(130)

    _atexit.register(at_exit)
