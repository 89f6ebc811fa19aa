"""``ReidProtocol`` and ``check_call_weeks``: the re-identification protocol's parameters,
checked once; every bad value names its field, every good one is accepted."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topicslab.attacks import ReidProtocol, check_call_weeks
from topicslab.attacks.protocol import ENGINES, SETTINGS, protocol_of
from topicslab.attacks.scoring import MAX_WEEKS
from topicslab.errors import InputError, ParameterError

_FAST = settings(max_examples=60, deadline=None)


def _named(info: pytest.ExceptionInfo[InputError], field: str) -> None:
    assert isinstance(info.value, ParameterError)
    assert info.value.field == field and info.value.row is None


@_FAST
@given(targets=st.one_of(st.integers(1, 10**30), st.just("all"), st.just(" ALL ")),
       trials=st.integers(1, 10**9), setting=st.sampled_from(SETTINGS),
       engine=st.sampled_from(ENGINES))
def test_every_valid_protocol_is_accepted(targets: int | str, trials: int, setting: str,
                                          engine: str) -> None:
    p = ReidProtocol(targets, trials, setting, engine)
    assert p.targets == (targets if isinstance(targets, int) else "all")
    assert p.trials == trials


@_FAST
@given(targets=st.integers(max_value=0))
def test_every_non_positive_target_count_names_targets(targets: int) -> None:
    with pytest.raises(InputError) as info:
        ReidProtocol(targets=targets)
    _named(info, "targets")
    with pytest.raises(InputError) as info:  # as the CLI passes it: text
        ReidProtocol(targets=str(targets))
    _named(info, "targets")


@_FAST
@given(trials=st.integers(max_value=0))
def test_every_non_positive_trial_count_names_trials(trials: int) -> None:
    with pytest.raises(InputError) as info:
        ReidProtocol(trials=trials)
    _named(info, "trials")


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"targets": "some"}, "targets"),
    ({"targets": True}, "targets"),
    ({"targets": 2.5}, "targets"),
    ({"trials": 1.0}, "trials"),
    ({"setting": "other"}, "setting"),
    ({"engine": "gpu"}, "engine"),
])
def test_bad_fields(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(InputError) as info:
        ReidProtocol(**kwargs)  # type: ignore[arg-type]
    _named(info, field)


def test_text_targets_are_read() -> None:
    assert ReidProtocol(targets="250").targets == 250
    assert ReidProtocol(targets="All").targets == "all"


@_FAST
@given(users=st.integers(1, 10**9), targets=st.integers(1, 10**9))
def test_target_count(users: int, targets: int) -> None:
    notes: list[str] = []
    count = ReidProtocol(targets=targets).target_count(users, notes)
    assert count == (targets if targets <= users else None)
    assert bool(notes) == (targets > users)
    assert ReidProtocol(targets=targets, setting="matching").target_count(users) is None


@_FAST
@given(users=st.integers(0, 10**9), targets=st.integers(1, 10**9),
       trials=st.integers(1, 10**6), weeks=st.integers(1, MAX_WEEKS))
def test_memory_grows_with_targets_and_trials(users: int, targets: int, trials: int,
                                              weeks: int) -> None:
    p = ReidProtocol(targets, trials)
    work, per_trials = p.memory(users, weeks, 2)
    more_work, more_trials = ReidProtocol(targets, trials * 2).memory(users, weeks, 2)
    assert more_trials == 2 * per_trials and more_work == work
    assert work >= 16 * users * weeks
    brute, _ = ReidProtocol(targets, trials, engine="brute").memory(users, weeks, 2)
    assert brute > work or users == 0


@_FAST
@given(weeks=st.integers(-10, MAX_WEEKS + 10), lookback=st.integers(1, MAX_WEEKS + 2))
def test_call_weeks(weeks: int, lookback: int) -> None:
    if 1 <= weeks and weeks + lookback - 1 <= MAX_WEEKS:
        assert check_call_weeks(weeks, lookback) == weeks
    else:
        with pytest.raises(InputError) as info:
            check_call_weeks(weeks, lookback)
        _named(info, "weeks" if not 1 <= weeks <= MAX_WEEKS else "lookback")


def test_keyword_form_or_object_not_both() -> None:
    assert protocol_of(None, targets=5) == ReidProtocol(targets=5)
    assert protocol_of(None, default_trials=1).trials == 1
    with pytest.raises(TypeError, match="not both"):
        protocol_of(ReidProtocol(), trials=2)


@pytest.mark.parametrize("entry", ["measure_risk", "measure_risk_traces", "train_attack"])
def test_a_mechanism_that_is_not_one_is_a_type_error(entry: str) -> None:
    """``mechanism="v2"`` was AttributeError: 'str' object has no attribute 'k' (round 36;
    ``observe`` already said what it takes)."""
    import numpy as np

    from topicslab.attacks import measure_risk, measure_risk_traces
    from topicslab.datamodel import TopicSets

    sets = TopicSets(np.sort(np.stack([np.stack([np.random.default_rng(u * 4 + w).choice(
        np.array([1, 4, 9, 12, 13, 15, 18]), 5, replace=False) for w in range(2)])
        for u in range(20)]), axis=-1).astype(np.int16), "v2")
    with pytest.raises(TypeError, match="mechanism takes a Mechanism, got str"):
        if entry == "measure_risk":
            measure_risk(sets, weeks=1, targets=5, trials=1, mechanism="v2",  # type: ignore[arg-type]
                         progress=False)
        elif entry == "measure_risk_traces":
            site = np.zeros((20, 2), np.int16)
            measure_risk_traces(site, site, mechanism="v2", progress=False)  # type: ignore[arg-type]
        else:
            from topicslab.attacks.learned import train_attack

            train_attack(sets, weeks=1, mechanism="v2", progress=False)  # type: ignore[arg-type]


def test_the_note_on_more_targets_than_users_counts_them_right():
    from topicslab.attacks import ReidProtocol

    for users, said in ((1, "only 1 user:"), (3, "only 3 users:"), (20_000, "only 20,000 users:")):
        notes: list[str] = []
        assert ReidProtocol(30_000, 1).target_count(users, notes) is None
        assert notes == [f"30,000 targets requested but {said} every user is a target"]
