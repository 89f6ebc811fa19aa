"""``Preset`` checks the stages' parameters through their own parameter objects, so that a
bad preset or override fails before any stage runs, naming the field or the run's option."""

from __future__ import annotations

import pytest

from topicslab.errors import InputError, ParameterError
from topicslab.experiment.presets import PRESETS, Preset


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"epsilon": 0.0}, "epsilon"),
    ({"delta": 1.0}, "delta"),
    ({"accounting": "loose"}, "accounting"),
    ({"stats_weeks": (0, 0)}, "--release-weeks"),
    ({"targets": 0}, "targets"),
    ({"trials": 0}, "trials"),
    ({"fidelity_targets": 0}, "fidelity_targets"),
    ({"disclosure_personas": 1}, "disclosure_personas"),
])
def test_bad_stage_parameters(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(InputError) as info:
        Preset(users=1000, **kwargs)  # type: ignore[arg-type]
    assert isinstance(info.value, ParameterError) and info.value.field == field


def test_the_presets_and_overrides_pass() -> None:
    for preset in PRESETS.values():
        assert preset.with_overrides(trials=2, targets=5).trials == 2
    with pytest.raises(InputError):
        PRESETS["smoke"].with_overrides(trials=0)
