"""The release's parameter objects: every invalid value refused naming its field, every valid
one accepted, and the engines taking the objects instead of checking on their own."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topicslab.datamodel import TopicSets
from topicslab.dp import ContributionBound, PrivacyBudget, compute_statistics, plan_queries
from topicslab.dp.params import MAX_EPSILON, MIN_EPSILON, budget_of, contribution_of, default_split
from topicslab.errors import InputError, ParameterError
from topicslab.taxonomy import Taxonomy

_FAST = settings(max_examples=60, deadline=None)


def _refused(info: pytest.ExceptionInfo[InputError], field: str) -> None:
    assert isinstance(info.value, ParameterError)
    assert info.value.field == field
    assert info.value.row is None and info.value.file is None
    assert isinstance(info.value, ValueError)  # what a Python caller expects of a bad value


@_FAST
@given(epsilon=st.floats(min_value=MIN_EPSILON, max_value=MAX_EPSILON),
       delta=st.floats(min_value=0.0, max_value=1.0, exclude_min=True, exclude_max=True))
def test_every_valid_budget_is_accepted(epsilon: float, delta: float) -> None:
    b = PrivacyBudget(epsilon, delta)
    assert (b.epsilon, b.delta, b.accounting, b.split) == (epsilon, delta, "paper", None)


@_FAST
@given(epsilon=st.one_of(st.floats(max_value=MIN_EPSILON, exclude_max=True),
                         st.floats(min_value=MAX_EPSILON,
                                                             exclude_min=True),
                         st.just(math.nan)))
def test_every_bad_epsilon_names_epsilon(epsilon: float) -> None:
    with pytest.raises(InputError) as info:
        PrivacyBudget(epsilon, 1e-9)
    _refused(info, "epsilon")


@_FAST
@given(delta=st.one_of(st.floats(max_value=0.0), st.floats(min_value=1.0),
                       st.just(math.nan)))
def test_every_bad_delta_names_delta(delta: float) -> None:
    with pytest.raises(InputError) as info:
        PrivacyBudget(1.0, delta)
    _refused(info, "delta")


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"accounting": "loose"}, "accounting"),
    ({"epsilon": "1"}, "epsilon"),       # a string is not a number
    ({"epsilon": True}, "epsilon"),      # nor is a bool
    ({"split": (0.5, 0.6)}, "split"),    # does not sum to 1
    ({"split": (1.5, -0.5)}, "split"),   # a negative share
    ({"split": ()}, "split"),
    ({"split": "0.5,0.5"}, "split"),
    ({"split": (math.inf, 1)}, "split"),
])
def test_bad_budget_fields(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(InputError) as info:
        PrivacyBudget(**kwargs)  # type: ignore[arg-type]
    _refused(info, field)


def test_split_is_normalised_and_checked_against_the_weeks() -> None:
    b = PrivacyBudget(split=[0.25, 0.25, 0.5 + 1e-12])
    assert b.split == (0.25, 0.25, 0.5 + 1e-12)  # a list is kept as a tuple (frozen)
    assert math.isclose(sum(b.shares(2)), 1.0, rel_tol=0, abs_tol=1e-15)
    with pytest.raises(InputError, match="needs 5 shares for 3 weeks") as info:
        b.shares(3)
    _refused(info, "split")
    assert PrivacyBudget().shares(4) == default_split(4)
    with pytest.raises(InputError):
        default_split(0)


@_FAST
@given(k=st.integers(min_value=2, max_value=10**6),
       weeks=st.none() | st.builds(lambda first, n: list(range(first, first + n)),
                                   st.integers(0, 100), st.integers(1, 8)))
def test_every_valid_contribution_is_accepted(k: int, weeks: list[int] | None) -> None:
    c = ContributionBound(k, "truncate", None if weeks is None else tuple(weeks))
    assert c.k == k and c.weeks == (None if weeks is None else tuple(weeks))


@_FAST
@given(k=st.integers(max_value=1))
def test_every_k_below_two_names_k(k: int) -> None:
    with pytest.raises(InputError, match="pairs") as info:
        ContributionBound(k)
    _refused(info, "k")


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"k": 5.0}, "k"),
    ({"bound": "clip"}, "bound"),
    ({"weeks": (0, 0)}, "weeks"),
    ({"weeks": (-1,)}, "weeks"),
    ({"weeks": ()}, "weeks"),
    ({"weeks": "01"}, "weeks"),
])
def test_bad_contribution_fields(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(InputError) as info:
        ContributionBound(**kwargs)  # type: ignore[arg-type]
    _refused(info, field)


@_FAST
@given(m=st.integers(2, 700), k=st.integers(2, 800))
def test_k_against_the_taxonomy(m: int, k: int) -> None:
    c = ContributionBound(k)
    if k <= m:
        c.check_topics(m)
    else:
        with pytest.raises(InputError, match=f"2..{m}") as info:
            c.check_topics(m)
        _refused(info, "k")


def test_weeks_against_the_input() -> None:
    assert ContributionBound().select_weeks(4) == [0, 1]
    assert ContributionBound().select_weeks(1) == [0]
    assert ContributionBound(weeks=(2, 3)).select_weeks(4) == [2, 3]
    for weeks in ((3, 1), (0, 2), (0, 1, 3)):  # the fit would read them as consecutive
        with pytest.raises(InputError, match="consecutive") as info:
            ContributionBound(weeks=weeks)
        _refused(info, "weeks")
    with pytest.raises(InputError, match="input has 4 weeks") as info:
        ContributionBound(weeks=(3, 4)).select_weeks(4)
    _refused(info, "weeks")
    with pytest.raises(InputError, match="no weeks"):
        ContributionBound().select_weeks(0)


def test_keyword_form_or_object_not_both() -> None:
    assert budget_of(None, epsilon=2.0) == PrivacyBudget(epsilon=2.0)
    assert budget_of(PrivacyBudget(3.0)) == PrivacyBudget(3.0)
    with pytest.raises(TypeError, match="not both"):
        budget_of(PrivacyBudget(3.0), delta=1e-9)
    assert contribution_of(None, k=4) == ContributionBound(4)
    with pytest.raises(TypeError, match="not both"):
        contribution_of(ContributionBound(4), bound="truncate")


def test_engines_take_the_objects(tax12: Taxonomy) -> None:
    tax = tax12
    rng = np.random.default_rng(0)
    sets = np.sort(np.stack([np.stack([rng.choice(12, 4, replace=False) for _ in range(3)])
                             for _ in range(50)]), axis=-1).astype(np.int16)
    data = TopicSets(sets, tax)
    budget = PrivacyBudget(2.0, 1e-6, "tight", (0.2, 0.3, 0.5))
    contribution = ContributionBound(4, "reject", (1, 2))
    by_object = compute_statistics(data, budget=budget, contribution=contribution, seed=3)
    by_keyword = compute_statistics(data, epsilon=2.0, delta=1e-6, accounting="tight",
                                    split=[0.2, 0.3, 0.5], k=4, weeks=[1, 2], seed=3)
    assert np.array_equal(by_object.q_within, by_keyword.q_within)
    assert by_object.ledger is not None
    assert by_object.ledger.contribution_bounding["weeks"] == [1, 2]
    assert by_object.ledger.accounting == "tight"
    assert [q.share for q in plan_queries(2, 4, 12, budget=budget)] == [0.2, 0.3, 0.5]
    with pytest.raises(InputError) as info:  # k = 13 > the 12 topics, found with the data
        compute_statistics(data, contribution=ContributionBound(13))
    _refused(info, "k")
    with pytest.raises(TypeError, match="not both"):
        compute_statistics(data, budget=budget, epsilon=1.0)


@pytest.mark.parametrize(("make", "given", "name"), [
    (budget_of, "x", "budget"), (budget_of, 3, "budget"),
    (contribution_of, {"k": 5}, "contribution")])
def test_a_parameter_object_of_another_type_is_a_type_error(make: object, given: object,
                                                            name: str) -> None:
    """``compute_statistics(sets, budget="x")`` was AttributeError: 'str' object has no
    attribute 'shares' (round 36)."""
    with pytest.raises(TypeError, match=f"{name} takes a "):
        make(given)  # type: ignore[operator]
