"""Bad input, the seventeenth independent round (issue 15): ``reid --attack learned`` with a
model trained at another ``--p`` printed its note on the mechanism before refusing a
``--weeks`` or ``--lookback`` that the model does not take (several lines); from Python,
``LearnedAttackConfig(hard_fraction="0.5")`` or ``None`` was a TypeError,
``lr="0.01"`` was kept as a string, ``gate=nan`` turned the gate silently off and NumPy integers
were refused; ``Preset(users=np.int64(300))`` was refused, while ``Preset(theory="no")`` and
``DisclosureDesign(whitebox="no")`` were taken as true; ``qif.population_tables(weeks=True)``
was week 1 and ``weeks=np.int64(1)`` a TypeError; ``population.generate(first_user=-1)`` and
``chunk_users=0`` were plain ValueErrors, not refusals naming the field.

The same contract as ``test_bad_inputs.py``: exit code 2, one line ``error: ...`` naming the
offending file, row or field, no traceback, and nothing written.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from refusal import invoke, population_and_stats, refusal_test


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 users (v2, 4 weeks) and a learned attack trained on them (r = 4, p = 0.05, the
    counted co-occurrence only)."""
    d = tmp_path_factory.mktemp("round17")
    population_and_stats(d)
    res = invoke(["attack-train", "--sets", str(d / "pop.parquet"), "--out", str(d / "attack"),
                  "--weeks", "4", "--epochs", "0", "--validation", "16", "--no-progress"])
    assert res.exit_code == 0, res.output
    return d


LEARNED = ["reid", "--sets", "{in}/pop.parquet", "--targets", "20", "--trials", "1",
           "--no-progress", "--attack", "learned", "--attack-model", "{in}/attack",
           "--p", "0.2"]

CASES: list[tuple[str, list[str], str]] = [
    # "note: the learned attack was trained at p = 0.05; ..." and then the error
    ("reid-learned-other-p-and-weeks", [*LEARNED, "--weeks", "2"],
     "field '--weeks': the learned attack was trained on r = 4 call-weeks, not 2"),
    ("reid-learned-other-p-and-lookback", [*LEARNED, "--lookback", "2"],
     "field '--weeks': observing 4 call-week(s) with lookback 2 needs 5 weeks"),
]


test_bad_input_is_refused = refusal_test(CASES)


def test_the_learned_attack_at_another_p_still_runs_with_its_note(inputs: Path) -> None:
    res = invoke([a.format(**{"in": inputs}) for a in LEARNED])
    assert res.exit_code == 0, res.output
    assert "trained at p = 0.05" in res.output


def _config(**kw: Any) -> Any:
    from topicslab.attacks.learned import LearnedAttackConfig

    return LearnedAttackConfig(**kw)


def _preset(**kw: Any) -> Any:
    from topicslab.experiment import Preset

    return Preset(**{"users": 300, **kw})


def _design(**kw: Any) -> Any:
    from topicslab.disclosure import DisclosureDesign

    return DisclosureDesign(**kw)


def _generate(**kw: Any) -> Any:
    from topicslab.population import generate

    return generate(10, 2, **kw)


def _tables(**kw: Any) -> Any:
    from topicslab import qif

    return qif.population_tables(_generate(), **kw)


@pytest.mark.parametrize(("make", "field"), [
    (lambda: _config(hard_fraction="0.5"), "hard_fraction"),  # TypeError
    (lambda: _config(hard_fraction=None), "hard_fraction"),  # TypeError
    (lambda: _config(lr="0.01"), "lr"),  # kept as a string
    (lambda: _config(gate=float("nan")), "gate"),  # the gate silently off
    (lambda: _preset(theory="no"), "theory"),  # ran the theory section
    (lambda: _preset(refit_per_trial="false"), "refit_per_trial"),
    (lambda: _design(whitebox="no"), "whitebox"),  # ran the white-box check
    (lambda: _tables(weeks=True), "weeks"),  # week 1
    (lambda: _tables(weeks=[0, 1.0]), "weeks"),
    (lambda: _generate(first_user=-1), "first_user"),  # a ValueError
    (lambda: _generate(chunk_users=0), "chunk_users"),  # a ValueError
], ids=["config-hard-fraction-text", "config-hard-fraction-none", "config-lr-text",
        "config-gate-nan", "preset-theory-text", "preset-refit-text", "design-whitebox-text",
        "qif-tables-weeks-true", "qif-tables-weeks-float", "generate-first-user-negative",
        "generate-chunk-users-zero"])
def test_python_wrong_types_are_refused(make: Callable[[], Any], field: str) -> None:
    from topicslab.errors import InputError

    with pytest.raises(InputError) as info:
        make()
    assert info.value.field == field


def test_python_numpy_counts_are_taken() -> None:
    """NumPy integers (as a user's arrays give them) were refused as "not an integer"."""
    cfg = _config(negatives=np.int64(5), epochs=np.int32(0))
    assert cfg.negatives == 5 and type(cfg.negatives) is int and type(cfg.epochs) is int
    assert _config(hard_fraction=np.float32(0.5), gate=-1).gate == -1.0
    preset = _preset(users=np.int64(300), fit_steps=np.int32(2))
    assert preset.users == 300 and type(preset.users) is int
    assert _design(whitebox=np.bool_(False)).whitebox is False
    assert _tables(weeks=np.int64(1)).epochs == _tables(weeks=1).epochs
