"""Bad input, the thirty-third independent round.

- ``fit --resume`` with other settings than the checkpoint's named what no user typed:
  ``--cyclic`` was "field 'week_pairs'", ``--no-noise-stop`` "field 'stop_at_noise'", other
  statistics "field 'fingerprint': ... fingerprint='sha256:75d0...', this fit has
  'sha256:6f04...'; resume with the options of the interrupted fit", and the other
  optimiser "field '--batch-loss': checkpoint was made with batch_loss=None".
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from refusal import check_refused, invoke, population_and_stats, tree


def _fit(inputs: Path, stats: str, out: Path, more: list[str]) -> list[str]:
    return ["fit", "--stats", str(inputs / stats), "--out", str(out), "--types", "2",
            "--no-progress", *more]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 users (v2, 4 weeks), their DP statistics (``stats``), the statistics of another
    release of them (``stats-other``) and one-step fits of persistent and paper types, their
    checkpoints kept (``fit-persistent``, ``fit-paper``)."""
    from topicslab import dp
    from topicslab.io import read_sets

    d = tmp_path_factory.mktemp("round33")
    population_and_stats(d)
    dp.save_statistics(d / "stats-other", dp.compute_statistics(
        read_sets(d / "pop.parquet"), epsilon=1.0, delta=1e-6, seed=1))
    for model in ("persistent", "paper"):
        res = invoke(_fit(d, "stats", d / f"fit-{model}", ["--model", model, "--steps", "1"]))
        assert res.exit_code == 0, res.output
    return d


# ---- D1: a resumed fit names the option that differs from its checkpoint's -----------------


@pytest.mark.parametrize(("model", "changed", "named"), [
    ("paper", ["--cyclic"], "field '--cyclic': checkpoint was made with week_pairs"),
    ("paper", ["--weeks", "5"], "field '--weeks': checkpoint was made with weeks=4"),
    ("persistent", ["--no-noise-stop"],
     "field '--no-noise-stop': checkpoint was made with stop_at_noise"),
    ("persistent", [], "field '--stats': checkpoint was made from other DP statistics than "
                       "these"),
    ("paper", ["--optimizer", "paper", "--epochs", "1"],
     "field '--optimizer': checkpoint was made with optimizer='default', this fit has 'paper'"),
], ids=["cyclic", "weeks", "no-noise-stop", "other-stats", "other-optimizer"])
def test_resume_names_the_option_that_differs(inputs: Path, work: Path, model: str,
                                              changed: list[str], named: str) -> None:
    """Was "field 'week_pairs'" (also for --weeks), "field 'stop_at_noise'", "field
    'fingerprint'" with two hashes, and "field '--batch-loss': ... batch_loss=None"."""
    shutil.copytree(inputs / f"fit-{model}", work / "m")
    steps = [] if "--epochs" in changed else ["--steps", "1"]
    stats = "stats" if changed else "stats-other"
    before = tree(work)
    res = invoke(_fit(inputs, stats, work / "m", ["--model", model, *steps, *changed,
                                                  "--resume"]))
    check_refused(res.output, res.exit_code, named)
    assert tree(work) == before
