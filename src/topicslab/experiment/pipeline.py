"""The end-to-end release experiment behind ``topicslab run`` (spec 01 §5).

Stages, in data-flow order: reference population -> site traces -> calibration check
-> DP statistics (weeks 0-1, epsilon = ln 3, delta = 1e-15) -> fit -> sample -> validation
-> re-identification -> report, with the QIF analysis of the population alongside. Stages whose
modules are not implemented yet are listed in the result as ``missing`` (with the issue that
will provide them) instead of being faked.

Public names:
    PRESETS                        named sizes ("smoke", "default", "paper")
    run(preset=..., out=..., ...)  run what exists; returns the results dict (also written
                                   to ``OUT/results.json``)
"""

from __future__ import annotations

import json
import platform
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

import topicslab
from topicslab._atomic import write_text_atomic


@dataclass(frozen=True)
class Preset:
    """Sizes of one run."""

    users: int
    weeks: int
    sites: int
    calibration_users: int


PRESETS: dict[str, Preset] = {
    "smoke": Preset(users=20_000, weeks=4, sites=2, calibration_users=20_000),
    "default": Preset(users=1_000_000, weeks=4, sites=2, calibration_users=1_000_000),
    "paper": Preset(users=10_000_000, weeks=4, sites=2, calibration_users=1_000_000),
}

#: Stages still to be built, and the issue that delivers each.
MISSING_STAGES = {
    "fit": "issue #4 (type-mixture model)",
    "sample": "issue #4 (type-mixture model)",
    "validate": "issue #4 (validation)",
    "reidentification": "issue #5 (re-identification attacks)",
    "report": "issue #6 (end-to-end report)",
}


def run(
    preset: str = "default",
    out: str | Path = "topicslab-out",
    *,
    seed: int = 0,
    users: int | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Run the stages that exist on the built-in reference population.

    Writes ``pop.parquet``, ``traces.parquet`` and ``results.json`` under ``out`` (atomically)
    and returns the results dict.
    """
    from topicslab import api, dp, population, qif
    from topicslab import io as tio
    from topicslab.datamodel import SiteTraces

    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose one of {sorted(PRESETS)}")
    cfg = PRESETS[preset]
    n_users = users or cfg.users
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    times: dict[str, float] = {}

    t0 = time.perf_counter()
    sets = population.generate(n_users, cfg.weeks, seed=seed, progress=progress)
    tio.write_sets(out_dir / "pop.parquet", sets)
    times["population"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    traces = api.observe(sets.sets, cfg.sites, seed=seed + 1, user_ids=sets.user_ids)
    tio.write_traces(out_dir / "traces.parquet", SiteTraces(traces, sets.taxonomy,
                                                            sets.user_ids))
    times["observe"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    n_cal = min(n_users, cfg.calibration_users)
    table = population.calibration_table(sets.subset(users=slice(0, n_cal)))
    times["calibration_check"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    stats = dp.compute_statistics(sets, weeks=(0, 1), seed=None)
    dp.save_statistics(out_dir / "stats", stats)
    assert stats.ledger is not None  # computed statistics always carry their ledger
    times["dp_statistics"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    qif_one = qif.population_tables(sets, weeks=0)
    times["qif"] = time.perf_counter() - t0

    results: dict[str, Any] = {
        "topicslab_version": topicslab.__version__,
        "preset": preset,
        "parameters": {**asdict(cfg), "users": n_users, "seed": seed},
        "population": {
            "users": n_users,
            "weeks": cfg.weeks,
            "padded_user_weeks_share": table.padded_share,
            "calibration_users": n_cal,
            "calibration": table.to_records(),
            "calibration_within_tolerance": table.all_ok,
        },
        "traces": {
            "sites": cfg.sites,
            "answers": int(traces.size),
        },
        "dp_statistics": {
            "directory": str(out_dir / "stats"),
            "n_estimate": float(stats.n_estimate),
            "ledger": stats.ledger.public().to_dict(),
        },
        "qif": {"one_epoch": qif_one.to_dict()},
        "stage_seconds": times,
        "missing_stages": MISSING_STAGES,
        "environment": {
            "python": platform.python_version(),
            "machine": platform.machine(),
            "numpy": np.__version__,
        },
    }
    write_text_atomic(out_dir / "results.json", json.dumps(results, indent=2, default=float))
    return results
