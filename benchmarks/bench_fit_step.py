"""Benchmark: the cost of one full-objective step of the default fit (persistent types).

Generates a reference population (``--users``, 4 weeks) and releases its DP statistics (weeks
0-1, ε = ln 3), or reads a release (``--stats DIR``, e.g. a run's ``stats/``), and times
``--steps`` optimiser steps of ``PersistentTypes`` (statistics, backward, Adam) after
``--warm`` warm-up steps that peak the slot laws as a real fit does. The steps drop the
subset expansion's rows as the default optimiser does (``FullObjective.truncation``; a
release without a noise scale, or ``--exact``, keeps them all). Prints the median wall and CPU
(``process_time``) seconds per step and, with ``--profile``, torch's operator table. CPU
seconds on one thread (``--threads 1``) are the figure least disturbed by other jobs on a
shared machine.

Run: ``.venv/bin/python benchmarks/bench_fit_step.py [--users 1000000 | --stats DIR --weeks 4]
[--threads 1]``.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import torch

from topicslab import dp
from topicslab import population as pop
from topicslab.model import FullObjective, Objective, PersistentTypes, Targets


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", type=int, default=1_000_000)
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--warm", type=int, default=20)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--stats", help="a release directory instead of a generated population")
    ap.add_argument("--weeks", type=int, default=4, help="the model's weeks")
    ap.add_argument("--exact", action="store_true", help="keep every row of the expansion")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.set_flush_denormal(True)  # as the fitter does on CPU
    if args.stats:
        stats = dp.load_statistics(args.stats)
        source = args.stats
    else:
        sets = pop.generate(args.users, 4, seed=0)
        stats = dp.compute_statistics(sets, weeks=[0, 1], epsilon=math.log(3.0), seed=1)
        source = f"{args.users:,} users"
    targets = Targets.from_statistics(stats)
    variant = PersistentTypes(weeks=args.weeks)
    tolerance = 0.0 if args.exact else FullObjective().tolerance(targets)
    obj = Objective(targets, variant.weeks, variant.week_pairs(), dtype=torch.float32,
                    rows=variant.rows())
    params = {k: p.float().clone().requires_grad_(True)
              for k, p in variant.init(targets, 0, 1.0, True).items()}
    opt = torch.optim.Adam(list(params.values()), lr=FullObjective().lr)

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        qs, qw, qa = variant.statistics(params, tolerance)
        objective, _ = obj.fit_sse_of(qs, qw, qa)
        objective.backward()
        opt.step()

    from topicslab._resources import heap_kept

    wall, cpu = [], []
    with heap_kept():  # as the fitter's steps run on a CPU
        for _ in range(args.warm):
            step()
        for _ in range(args.steps):
            w, c = time.perf_counter(), time.process_time()
            step()
            wall.append(time.perf_counter() - w)
            cpu.append(time.process_time() - c)
    print(f"persistent fit step, {source}, T = {variant.types} x {variant.modes} modes, "
          f"r = {variant.weeks}, tolerance {tolerance:.3g}, {args.threads} thread(s): median "
          f"{statistics.median(wall):.3f} s wall, "
          f"{statistics.median(cpu):.3f} s CPU per step ({args.steps} steps after "
          f"{args.warm} warm-up)")
    if args.profile:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
            for _ in range(3):
                step()
        print(prof.key_averages(group_by_input_shape=True).table(
            sort_by="self_cpu_time_total", row_limit=15))


if __name__ == "__main__":
    main()
