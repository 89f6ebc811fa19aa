"""Sensitive-interest disclosure on Topics API answers: print the measured figures.

Runs the paper's worked example, then the default ``topics_experiment`` (4 intensities ρ,
8 epochs, 200 test and 200 training personas per group, 10 probe sites, white box with 500
Monte Carlo personas per group) and prints detection / false-positive rates with 95% Wilson
intervals, time to detection, the §6.5 run-length statistics, the per-topic table and the
white-box first epoch with ln M > ε. Usage::

    python examples/disclosure_topics.py [--seed S] [--personas N] [--html out.html]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from topicslab.disclosure import report_section, topics_experiment, worked_example
from topicslab.disclosure.report import rate_rows, topic_rows


def _print(header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    for r in rows:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)))
    print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--personas", type=int, default=200)
    ap.add_argument("--html", type=Path, default=None, help="write the report section")
    args = ap.parse_args()

    w = worked_example().estimate
    print(f"worked example: M̂(prostate) = {w.m_hat['prostate']:.4f}, "
          f"M̂(other) = {w.m_hat['other']:.4f}; calibrated {w.calibrated['prostate']:.4f} / "
          f"{w.calibrated['other']:.4f}\n")

    start = time.perf_counter()
    res = topics_experiment(seed=args.seed, personas=args.personas, progress=True)
    print(f"topics_experiment: {time.perf_counter() - start:.1f} s\n")
    _print(*rate_rows(res))
    _print(*topic_rows(res))
    for r in res.per_rho:
        ev = r.evaluation
        px = ", ".join(f"P(X={k})={v:.2f}" for k, v in ev.runs.p_x.items())
        py = ", ".join(f"P(Y={k})={v:.2f}" for k, v in ev.runs.p_y.items())
        rec = ", ".join(f"k={x['exclude_first']}: TP {x['true_positive']:.2f} / "
                        f"FP {x['false_positive']:.3f}" for x in ev.recall)
        print(f"ρ = {r.rho:g}: {px}; E[X] = {ev.runs.expected_x:.3f}; {py}\n"
              f"          recall excluding the first k probes: {rec}")
    if args.html is not None:
        sec = report_section(res)
        args.html.write_text(f"<!doctype html><meta charset=utf-8><body>{sec['html']}</body>",
                             encoding="utf-8")
        print(f"\nwrote {args.html}")


if __name__ == "__main__":
    main()
