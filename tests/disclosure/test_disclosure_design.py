"""``DisclosureDesign``: the disclosure experiment's sizes, ρ and ε, checked once; every bad
value names its field (the option), every valid one is accepted; the persona blocks and the
memory estimate that ``topicslab disclosure`` checks before simulating."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topicslab.disclosure import DisclosureDesign, simulate_personas, topics_experiment
from topicslab.disclosure.design import BLOCK_USERS, MAX_EPOCHS
from topicslab.disclosure.personas import default_categories
from topicslab.errors import InputError, ParameterError

_FAST = settings(max_examples=60, deadline=None)
CATS = default_categories("v2")


def _named(info: pytest.ExceptionInfo[InputError], field: str) -> None:
    assert isinstance(info.value, ParameterError) and info.value.field == field


@_FAST
@given(rhos=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=6, unique=True),
       epochs=st.integers(1, MAX_EPOCHS), personas=st.integers(2, BLOCK_USERS),
       sites=st.integers(1, 64), mc=st.integers(1, 10**7), seed=st.integers(0, 2**63),
       epsilon=st.floats(0.0, 1e6), data=st.data())
def test_every_valid_design_is_accepted(rhos: list[float], epochs: int, personas: int,
                                        sites: int, mc: int, seed: int, epsilon: float,
                                        data: st.DataObject) -> None:
    onset = data.draw(st.integers(0, epochs))
    d = DisclosureDesign(rhos=tuple(rhos), epochs=epochs, personas=personas,
                         probe_sites=sites, mc_samples=mc, seed=seed, epsilon=epsilon,
                         onset=onset)
    assert d.rhos == tuple(rhos) and d.n_train == personas and d.pool_epochs == epochs


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"rhos": ()}, "rho"),
    ({"rhos": (0.1, 1.5)}, "rho"),
    ({"rhos": (math.nan,)}, "rho"),
    ({"rhos": "0.1"}, "rho"),
    ({"epochs": 0}, "epochs"),
    ({"epochs": MAX_EPOCHS + 1}, "epochs"),
    ({"personas": 1}, "personas"),
    ({"personas": BLOCK_USERS + 1}, "personas"),
    ({"train_personas": 1}, "train_personas"),
    ({"probe_sites": 0}, "probe_sites"),
    ({"probe_sites": 65}, "probe_sites"),
    ({"mc_samples": 0}, "mc_samples"),
    ({"mc_epochs": 0}, "mc_epochs"),
    ({"seed": -1}, "seed"),
    ({"seed": 1.5}, "seed"),
    ({"epsilon": -0.1}, "epsilon"),
    ({"epsilon": math.inf}, "epsilon"),
    ({"onset": 9}, "onset"),
    ({"onset": -1}, "onset"),
])
def test_bad_fields(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(InputError) as info:
        DisclosureDesign(**kwargs)  # type: ignore[arg-type]
    _named(info, field)


def test_the_white_box_limits_the_sites_only_when_it_runs() -> None:
    assert DisclosureDesign(probe_sites=500, whitebox=False).probe_sites == 500


@_FAST
@given(groups=st.integers(2, 50), personas=st.integers(2, BLOCK_USERS))
def test_persona_blocks(groups: int, personas: int) -> None:
    d = DisclosureDesign(personas=personas, train_personas=2)
    if personas * groups <= BLOCK_USERS:
        d.check_groups(groups)
    else:
        with pytest.raises(InputError, match="user ids") as info:
            d.check_groups(groups)
        _named(info, "personas")


@_FAST
@given(personas=st.integers(2, 10**5), mc=st.integers(1, 10**5), epochs=st.integers(1, 50))
def test_memory_grows_with_each_option(personas: int, mc: int, epochs: int) -> None:
    d = DisclosureDesign(personas=personas, mc_samples=mc, epochs=epochs)
    base = d.memory(469, 5, 30.0)
    assert set(base) == {"personas", "train_personas", "mc_samples"}
    more = DisclosureDesign(personas=2 * personas, mc_samples=mc, epochs=epochs)
    assert more.memory(469, 5, 30.0)["personas"] > base["personas"]
    more = DisclosureDesign(personas=personas, mc_samples=2 * mc, epochs=epochs)
    assert more.memory(469, 5, 30.0)["mc_samples"] > base["mc_samples"]
    assert "mc_samples" not in DisclosureDesign(whitebox=False).memory(469, 5, 30.0)
    assert base["personas"] >= 5 * personas * 24 * 469  # the Gumbel keys alone


def test_the_engines_check_through_the_design() -> None:
    with pytest.raises(InputError) as info:
        simulate_personas([0], 0.1, categories=CATS, epochs=MAX_EPOCHS + 1)
    _named(info, "epochs")
    with pytest.raises(InputError) as info:
        simulate_personas([0], 0.1, categories=CATS, epochs=3, onset=4)
    _named(info, "onset")
    with pytest.raises(InputError) as info:  # 5 groups x 200,001 > one block of user ids
        topics_experiment(personas=200_001, progress=False)
    _named(info, "personas")
    with pytest.raises(TypeError, match="not both"):
        topics_experiment(design=DisclosureDesign(), personas=10, progress=False)
