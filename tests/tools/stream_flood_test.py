#!/usr/bin/env python3
"""Idle connections that hold every handshake slot of the direct streams do not stop a run.

Anyone who can reach a process's stream port may open connections and send nothing. At most 16
accepted connections are authenticated at once (docs/launch.md, "Encryption of the data between
hosts"); a connection that comes while every slot is taken takes the oldest one's slot. This test
keeps 18 idle connections open on every port of the run's range (reopening each one the process
drops) from before the run starts to its end, and runs `fast launch -n 2` over tcp without shared
memory (the path between hosts, encrypted), 300 steps of mlp. Checked: the run ends with exit 0
and the param_hash of the same run under `threads`; the processes logged the dropped connections
(so the flood reached the stream port while the run's own connections were made), at most 20
lines per process (the rate limit). Before, the run's own connection was refused as a 17th and
the run ended with exit 3 in 2 of 3 tries.
Every process started here runs in its own process group, bounded in time and killed with it.
"""
import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

PORTS = 7  # the rendezvous and each process's sockets and stream listener


def ephemeral_range():
    """The kernel's range of local ports for outgoing connections (first, last)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            first, last = (int(v) for v in f.read().split())
        return first, last
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def free_range(count):
    """A range of `count` loopback ports that nothing listens on now, from a random start, outside
    the ephemeral range: the flood's thousands of connections take their local ports from that
    range, and one of them (or a connection to itself, which TCP allows on a port nothing listens
    on) would otherwise hold a port of the run's range before the run binds it."""
    first, last = ephemeral_range()
    low_end, high_end = (10000, first - count) if first - count > 10000 + count else (last + 1, 65535 - count)
    if high_end <= low_end:
        sys.exit("stream_flood_test: no room for %d ports outside the ephemeral range %d-%d" % (count, first, last))
    for _ in range(200):
        low = random.randrange(low_end, high_end)
        held = []
        try:
            for port in range(low, low + count):
                s = socket.socket()
                s.bind(("127.0.0.1", port))
                held.append(s)
            return low
        except OSError:
            continue
        finally:
            for s in held:
                s.close()
    sys.exit("stream_flood_test: no free range of %d ports" % count)


def flood(low, high, stop, per_port, opened):
    """Keeps `per_port` idle connections open to each port of [low, high] until `stop` is set."""
    held = {port: [] for port in range(low, high + 1)}
    while not stop.is_set():
        for port, conns in held.items():
            alive = []
            for s in conns:
                try:
                    if s.recv(1) == b"":  # dropped by the process
                        s.close()
                        continue
                except BlockingIOError:
                    pass
                except OSError:
                    s.close()
                    continue
                alive.append(s)
            conns[:] = alive
            while len(conns) < per_port:
                s = socket.socket()
                try:
                    s.connect(("127.0.0.1", port))
                except OSError:
                    s.close()
                    break  # nothing listens there (yet)
                s.setblocking(False)
                conns.append(s)
                opened[0] += 1
        time.sleep(0.001)
    for conns in held.values():
        for s in conns:
            s.close()


def run(command, env, cwd, seconds):
    """Runs `command` in its own process group; returns (exit code or None on timeout, output)."""
    log = open(os.path.join(cwd, "out.log"), "w+")
    p = subprocess.Popen(command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        code = p.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        code = None
    log.seek(0)
    return code, log.read()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fast", required=True)
    args = parser.parse_args()
    train = ["train", "--model", "mlp", "--steps", "300", "--batch", "32", "--progress", "never",
             "--summary", "s.json"]
    with tempfile.TemporaryDirectory(prefix="fast_stream_flood_") as work:
        code, out = run([args.fast] + train + ["--runtime", "threads", "--workers", "2"], dict(os.environ), work, 300)
        if code != 0:
            sys.exit("the threads run failed (%s):\n%s" % (code, out))
        expected = json.load(open(os.path.join(work, "s.json")))["param_hash"]
        os.remove(os.path.join(work, "s.json"))
        low = free_range(PORTS)
        stop, opened = threading.Event(), [0]
        flooder = threading.Thread(target=flood, args=(low, low + PORTS - 1, stop, 18, opened))
        flooder.start()
        env = dict(os.environ, FAST_TRANSPORT="tcp", FAST_SHM_BYTES="0")
        try:
            code, out = run([args.fast, "launch", "-n", "2", "--ports", "%d-%d" % (low, low + PORTS - 1), "--",
                             args.fast] + train + ["--runtime", "zmq"], env, work, 300)
        finally:
            stop.set()
            flooder.join()
        failures = []
        if code != 0:
            failures.append("exit code %s, expected 0" % code)
        else:
            got = json.load(open(os.path.join(work, "s.json")))["param_hash"]
            if got != expected:
                failures.append("param_hash %s, expected %s (threads)" % (got, expected))
        for process in ("[0]", "[1]"):
            lines = [l for l in out.splitlines() if l.startswith(process) and "a stream connection" in l]
            if len(lines) > 20:
                failures.append("process %s logged %d lines of stream connections, at most 20 expected"
                                % (process, len(lines)))
        if "dropped a stream connection" not in out:
            failures.append("no connection of the flood was dropped: it did not reach the stream ports")
        print("stream_flood_test: %d idle connections opened to ports %d-%d" % (opened[0], low, low + PORTS - 1))
        if failures:
            print(out)
            sys.exit("stream_flood_test: " + "; ".join(failures))
    print("stream_flood_test: passed")


if __name__ == "__main__":
    main()
