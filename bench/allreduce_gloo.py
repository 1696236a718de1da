#!/usr/bin/python3
"""Benchmark (e), peer side: bus bandwidth of torch.distributed all_reduce over gloo, across processes.

The same measurement as bench/allreduce_fast.cpp and bench/allreduce_mpi.cpp (bench/allreduce_common.hpp):
the same options, message sizes (--min-bytes, x --factor, up to --max-bytes), iteration policy
(clamp(budget_bytes / bytes, min_iters, max_iters) timed iterations after --warmup untimed ones, the
first of which is checked), formulas and CSV columns:
  impl,ranks,bytes,chunk_bytes,iters,time_us,algbw_GBps,busbw_GBps
  algbw = bytes / time (GB/s, 1e9 bytes); busbw = algbw * 2(n-1)/n; chunk_bytes is 0.

Per rank count of --ranks, N processes (torch.multiprocessing, spawn) join a gloo process group on
127.0.0.1 (as bench/ddp.py does), one torch thread each. Per size: rank r fills a float32 tensor with
r+1 and all-reduces it (SUM); every element must come back as n(n+1)/2; then the tensor is zeroed,
warm-up all-reduces run, a barrier, and the timed loop of in-place all-reduces; a rank's time is
loop time / iterations and the reported time is the maximum over ranks (an all_reduce MAX).
Rank 0 appends the rows to --out (stdout when not given) as it goes.
"""

import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from ddp import free_port  # bench/ddp.py, beside this script

HEADER = "impl,ranks,bytes,chunk_bytes,iters,time_us,algbw_GBps,busbw_GBps"


def parse_size(text):
    """Bytes from '4096', '4K' (KiB) or '64M' (MiB), as allreduce_common.hpp's parse_size."""
    mult = 1
    if text.endswith("K"):
        text, mult = text[:-1], 1 << 10
    elif text.endswith("M"):
        text, mult = text[:-1], 1 << 20
    if not text.isdigit() or int(text) == 0:
        raise argparse.ArgumentTypeError(f"bad size '{text}'")
    return int(text) * mult


def parse_ranks(text):
    try:
        ranks = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad rank list '{text}'") from None
    if any(n < 2 for n in ranks):
        raise argparse.ArgumentTypeError("--ranks: every rank count must be >= 2")
    return ranks


def sizes(args):
    out, b = [], args.min_bytes
    while b <= args.max_bytes:
        out.append(b)
        b *= args.factor
    return out


def iterations(args, nbytes):
    return min(max(args.budget_bytes // max(nbytes, 1), args.min_iters), args.max_iters)


def row(impl, n, nbytes, iters, seconds):
    algbw = nbytes / seconds / 1e9
    return f"{impl},{n},{nbytes},0,{iters},{seconds * 1e6:.3f},{algbw:.4f},{algbw * 2.0 * (n - 1) / n:.4f}"


def worker(rank, n, args, port):
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=n)
    try:
        out = None
        if rank == 0:
            out = open(args.out, "a") if args.out else sys.stdout
        buf = torch.empty(args.max_bytes // 4, dtype=torch.float32)
        wrong = 0
        expect = float(n * (n + 1) // 2)
        for nbytes in sizes(args):
            v = buf[: nbytes // 4]
            v.fill_(float(rank + 1))  # checked first iteration
            dist.all_reduce(v, op=dist.ReduceOp.SUM)
            if not bool(torch.all(v == expect)):
                wrong += 1
            v.zero_()
            for _ in range(1, args.warmup):
                dist.all_reduce(v, op=dist.ReduceOp.SUM)
            iters = iterations(args, nbytes)
            dist.barrier()
            t0 = time.perf_counter()
            for _ in range(iters):
                dist.all_reduce(v, op=dist.ReduceOp.SUM)
            mine = torch.tensor([(time.perf_counter() - t0) / iters], dtype=torch.float64)
            dist.all_reduce(mine, op=dist.ReduceOp.MAX)
            if rank == 0:
                print(row(args.label, n, nbytes, iters, mine.item()), file=out, flush=True)
        failures = torch.tensor([wrong], dtype=torch.int64)
        dist.all_reduce(failures, op=dist.ReduceOp.SUM)
        if out is not None and out is not sys.stdout:
            out.close()
        if failures.item() != 0:
            raise SystemExit(f"allreduce_gloo.py: gloo all_reduce returned wrong sums ({failures.item()}) with {n} ranks")
    finally:
        dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--min-bytes", type=parse_size, default=4 << 10)
    p.add_argument("--max-bytes", type=parse_size, default=64 << 20)
    p.add_argument("--factor", type=parse_size, default=4)
    p.add_argument("--budget-bytes", type=parse_size, default=1 << 30)
    p.add_argument("--min-iters", type=parse_size, default=10)
    p.add_argument("--max-iters", type=parse_size, default=2000)
    p.add_argument("--warmup", type=int, default=3, help="untimed iterations per size (the first is checked)")
    p.add_argument("--ranks", type=parse_ranks, default=[2, 4], help="process counts, e.g. 2,4")
    p.add_argument("--label", default="gloo", help="impl column of the CSV")
    p.add_argument("--out", default="", help="CSV file (default: stdout)")
    args = p.parse_args()
    if args.factor < 2:
        p.error("--factor must be >= 2")
    if args.min_bytes % 4 != 0:
        p.error("--min-bytes must be a multiple of 4")
    if args.min_iters > args.max_iters:
        p.error("--min-iters must be <= --max-iters")
    if not dist.is_available() or not dist.is_gloo_available():
        raise SystemExit("allreduce_gloo.py: this torch has no gloo backend")

    if args.out:
        with open(args.out, "w") as f:
            f.write(HEADER + "\n")
    else:
        print(HEADER, flush=True)
    for n in args.ranks:
        print(f"  gloo: {n} ranks (processes)...", file=sys.stderr, flush=True)
        mp.start_processes(worker, args=(n, args, free_port()), nprocs=n, join=True, start_method="spawn")


if __name__ == "__main__":
    sys.exit(main())
