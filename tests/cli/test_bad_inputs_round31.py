"""Bad input, the thirty-first independent round.

- an output file replaced the population, synthetic release or report of a run's output
  directory: ``population --out run/pop.parquet`` replaced the input of the run's DP release,
  so the next ``run`` released it again (fresh noise, every stage recomputed);
  ``sample --out run/synth.parquet`` replaced the release's synthetic users under a
  results.json that described the old ones.
- ``model.closed_forms`` / ``persistent_forms`` (public; new ``tolerance`` argument): NaN or a
  negative tolerance silently computed the exact expansion, inf dropped every row but the
  presence rows (statistics off by 0.05), text or None was a ``TypeError``.
- ``validate.fidelity`` did not check its seed: 2.5, ``"1"`` and ``True`` were cast, and -1
  was refused naming a trial's derived seed (-10007030021).
- ``experiment.run``'s overrides ``optimizer``, ``qif_weeks``, ``calibration_users`` and
  ``fidelity_tolerance`` were not checked: ``optimizer="xyz"`` ran the default optimiser
  (recorded as "xyz"), ``calibration_users=-5`` calibrated all but the last 5 users,
  ``qif_weeks=2.5`` or 0 failed only after every other stage had run (a ``TypeError``), and
  ``optimizer="paper"`` with persistent types only after the population and the DP release.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from refusal import check_refused, invoke, small_population, tree

from topicslab.errors import InputError

# ---- D1: a run's population, synthetic release and report are its own files ---------------


@pytest.fixture
def run_dir(work: Path) -> Path:
    """A run's output directory (stages.json) holding its population and synthetic users, and
    the inputs of the commands that would write over them."""
    small_population(work)
    run = work / "run"
    run.mkdir()
    (run / "stages.json").write_text("{}", encoding="utf-8")
    for name in ("pop.parquet", "synth.parquet", "report.html"):
        (run / name).write_bytes(b"the run's " + name.encode())
    return run


@pytest.mark.parametrize(("args", "name"), [
    (["population", "--users", "20", "--weeks", "2", "--out", "{run}/pop.parquet"],
     "pop.parquet"),
    (["convert", "pop.parquet", "{run}/synth.parquet"], "synth.parquet"),
    (["observe", "--sets", "pop.parquet", "--out", "{run}/synth.parquet"], "synth.parquet"),
], ids=["population-over-pop", "convert-over-synth", "observe-over-synth"])
def test_an_output_file_does_not_replace_a_runs_population_or_release(
        run_dir: Path, work: Path, args: list[str], name: str) -> None:
    before = tree(work)
    res = invoke([a.format(run=run_dir) for a in args])
    line = check_refused(res.output, res.exit_code, name)
    assert "a run's output" in line
    assert tree(work) == before


def test_an_output_file_beside_a_runs_files_is_written(run_dir: Path) -> None:
    res = invoke(["convert", "pop.parquet", str(run_dir / "copy.parquet")])
    assert res.exit_code == 0, res.output
    assert (run_dir / "copy.parquet").is_file()


# ---- D2: closed_forms / persistent_forms check their tolerance -----------------------------


@pytest.mark.parametrize("tolerance", [math.nan, -1.0, math.inf, "0.1", None, True])
def test_closed_forms_check_the_tolerance(tolerance: object) -> None:
    import torch

    from topicslab.model import closed_forms, persistent_forms

    torch.manual_seed(0)
    theta = torch.randn(3, 2, 5, 20, dtype=torch.float64)
    with pytest.raises(InputError, match="tolerance"):
        closed_forms(theta, None, tolerance)  # type: ignore[arg-type]
    w = torch.full((3, 2), 0.5, dtype=torch.float64)
    rho = torch.full((3,), 0.5, dtype=torch.float64)
    slot = torch.log(torch.full((3, 2, 5), 0.5, dtype=torch.float64))
    with pytest.raises(InputError, match="tolerance"):
        persistent_forms(theta, w, rho, slot, (1,), tolerance)  # type: ignore[arg-type]


def test_closed_forms_within_the_tolerance_still_compute() -> None:
    import torch

    from topicslab.model import closed_forms

    torch.manual_seed(0)
    theta = torch.randn(3, 2, 5, 20, dtype=torch.float64)
    exact = closed_forms(theta)[1]
    for tol in (0, 0.0, 1e-4):
        assert float((closed_forms(theta, None, tol)[1] - exact).norm(dim=(1, 2)).max()) <= (
            tol + 1e-12)


# ---- D3: validate.fidelity checks its seed ----------------------------------------------------


@pytest.mark.parametrize("seed", [-1, 2.5, "1", True])
def test_fidelity_checks_its_seed(seed: object) -> None:
    import numpy as np
    from refusal import random_profiles

    from topicslab import validate as tv
    from topicslab.datamodel import TopicSets

    sets = TopicSets(random_profiles(40, 2, seed=0), "v2", np.arange(40, dtype=np.int64))
    with pytest.raises(InputError, match="seed") as exc:
        tv.fidelity(sets, sets, seed=seed)  # type: ignore[arg-type]
    assert "10007" not in str(exc.value)  # (the seed given, not a trial's derived seed)


# ---- D4: the run's Python-only overrides are checked before any stage ------------------------


@pytest.mark.parametrize(("override", "named"), [
    ({"optimizer": "xyz"}, "optimizer"), ({"optimizer": "paper"}, "optimizer"),
    ({"qif_weeks": 2.5}, "qif_weeks"), ({"qif_weeks": 0}, "qif_weeks"),
    ({"calibration_users": -5}, "calibration_users"),
    ({"calibration_users": 0}, "calibration_users"),
    ({"fidelity_tolerance": "0.1"}, "fidelity_tolerance"),
], ids=["optimizer-xyz", "paper-optimizer-persistent", "qif-weeks-2.5", "qif-weeks-0",
        "calibration-users-neg", "calibration-users-0", "fidelity-tolerance-text"])
def test_run_overrides_are_checked_before_any_stage(work: Path, override: dict,
                                                    named: str) -> None:
    from topicslab import experiment

    with pytest.raises(InputError) as exc:
        experiment.run("smoke", work / "out", users=20, overrides=override)
    assert exc.value.field == named, str(exc.value)
    assert not (work / "out").exists()


def test_run_paper_optimizer_of_paper_types_is_a_preset() -> None:
    from topicslab.experiment.presets import PRESETS

    p = PRESETS["smoke"].with_overrides(optimizer="paper", model="paper", qif_weeks=2,
                                        calibration_users=10)
    assert (p.optimizer, p.qif_weeks, p.calibration_users) == ("paper", 2, 10)
