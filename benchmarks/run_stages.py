"""Benchmark: where the time of ``topicslab run`` goes, stage by stage, for any preset.

Runs ``topicslab run --preset P --no-cache --quiet`` ``--repeats`` times in fresh processes
(fresh DP noise each run unless ``--seed`` is fixed; it is, by default, so runs compare), and
prints a markdown table: per stage the median seconds (and the range), the wall time and the
peak resident memory of each run (``getrusage`` of the child), and the median wall time.
Extra arguments after ``--`` go to ``topicslab run`` (e.g. ``-- --users 200000``).

Run: ``.venv/bin/python benchmarks/run_stages.py --preset default --repeats 3``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _outputs import refuse


def _one_run(preset: str, seed: int, extra: list[str], keep: Path | None = None
             ) -> tuple[float, float, dict[str, float], dict[str, float]]:
    with tempfile.TemporaryDirectory(prefix="topicslab-bench-") as tmp:
        out = Path(tmp) / "out" if keep is None else keep
        cmd = [sys.executable, "-m", "topicslab", "run", "--preset", preset, "--out", str(out),
               "--seed", str(seed), "--no-cache", "--quiet", *extra]
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy())
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            # its own line (a refusal's one line and exit code 2 were "topicslab run failed
            # (2):" above it, exit code 1)
            sys.stderr.write(proc.stderr[-2000:])
            raise SystemExit(proc.returncode)
        peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        # ru_maxrss of children is the largest of any child so far: only a new maximum shows
        peak = max(peak_kb, before) / 1024**2
        res = json.loads((out / "results.json").read_text())
        stages = {k: float(v) for k, v in res["stage_seconds"].items()}
        memory = {k: v for k, v in (res.get("stage_peak_rss_mb") or {}).items()
                  if v is not None}
    return wall, peak, stages, memory


def main() -> None:
    argv = sys.argv[1:]
    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1:]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="default")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", type=Path, default=None,
                    help="write the last run's output here (its statistics, model, results) "
                         "instead of a temporary directory; must not exist yet")
    args = ap.parse_args(argv)
    if args.repeats < 1:  # (an IndexError of the table's first run)
        refuse(f"field '--repeats': must be at least 1, got {args.repeats}")
    if args.keep is not None and args.keep.exists():
        refuse(f"{args.keep}, field '--keep': exists; name a new directory")
    runs = [_one_run(args.preset, args.seed, extra,
                     args.keep if i == args.repeats - 1 else None)
            for i in range(args.repeats)]
    names = list(runs[0][2])
    print(f"`topicslab run --preset {args.preset} {' '.join(extra)}`, {args.repeats} run(s), "
          f"{os.cpu_count()} CPUs")
    # the peak after a stage is a running maximum: the stage where it rises needed it
    print("| stage | median s | range s | peak RSS MB after it (median) |")
    print("|---|---|---|---|")
    for name in names:
        vals = [r[2].get(name, 0.0) for r in runs]
        mbs = [r[3][name] for r in runs if name in r[3]]
        mb = f"{statistics.median(mbs):,.0f}" if mbs else "—"
        print(f"| {name} | {statistics.median(vals):.1f} | {min(vals):.1f}–{max(vals):.1f} | "
              f"{mb} |")
    walls = [r[0] for r in runs]
    print(f"| **wall** | **{statistics.median(walls):.1f}** | "
          f"{' / '.join(f'{w:.1f}' for w in walls)} | |")
    print(f"| peak RSS GB (largest child so far) | {max(r[1] for r in runs):.2f} | "
          f"{' / '.join(f'{r[1]:.2f}' for r in runs)} | |")


if __name__ == "__main__":
    main()
