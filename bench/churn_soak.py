#!/usr/bin/env python3
"""Churn soak of an elastic asynchronous run (docs/faults.md, "Elastic asynchronous runs").

`fast launch -n 4 -- fast train --runtime zmq --strategy adpsgd` trains for longer than the soak; every
--period seconds one worker process (ranks 1, 2, 3 in turn: rank 0 serves the rejoins) is killed with
SIGKILL and started again --restart-after seconds later with the environment it had (its rank, the
rendezvous, the key files), as an operator or a supervisor would. After --minutes the run is stopped
with SIGTERM (an interrupted run: summary, exit 143).

Checks, printed as a table and in --out (JSON):
  - no hang: every process started again logs "rejoined the run" within --rejoin-limit seconds, and
    the run ends after SIGTERM within 60 s with a summary naming 4 live workers;
  - no memory growth: the resident memory (VmRSS) of worker 0's process, which lives through every
    kill and answers every rejoin, between the first and the last kill: at most 10% more.

With --elastic, the same soak for a synchronous run (docs/faults.md, "Elastic synchronous training"):
`fast launch -n 4 --restart N -- fast train --runtime zmq --strategy S --elastic --epochs E` (S:
--strategy, allreduce or `ps --mode sync --servers 2`); every --period seconds for --minutes one worker
process (--kill-ranks in turn, by default 0, 1, 2: process 0 serves the rendezvous and, with ps, hosts
a server) is killed with SIGKILL and fast launch starts it again at once; it joins the survivors at a
step boundary. The run then ends by itself. Checks: every restarted process logs "joined the run at
step" within --rejoin-limit seconds, the run ends with exit code 0 and 4 live workers whose parameters
are equal (param_hash_per_worker), the VmRSS of the lowest rank never killed (the watched process) grows
by at most 10% from the first kill to the last, and the final accuracy is within 1 point of the same
run without churn (under `threads`, whose synchronous runs end as zmq's do).

Usage: bench/churn_soak.py --fast BUILD/bin/fast [--elastic [--epochs E] [--strategy allreduce|ps]
                           [--kill-ranks 0,1,2]] [--minutes 10] [--period 30] [--out FILE]
Needs FAST_DATA_DIR (Fashion-MNIST). Standard library only. Every process it starts is in one process
group, killed at the end whatever happens.
"""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time


def rss_kib(pid):
    """VmRSS of a process in KiB, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def environment_of(pid):
    with open(f"/proc/{pid}/environ", "rb") as f:
        entries = [e for e in f.read().split(b"\0") if e]
    return dict(e.decode().split("=", 1) for e in entries)


def pids_by_rank(log_text):
    """{rank: pid} from the "[r] ... pid P listens on" lines of fast launch's output."""
    return {int(m.group(1)): int(m.group(2))
            for m in re.finditer(r"\[(\d+)\][^\n]*pid (\d+) listens on", log_text)}


def read(path):
    with open(path, errors="replace") as f:
        return f.read()


def kill_group(group):
    try:
        os.killpg(group, signal.SIGKILL)
    except ProcessLookupError:
        pass


def elastic_soak(a, fast):
    """The synchronous soak (--elastic): fast launch --restart restarts every killed process, which
    joins at a step boundary; the run ends by itself. Returns the result dict."""
    work = tempfile.mkdtemp(prefix="fast-churn-soak-")
    strategy = ["--strategy", "allreduce"] if a.strategy == "allreduce" else \
        ["--strategy", "ps", "--mode", "sync", "--servers", "2"]
    victims = [int(r) for r in a.kill_ranks.split(",")]
    if not victims or any(r < 0 or r > 3 for r in victims) or len(set(victims)) == 4:
        sys.exit(f"churn_soak: --kill-ranks {a.kill_ranks}: expected ranks among 0-3, at least one of them not killed")
    watched = min(set(range(4)) - set(victims))
    common = strategy + ["--model", "mlp", "--batch", "64", "--epochs", str(a.epochs),
              "--seed", "3", "--eval-every", "0", "--progress", "never"]
    kills = int(a.minutes * 60 / a.period)
    train = [fast, "train", "--runtime", "zmq", "--elastic", "--slowdown", "12,12,12,12", "--peer-timeout", "2",
             "--summary", "s.json", "--metrics", "m.jsonl"] + common
    launch_log = os.path.join(work, "launch.log")
    launch = subprocess.Popen([fast, "launch", "-n", "4", "--restart", str(kills), "--grace", "600", "--"] + train,
                              cwd=work, stdout=open(launch_log, "w"), stderr=subprocess.STDOUT, start_new_session=True)
    result = {"mode": f"elastic {' '.join(strategy[1:])}", "killed_ranks": victims, "watched_rank": watched,
              "kills": [], "ok": False}
    try:
        deadline = time.time() + 120
        while len(pids_by_rank(read(launch_log))) < 4 and time.time() < deadline:
            time.sleep(0.2)
        if len(pids_by_rank(read(launch_log))) < 4:
            sys.exit(f"churn_soak: the 4 processes did not start within 120 s; output:\n{read(launch_log)}")
        time.sleep(a.period)
        t_end = time.time() + a.minutes * 60 - a.period
        k = 0
        while time.time() < t_end and launch.poll() is None:
            rank = victims[k % len(victims)]
            pids = pids_by_rank(read(launch_log))  # the newest pid of each rank: restarts print theirs
            rss0 = rss_kib(pids[watched])
            joined_before = read(launch_log).count(f"[{rank}] [fast warn] elastic: worker {rank} joined the run")
            os.kill(pids[rank], signal.SIGKILL)
            t_kill = time.time()
            joined = False
            while time.time() - t_kill < a.rejoin_limit and launch.poll() is None:
                if read(launch_log).count(f"[{rank}] [fast warn] elastic: worker {rank} joined the run") > joined_before:
                    joined = True
                    break
                time.sleep(0.1)
            seconds = time.time() - t_kill
            k += 1
            result["kills"].append({"kill": k, "rank": rank, "joined": joined,
                                    "kill_to_join_seconds": round(seconds, 2), "rss_kib_watched_before_kill": rss0})
            print(f"kill {k:2d}: rank {rank}, joined {joined} after {seconds:5.1f} s, worker {watched} VmRSS {rss0} KiB",
                  flush=True)
            if not joined:
                break
            time.sleep(max(0.0, a.period - (time.time() - t_kill)))
        code = launch.wait(timeout=3600)
        summary = json.load(open(os.path.join(work, "s.json"))) if os.path.exists(os.path.join(work, "s.json")) else {}
        reference_summary = os.path.join(work, "threads.json")
        subprocess.run([fast, "train", "--runtime", "threads", "--workers", "4", "--summary", reference_summary] +
                       common, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, check=True)
        reference = json.load(open(reference_summary))
        rss = [x["rss_kib_watched_before_kill"] for x in result["kills"] if x["rss_kib_watched_before_kill"]]
        growth = rss[-1] / rss[0] - 1 if len(rss) >= 2 else None
        hashes = summary.get("param_hash_per_worker", [])
        result.update({"exit_code": code, "live_workers": summary.get("live_workers"),
                       "equal_parameters": len(hashes) == 4 and len(set(hashes)) == 1,
                       "final_accuracy": summary.get("final_accuracy"),
                       "final_accuracy_without_churn": reference.get("final_accuracy"),
                       "rss_growth_watched_first_to_last_kill": growth,
                       "all_joined": all(x["joined"] for x in result["kills"]) and len(result["kills"]) > 0})
        accuracy_ok = (summary.get("final_accuracy") is not None and
                       abs(summary["final_accuracy"] - reference["final_accuracy"]) <= 0.01)
        result["ok"] = (result["all_joined"] and code == 0 and summary.get("live_workers") == 4 and
                        result["equal_parameters"] and growth is not None and growth <= 0.10 and accuracy_ok)
        print(f"\nelastic churn soak: {len(result['kills'])} kills (every {a.period:g} s), all joined: "
              f"{result['all_joined']}; launch exit code {code}; live workers {summary.get('live_workers')}; "
              f"equal parameters: {result['equal_parameters']}; final accuracy {summary.get('final_accuracy')} "
              f"against {reference.get('final_accuracy')} without churn; worker {watched} VmRSS "
              f"{'n/a' if growth is None else f'{100 * growth:+.1f}%'} from the first kill to the last (limit +10%)")
        print("PASS" if result["ok"] else "FAIL")
    finally:
        kill_group(launch.pid)
        for path in glob.glob(os.path.join(tempfile.gettempdir(), "fast-*.sock")):
            try:
                pid = int(os.path.basename(path).split("-")[1])
                os.kill(pid, 0)
            except (ValueError, ProcessLookupError):
                os.remove(path)
            except PermissionError:
                pass
        if result["ok"]:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"logs kept in {work}")
    return result


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fast", required=True, help="the fast executable")
    p.add_argument("--minutes", type=float, default=10, help="length of the soak (default 10)")
    p.add_argument("--period", type=float, default=30, help="seconds between kills (default 30)")
    p.add_argument("--restart-after", type=float, default=5, help="seconds from a kill to the restart (default 5)")
    p.add_argument("--rejoin-limit", type=float, default=60, help="seconds a restarted process may take to rejoin")
    p.add_argument("--elastic", action="store_true",
                   help="the synchronous soak: --strategy with --elastic, restarted by fast launch --restart")
    p.add_argument("--strategy", choices=["allreduce", "ps"], default="allreduce",
                   help="--elastic: allreduce (default) or ps (`ps --mode sync --servers 2`)")
    p.add_argument("--kill-ranks", default="0,1,2",
                   help="--elastic: the ranks killed in turn (default 0,1,2); the lowest other rank is watched")
    p.add_argument("--epochs", type=int, default=150,
                   help="--elastic: epochs of the run, enough to outlast the soak (default 150)")
    p.add_argument("--out", help="write the results as JSON here")
    a = p.parse_args()
    fast = os.path.abspath(a.fast)
    if a.elastic:
        result = elastic_soak(a, fast)
        if a.out:
            with open(a.out, "w") as f:
                json.dump(result, f, indent=1)
        return 0 if result["ok"] else 1
    work = tempfile.mkdtemp(prefix="fast-churn-soak-")
    train = [fast, "train", "--runtime", "zmq", "--strategy", "adpsgd", "--model", "mlp", "--batch", "64",
             "--steps", "100000000", "--slowdown", "12,12,12,12", "--peer-timeout", "2", "--progress", "never",
             "--eval-every", "1000000", "--summary", "s.json"]
    launch_log = os.path.join(work, "launch.log")
    launch = subprocess.Popen([fast, "launch", "-n", "4", "--grace", "100000", "--"] + train, cwd=work,
                              stdout=open(launch_log, "w"), stderr=subprocess.STDOUT, start_new_session=True)
    started = []  # every process this script started itself (restarts)
    killed = []  # every process it killed: their zmq socket files stay behind
    result = {"kills": [], "ok": False}
    try:
        deadline = time.time() + 120
        while len(pids_by_rank(read(launch_log))) < 4 and time.time() < deadline:
            time.sleep(0.2)
        pids = pids_by_rank(read(launch_log))
        if len(pids) < 4:
            sys.exit(f"churn_soak: the 4 processes did not start within 120 s; output:\n{read(launch_log)}")
        time.sleep(a.period)  # let training settle before the first kill
        never_killed = {0, 1, 2, 3}
        kills = int(a.minutes * 60 / a.period)
        for k in range(kills):
            rank = 1 + k % 3
            never_killed.discard(rank)
            watched = {r: rss_kib(pids[r]) for r in sorted(never_killed | {0})}
            env = environment_of(pids[rank])
            os.kill(pids[rank], signal.SIGKILL)
            killed.append(pids[rank])
            t_kill = time.time()
            time.sleep(a.restart_after)
            log = os.path.join(work, f"restart{k}.log")
            proc = subprocess.Popen(train, cwd=work, env=env, stdout=open(log, "w"), stderr=subprocess.STDOUT,
                                    start_new_session=True)
            started.append(proc)
            while "rejoined the run at step" not in read(log) and time.time() - t_kill < a.rejoin_limit:
                if proc.poll() is not None:
                    break
                time.sleep(0.1)
            rejoined = "rejoined the run at step" in read(log)
            seconds = time.time() - t_kill
            pids[rank] = proc.pid
            result["kills"].append({"kill": k + 1, "rank": rank, "rejoined": rejoined,
                                    "kill_to_rejoin_seconds": round(seconds, 2), "rss_kib_before_kill": watched})
            print(f"kill {k + 1:2d}/{kills}: rank {rank}, rejoined {rejoined} after {seconds:5.1f} s, "
                  f"RSS before the kill (KiB): {watched}", flush=True)
            if not rejoined:
                print(f"churn_soak: rank {rank} did not rejoin; its output:\n{read(log)}", flush=True)
                break
            time.sleep(max(0.0, a.period - (time.time() - t_kill)))
        os.killpg(launch.pid, signal.SIGTERM)
        for proc in started:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        try:
            launch.wait(timeout=60)
            for proc in started:
                proc.wait(timeout=10)
            ended = True
        except subprocess.TimeoutExpired:
            ended = False
        summary = json.load(open(os.path.join(work, "s.json"))) if os.path.exists(os.path.join(work, "s.json")) else {}
        first, last = result["kills"][0]["rss_kib_before_kill"], result["kills"][-1]["rss_kib_before_kill"]
        growth = {r: (last[r] / first[r] - 1) if first.get(r) and last.get(r) else None for r in last}
        result.update({"ended_after_sigterm": ended, "live_workers": summary.get("live_workers"),
                       "rejoined_workers": len(summary.get("rejoined_workers", [])),
                       "rss_growth_first_to_last_kill": growth,
                       "all_rejoined": all(k["rejoined"] for k in result["kills"]) and len(result["kills"]) == kills})
        result["ok"] = (result["all_rejoined"] and ended and summary.get("live_workers") == 4 and
                        all(g is not None and g <= 0.10 for g in growth.values()))
        print(f"\nchurn soak: {len(result['kills'])} kills in {a.minutes:g} min (every {a.period:g} s, restart "
              f"after {a.restart_after:g} s); all rejoined: {result['all_rejoined']}; ended after SIGTERM: {ended}; "
              f"live workers at the end: {summary.get('live_workers')}")
        for r, g in sorted(growth.items()):
            print(f"  rank {r} (never killed): VmRSS {first[r]} KiB at the first kill, {last[r]} KiB at the last: "
                  f"{'n/a' if g is None else f'{100 * g:+.1f}%'} (limit +10%)")
        print("PASS" if result["ok"] else "FAIL")
    finally:
        for group in [launch.pid] + [proc.pid for proc in started]:
            try:
                os.killpg(group, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if a.out:
            with open(a.out, "w") as f:
                json.dump(result, f, indent=1)
        for pid in killed:
            for path in glob.glob(os.path.join(tempfile.gettempdir(), f"fast-{pid}-*.sock")):
                os.remove(path)
        # The run's logs: kept for a look when the soak failed, removed otherwise.
        if result["ok"]:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"logs kept in {work}")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
