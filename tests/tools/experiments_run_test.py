#!/usr/bin/env python3
"""experiments/run.py's own errors, without training (docs/experiments.md): an `--only` name the
table does not have is refused with exit code 2, naming it, the nearest row and every row, before
any run; a run that fails (here a `--fast` that exits with 1 at once) makes a `failed` row and the
script's exit code 1, after the table is written.

Usage: experiments_run_test.py --root SOURCE_DIR. Each command is bounded in time.
"""
import argparse
import os
import subprocess
import sys
import tempfile


def run(root, args, cwd):
    return subprocess.run([sys.executable, os.path.join(root, "experiments", "run.py"), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    root = os.path.abspath(ap.parse_args().root)
    errors = []
    with tempfile.TemporaryDirectory(prefix="fast-experiments-run-") as tmp:
        r = run(root, ["stragglers", "--out", "out", "--fast", "/bin/false", "--only", "allreduce,ps-async"], tmp)
        if r.returncode != 2:
            errors.append(f"--only with an unknown row: exit {r.returncode}, expected 2\n{r.stdout}{r.stderr}")
        for needle in ("table 'stragglers' has no run 'ps-async' (did you mean 'ps async'?)", "'adpsgd, complete graph'"):
            if needle not in r.stderr:
                errors.append(f"--only with an unknown row: no '{needle}' in\n{r.stderr}")
        if os.path.exists(os.path.join(tmp, "out")):
            errors.append("--only with an unknown row made the output folder: the refusal came after a run")
        r = run(root, ["stragglers", "--out", "out", "--fast", "/bin/false", "--only", "allreduce,dpsgd"], tmp)
        if r.returncode != 1:
            errors.append(f"failing runs: exit {r.returncode}, expected 1\n{r.stdout}{r.stderr}")
        if "2 run(s) failed" not in r.stderr:
            errors.append(f"failing runs: no count of the failures in\n{r.stderr}")
        table = os.path.join(tmp, "out", "stragglers", "table.md")
        rows = open(table).read().splitlines()[2:] if os.path.exists(table) else []
        if rows != ["| allreduce | failed | | | | | | |", "| dpsgd | failed | | | | | | |"]:
            errors.append(f"failing runs: the table's rows are {rows}")
    for e in errors:
        print("FAILED:", e)
    print("PASS" if not errors else f"{len(errors)} check(s) failed")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
