"""Benchmark: the type-mixture fit (issues 4, 14): default optimiser vs the paper's.

Fits the model (``--model persistent``: 100 types × 5 modes, the default; ``--model paper``:
T = 500) with r = 4 weeks to the DP statistics (default ε = ln 3, δ = 1e-15) of a 1M-user
reference population for ``--steps`` full-objective steps (``--stop-at-bar`` stops at the
quality bar instead) and prints the wall time, peak RSS, the two quality figures (terms
within 0.1 pp; terms ≥ 0.1% within 20%), their per-family breakdown and the loss curve. Then
runs the paper's optimiser on the paper's types (Adam, lr 1.0, 8192-term batches, N(0, 0.001²) init)
on the same statistics until it reaches the default fitter's final loss or its time cap, and
prints where it got.

Run: ``.venv/bin/python benchmarks/bench_model.py [--stats DIR] [--minutes 10]
[--paper-minutes 20]``. Without ``--stats`` the population (seed 1) and its DP statistics
(weeks 0 and 1, noise seed 1) are generated once under ``--work``.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path
from typing import Any

from topicslab import dp
from topicslab.model import (
    VARIANT_NAMES,
    FullObjective,
    PaperAdam,
    PaperTypes,
    QualityBar,
    fit,
    make_variant,
)


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2


def peak_gpu() -> str:
    """The fit's peak GPU memory, when it ran on CUDA."""
    import torch

    if not torch.cuda.is_available() or not torch.cuda.max_memory_allocated():
        return ""
    return f"; peak GPU memory {torch.cuda.max_memory_allocated() / 1024**3:.2f} GB"


def statistics(args: argparse.Namespace) -> Path:
    if args.stats is not None:
        return Path(args.stats)
    work = Path(args.work)
    stats_dir = work / "stats1m"
    if (stats_dir / "q_within.json").exists():
        return stats_dir
    from topicslab import io as tio
    from topicslab import population as pop

    work.mkdir(parents=True, exist_ok=True)
    pop_path = work / "pop1m.parquet"
    if not pop_path.exists():
        print("generating the 1M-user reference population (seed 1) ...", file=sys.stderr)
        with tio.SetsWriter(pop_path, "v2", 5, 4) as w:
            for chunk in pop.generate_chunks(1_000_000, 4, seed=1):
                w.write(chunk)
    print("computing DP statistics (weeks 0,1; ln 3, 1e-15) ...", file=sys.stderr)
    sets = tio.read_sets(pop_path)
    dp.save_statistics(stats_dir, dp.compute_statistics(sets, weeks=[0, 1], seed=1))
    return stats_dir


def curve(history: list[dict[str, Any]], every: float) -> None:
    print(f"  {'step':>6} {'seconds':>8} {'J':>11} {'abs<=0.1pp':>11} {'rel<=20%':>9}")
    last = -1e9
    for h in history:
        if "share_abs_within_0_1pp" not in h:
            continue
        if h["seconds"] - last < every and h is not history[-1]:
            continue
        last = h["seconds"]
        print(f"  {h['step']:>6} {h['seconds']:>8.1f} {h['loss']:>11.4e} "
              f"{h['share_abs_within_0_1pp']:>11.4%} {h['share_rel_within_20pct']:>9.2%}")


def first_time_at_bar(history: list[dict[str, Any]], bar: QualityBar) -> float | None:
    for h in history:
        if "share_abs_within_0_1pp" in h and bar.met(h["share_abs_within_0_1pp"],
                                                      h["share_rel_within_20pct"]):
            return float(h["seconds"])
    return None


def default_fit(args: argparse.Namespace, stats: dp.DPStatistics, bar: QualityBar) -> float:
    """Run the default fitter to the bar (or the time cap); print; return its final J."""
    from topicslab.validate import fit_quality

    t0 = time.perf_counter()
    variant = make_variant(args.model, args.types, args.weeks)
    res = fit(stats, variant, FullObjective(steps=args.steps), device=args.device,
              seed=args.seed, max_minutes=args.minutes,
              target="bar" if args.stop_at_bar else None, progress=not args.no_progress)
    wall = time.perf_counter() - t0
    q = fit_quality(stats, res.model)
    if args.save:
        from topicslab.model import save_model

        save_model(args.save, res.model)
    print(f"\n== default optimiser, {args.model} types: stopped by {res.stopped} after "
          f"{res.steps} steps")
    print(f"wall time {wall:.1f} s (fit {res.seconds:.1f} s); time to bar: "
          f"{first_time_at_bar(res.history, bar) or 'not reached'}; "
          f"peak RSS {peak_rss_gb():.2f} GB{peak_gpu()}")
    print(f"J float32 {res.loss:.5e}, float64 {res.loss_float64:.5e}")
    print(f"terms within 0.1 pp: {q.share_abs_within_0_1pp:.4%}   "
          f"terms >= 0.1% within 20%: {q.share_rel_within_20pct:.2%}")
    for name, f in q.by_family().items():
        print(f"  {name:7s} terms {f['terms']:>8,}  abs {f['share_abs_within']:.4%}  "
              f"large {f['rel_terms']:>6,}  rel {f['share_rel_within']:.2%}  "
              f"mean error {f['mean_error']:+.2e}")
    print("loss curve:")
    curve(res.history, every=max(res.seconds / 25, 1.0))
    return res.loss


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stats", help="DP statistics directory (default: generate under --work)")
    ap.add_argument("--work", default="/tmp/topicslab-bench")
    ap.add_argument("--model", default="persistent", choices=VARIANT_NAMES)
    ap.add_argument("--types", type=int, default=None, help="T (default: the model's own)")
    ap.add_argument("--weeks", type=int, default=4)
    ap.add_argument("--steps", type=int, default=FullObjective().steps)
    ap.add_argument("--stop-at-bar", action="store_true",
                    help="stop the default fit as soon as the quality bar is met")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--minutes", type=float, default=10.0, help="cap of the default fit")
    ap.add_argument("--paper-minutes", type=float, default=20.0)
    ap.add_argument("--skip-paper", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--save", help="write the default fitter's model to this directory")
    ap.add_argument("--paper-only", action="store_true", help="skip the default fit")
    ap.add_argument("--goal", type=float, help="paper goal J (default: the default's final)")
    ap.add_argument("--batch-loss", default="mean", choices=["mean", "sum"])
    args = ap.parse_args()

    from topicslab.validate import fit_quality

    stats = dp.load_statistics(statistics(args))
    bar = QualityBar()
    print(f"statistics: {args.stats or args.work} (k={stats.k}, taxonomy "
          f"{stats.taxonomy.version}); model {args.model}, T={args.types or 'default'}, "
          f"r={args.weeks}; bar: {bar.to_dict()}")

    goal = args.goal
    if not args.paper_only:
        goal = default_fit(args, stats, bar) if goal is None else goal
    if args.skip_paper:
        return
    if goal is None:
        raise SystemExit("--paper-only needs --goal")
    t0 = time.perf_counter()
    paper = fit(stats, PaperTypes(types=args.types or 500, weeks=args.weeks),
                PaperAdam(epochs=10**6, batch_loss=args.batch_loss), device=args.device,
                seed=args.seed, target=goal, max_minutes=args.paper_minutes,
                progress=not args.no_progress)
    wall = time.perf_counter() - t0
    qp = fit_quality(stats, paper.model)
    epochs = paper.steps * 8192 / qp.n_terms
    print(f"\n== paper optimiser ({args.batch_loss} batch loss): goal J <= {goal:.4e}; "
          f"stopped by "
          f"{paper.stopped} after {paper.steps} steps ({epochs:.1f} epochs) in {wall:.1f} s; "
          f"peak RSS {peak_rss_gb():.2f} GB")
    print(f"J {paper.loss:.5e}; within 0.1 pp {qp.share_abs_within_0_1pp:.4%}; "
          f">= 0.1% within 20% {qp.share_rel_within_20pct:.2%}; time to the default's bar: "
          f"{first_time_at_bar(paper.history, bar) or 'not reached'}")
    print("loss curve:")
    curve(paper.history, every=max(paper.seconds / 25, 1.0))


if __name__ == "__main__":
    main()
