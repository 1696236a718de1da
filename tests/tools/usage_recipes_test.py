#!/usr/bin/env python3
"""The single-host commands of docs/usage.md's four recipes, with small step counts.

  1. your own PyTorch model: `fast launch -n 4 -- /usr/bin/python3 examples/python/train_fmnist.py`
     for allreduce and adpsgd (1 epoch of 5 steps), each with --summary and --metrics; then the
     recipe's comparison script, taken from docs/usage.md itself, prints one line per strategy, and
     `fast report out/py/adpsgd.jsonl` merges the run's 4 rank files into out/py/adpsgd.html;
  2. mpirun: `mpirun -np 2 --bind-to none fast train --runtime mpi` with a checkpoint every 10 of
     20 steps and the sbatch script's `--resume-if-present` (an empty folder: started anew), then the
     same command to 30 steps: the summary says it resumed from step 20;
  3. several hosts over tcp, on one host: `fast keygen` twice, one allow-list, and two `fast train
     --runtime zmq --rendezvous 127.0.0.1:PORT --world-size 2 --process-rank R --key --allow` runs
     of adpsgd (20 steps) that meet and both end with exit code 0;
  4. the simulated study, reduced: examples/sim-spectrum-1024.toml on 16 workers of
     clusters/edge-16.toml for 3 steps (`fast compare --out`), then `fast report`.
A part whose pieces are missing (python3-torch, the Python package, mpirun, a runtime not built)
is skipped with a message; exit 77 when every part was skipped, 1 when one failed, 0 otherwise.

Usage: usage_recipes_test.py --fast BUILD/bin/fast. Every process runs in its own process group,
bounded in time, and is killed with its group when its time is up or the test ends.
"""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
PYTHON = "/usr/bin/python3"
STARTED = []  # every Popen, killed (with its group) at exit


def start(args, env=None, cwd=ROOT):
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=cwd,
                         env=env, start_new_session=True)
    STARTED.append(p)
    return p


def finish(p, limit):
    """Waits for p at most `limit` seconds; returns (exit code, output); kills its group when late."""
    try:
        out, _ = p.communicate(timeout=limit)
        return p.returncode, out
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        return -1, out + f"\n(killed after {limit} s)"


def run(args, limit, env=None):
    return finish(start(args, env), limit)


def kill_all():
    for p in STARTED:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()


def runtimes(fast):
    """The runtimes this build of `fast train` offers (from --help)."""
    code, out = run([fast, "train", "--help"], 60)
    m = re.search(r"--runtime.*?one of this build's runtimes:(.*?)(?:Unset|docs/|\n\s+--)", out, re.S)
    return set(re.findall(r"\b(threads|sim|zmq|mpi)\b", m.group(1) if m else out))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def summary(path):
    with open(path) as f:
        return json.load(f)


def comparison_script():
    """The Python script of recipe 1 (between <<'EOF' and EOF in docs/usage.md)."""
    text = open(os.path.join(ROOT, "docs", "usage.md")).read()
    m = re.search(r"<<'EOF'\n(.*?)\nEOF\n", text, re.S)
    return m.group(1) if m else None


def part_python(fast, tmp, have):
    try:
        subprocess.run([PYTHON, "-c", "import torch, numpy"], check=True, capture_output=True, timeout=120)
    except Exception:
        return "skipped: /usr/bin/python3 without torch and numpy"
    package = os.path.normpath(os.path.join(os.path.dirname(fast), "..", "python"))
    if not glob.glob(os.path.join(package, "fast", "*")) or "zmq" not in have:
        return "skipped: no Python package beside the command, or no zmq runtime"
    env = dict(os.environ, PYTHONPATH=package)
    out_dir = os.path.join(tmp, "py")
    os.makedirs(out_dir)
    for s in ("allreduce", "adpsgd"):
        code, out = run([fast, "launch", "-n", "4", "--", PYTHON, "examples/python/train_fmnist.py",
                         "--strategy", s, "--epochs", "1", "--steps-per-epoch", "5",
                         "--summary", os.path.join(out_dir, f"{s}.json"),
                         "--metrics", os.path.join(out_dir, f"{s}.jsonl")], 300, env)
        if code != 0 or "[0] final test accuracy" not in out:
            return f"FAILED: train_fmnist.py --strategy {s}: exit {code}\n{out}"
        print(f"recipe 1, {s}: " + next(l for l in out.splitlines() if "final test accuracy" in l))
    ranks = sorted(os.path.basename(f) for f in glob.glob(os.path.join(out_dir, "adpsgd.rank*.jsonl")))
    if ranks != [f"adpsgd.rank{r}.jsonl" for r in range(4)]:
        return f"FAILED: expected the 4 processes' adpsgd.rankR.jsonl in {out_dir}, got {ranks}"
    code, out = run([fast, "report", os.path.join(out_dir, "adpsgd.jsonl")], 120)
    if code != 0 or not os.path.isfile(os.path.join(out_dir, "adpsgd.html")):
        return f"FAILED: fast report of the run's --metrics path: exit {code}\n{out}"
    # The page holds the 4 processes' records: process 0's file alone (the same name, so the same
    # title) draws another page.
    solo = os.path.join(tmp, "solo")
    os.makedirs(solo)
    shutil.copy(os.path.join(out_dir, "adpsgd.rank0.jsonl"), os.path.join(solo, "adpsgd.jsonl"))
    code, out = run([fast, "report", os.path.join(solo, "adpsgd.jsonl")], 120)
    merged, alone = (open(os.path.join(d, "adpsgd.html")).read() for d in (out_dir, solo))
    if code != 0 or merged == alone:
        return f"FAILED: the report of the 4 rank files is that of process 0's alone\n{out}"
    script = comparison_script()
    if script is None:
        return "FAILED: no <<'EOF' ... EOF script in docs/usage.md's recipe 1"
    code, out = run([PYTHON, "-c", script, *sorted(glob.glob(os.path.join(out_dir, "*.json")))], 60)
    if code != 0 or not re.search(r"^adpsgd +accuracy 0\.\d{4}", out, re.M):
        return f"FAILED: the comparison script: exit {code}\n{out}"
    print("recipe 1, comparison:\n" + out.rstrip())
    return "passed"


def part_mpi(fast, tmp, have):
    if "mpi" not in have or shutil.which("mpirun") is None:
        return "skipped: no mpi runtime in this build, or no mpirun"
    # OpenMPI's files in this run's folder: mpiruns of parallel tests that share /tmp/ompi.<host>.<uid>
    # race to create it when the last one to end has removed it.
    os.makedirs(os.path.join(tmp, "ompi"), exist_ok=True)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_orte_tmpdir_base=os.path.join(tmp, "ompi"))
    ck = os.path.join(tmp, "ck")
    base = ["mpirun", "-np", "2", "--bind-to", "none", fast, "train", "--runtime", "mpi", "--model", "mlp",
            "--progress", "never", "--checkpoint-dir", ck, "--checkpoint-every", "10", "--resume-if-present"]
    first = os.path.join(tmp, "mpi1.json")
    code, out = run(base + ["--steps", "20", "--summary", first], 300, env)
    if code != 0 or "final test accuracy" not in out or summary(first).get("resumed_from_step") is not None:
        return f"FAILED: mpirun, 20 steps started anew: exit {code}\n{out}"
    # the sbatch script's command again: it resumes from the newest complete checkpoint
    if not glob.glob(os.path.join(ck, "step-*", "manifest.json")):
        return f"FAILED: no complete checkpoint in {ck} after the first run"
    second = os.path.join(tmp, "mpi2.json")
    code, out = run(base + ["--steps", "30", "--summary", second], 300, env)
    if code != 0 or summary(second).get("resumed_from_step") != 20:
        return f"FAILED: mpirun, resumed to 30 steps: exit {code}\n{out}"
    print("recipe 2: " + next(l for l in out.splitlines() if "final test accuracy" in l))
    return "passed"


def part_tcp(fast, tmp, have):
    if "zmq" not in have:
        return "skipped: no zmq runtime in this build"
    keys = {}
    for host in ("a", "b"):
        keys[host] = os.path.join(tmp, f"{host}.key")
        code, out = run([fast, "keygen", "--out", keys[host]], 60)
        if code != 0:
            return f"FAILED: fast keygen: exit {code}\n{out}"
    allow = os.path.join(tmp, "allow.txt")
    with open(allow, "w") as f:
        for host in ("a", "b"):
            f.write(open(keys[host] + ".pub").read())
    address = f"127.0.0.1:{free_port()}"
    out_file = os.path.join(tmp, "tcp.json")
    procs = []
    for rank, host in ((0, "a"), (1, "b")):
        args = [fast, "train", "--runtime", "zmq", "--rendezvous", address, "--world-size", "2",
                "--process-rank", str(rank), "--key", keys[host], "--allow", allow, "--strategy", "adpsgd",
                "--model", "mlp", "--steps", "20", "--progress", "never"]
        procs.append(start(args + (["--summary", out_file] if rank == 0 else [])))
    results = [finish(p, 300) for p in procs]
    for rank, (code, out) in enumerate(results):
        if code != 0:
            return f"FAILED: process {rank} over tcp: exit {code}\n{out}"
    if summary(out_file).get("strategy") != "adpsgd":
        return f"FAILED: the tcp run's summary: {summary(out_file)}"
    print("recipe 3: " + next(l for l in results[0][1].splitlines() if "final test accuracy" in l))
    return "passed"


def part_sim(fast, tmp, have):
    if "sim" not in have:
        return "skipped: no sim runtime in this build"
    sweep = open(os.path.join(ROOT, "examples", "sim-spectrum-1024.toml")).read()
    for old, new in (('cluster = "clusters/edge-1024.toml"', 'cluster = "clusters/edge-16.toml"'),
                     ("workers = 1024", "workers = 16"), ("epochs = 10 ", "steps = 3 "),
                     ("eval_every = 7 ", "eval_every = 3 "), ('"torus2d:32x32"', '"torus2d:4x4"')):
        if old not in sweep:
            return f"FAILED: examples/sim-spectrum-1024.toml no longer holds {old!r} (update this test)"
        sweep = sweep.replace(old, new)
    path = os.path.join(tmp, "sim-spectrum-16.toml")
    open(path, "w").write(sweep)
    out_dir = os.path.join(tmp, "sim")
    env = dict(os.environ, FAST_TORCH_THREADS="1")
    code, out = run([fast, "compare", path, "--out", out_dir, "--progress", "never"], 400, env)
    if code != 0 or not os.path.isfile(os.path.join(out_dir, "compare.md")):
        return f"FAILED: fast compare: exit {code}\n{out}"
    finished = [l for l in out.splitlines() if re.match(r"\[\d+/\d+\] [^:]+: final accuracy", l)]
    print("recipe 4:\n" + "\n".join(finished))
    code, out = run([fast, "report", out_dir], 120)
    if code != 0 or not os.path.isfile(os.path.join(out_dir, "report.html")):
        return f"FAILED: fast report: exit {code}\n{out}"
    return "passed"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fast", required=True, help="the fast command of the build")
    ap.add_argument("--only", default="python,mpi,tcp,sim", help="parts to run, comma-separated")
    a = ap.parse_args()
    fast = os.path.abspath(a.fast)
    have = runtimes(fast)
    parts = {"python": part_python, "mpi": part_mpi, "tcp": part_tcp, "sim": part_sim}
    verdicts = {}
    tmp = tempfile.mkdtemp(prefix="fast-usage-")
    try:
        for name in a.only.split(","):
            part_tmp = os.path.join(tmp, name)
            os.makedirs(part_tmp)
            verdicts[name] = parts[name](fast, part_tmp, have)
            print(f"{name}: {verdicts[name]}", flush=True)
    finally:
        kill_all()
        shutil.rmtree(tmp, ignore_errors=True)
    if any(v.startswith("FAILED") for v in verdicts.values()):
        return 1
    return 77 if all(v.startswith("skipped") for v in verdicts.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
