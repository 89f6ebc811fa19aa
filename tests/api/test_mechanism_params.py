"""``Mechanism``: the Topics API's parameters, checked once; every bad value names its field."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topicslab.api import Mechanism, top_k
from topicslab.errors import InputError, ParameterError
from topicslab.taxonomy import resolve

_FAST = settings(max_examples=60, deadline=None)
V1, V2 = resolve("v1").size, resolve("v2").size


def _named(info: pytest.ExceptionInfo[InputError], field: str) -> None:
    assert isinstance(info.value, ParameterError) and isinstance(info.value, ValueError)
    assert info.value.field == field and info.value.row is None


@_FAST
@given(k=st.integers(1, V2), p=st.floats(0.0, 1.0), lookback=st.integers(1, 10**6))
def test_every_valid_mechanism_is_accepted(k: int, p: float, lookback: int) -> None:
    mech = Mechanism(k=k, p=p, lookback=lookback)
    assert (mech.k, mech.p, mech.lookback) == (k, p, lookback)
    assert 0 <= mech.q_out <= mech.q_in <= 1


@_FAST
@given(k=st.one_of(st.integers(max_value=0), st.integers(min_value=V1 + 1)))
def test_every_k_outside_the_taxonomy_names_k(k: int) -> None:
    with pytest.raises(InputError, match=f"1..{V1}") as info:
        Mechanism(k=k, taxonomy="v1")
    _named(info, "k")


@_FAST
@given(p=st.one_of(st.floats(max_value=0.0, exclude_max=True), st.floats(min_value=1.0,
                                                                          exclude_min=True),
                   st.just(math.nan)))
def test_every_p_outside_zero_one_names_p(p: float) -> None:
    with pytest.raises(InputError) as info:
        Mechanism(p=p)
    _named(info, "p")


@_FAST
@given(lookback=st.integers(max_value=0))
def test_every_lookback_below_one_names_lookback(lookback: int) -> None:
    with pytest.raises(InputError) as info:
        Mechanism(lookback=lookback)
    _named(info, "lookback")


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"taxonomy": "v3"}, "taxonomy"),
    ({"taxonomy": 469}, "taxonomy"),
    ({"k": 2.5}, "k"),
    ({"k": True}, "k"),
    ({"p": "0.05"}, "p"),
    ({"lookback": 1.0}, "lookback"),
])
def test_bad_types_name_the_field(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(InputError) as info:
        Mechanism(**kwargs)  # type: ignore[arg-type]
    _named(info, field)


def test_replace_checks_again_and_top_k_uses_it() -> None:
    mech = Mechanism(p=0.1, lookback=3)
    assert dataclasses.replace(mech, k=7, taxonomy="v1").lookback == 3
    with pytest.raises(InputError) as info:
        dataclasses.replace(mech, k=V1 + 1, taxonomy="v1")
    _named(info, "k")
    with pytest.raises(InputError) as info:  # top_k's profile size is the mechanism's k
        top_k(np.ones((2, V2)), k=0)
    _named(info, "k")
