"""Starts N processes of a command as torchrun starts them, without torch: each gets RANK, WORLD_SIZE,
LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1 and MASTER_PORT (a free loopback port), and
FAST_INSECURE=1 (torchrun hands out no keys). Waits for all; exits with the first non-zero exit code.

    python3 torchrun_vars.py -n 2 -- python3 script.py ARGS
"""
import os
import socket
import subprocess
import sys


def main():
    if len(sys.argv) < 5 or sys.argv[1] != "-n" or sys.argv[3] != "--":
        sys.exit(f"usage: {sys.argv[0]} -n N -- COMMAND [ARGS...]")
    n, command = int(sys.argv[2]), sys.argv[4:]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for rank in range(n):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(n), LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(n),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), FAST_INSECURE="1")
        procs.append(subprocess.Popen(command, env=env))
    codes = [p.wait() for p in procs]
    sys.exit(next((c for c in codes if c != 0), 0))


if __name__ == "__main__":
    main()
