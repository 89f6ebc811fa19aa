"""The Topics API's parameters in QIF (m, s, r, epochs): checked once by ``ReportingChannel``
and ``check_epochs``; every bad value a ``QIFParameterError`` naming its field."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topicslab import qif
from topicslab.datamodel import TopicSets
from topicslab.errors import InputError, ParameterError
from topicslab.taxonomy import resolve

_FAST = settings(max_examples=60, deadline=None)


def _named(info: pytest.ExceptionInfo[Exception], field: str) -> None:
    assert isinstance(info.value, qif.QIFParameterError)
    assert isinstance(info.value, qif.QIFError) and isinstance(info.value, ParameterError)
    assert isinstance(info.value, InputError) and info.value.field == field


@_FAST
@given(s=st.integers(1, qif.MAX_SET_SIZE), extra=st.integers(0, qif.MAX_TOPICS),
       r=st.floats(0.0, 1.0))
def test_every_valid_channel_is_accepted(s: int, extra: int, r: float) -> None:
    m = min(qif.MAX_TOPICS, s + extra)
    ch = qif.ReportingChannel(m, s, r)
    assert (ch.m, ch.s, ch.r) == (m, s, r)
    assert math.isfinite(ch.p) and ch.p >= ch.q >= 0


@_FAST
@given(m=st.one_of(st.integers(max_value=4), st.integers(min_value=qif.MAX_TOPICS + 1)))
def test_every_m_outside_its_range_names_m(m: int) -> None:
    with pytest.raises(qif.QIFError) as info:
        qif.check_params(m, 5, 0.05)
    _named(info, "m")


@_FAST
@given(s=st.one_of(st.integers(max_value=0), st.integers(min_value=qif.MAX_SET_SIZE + 1)))
def test_every_s_outside_its_range_names_s(s: int) -> None:
    with pytest.raises(qif.QIFError) as info:
        qif.ReportingChannel(qif.MAX_TOPICS, s, 0.05)
    _named(info, "s")


@_FAST
@given(r=st.one_of(st.floats(max_value=0.0, exclude_max=True),
                   st.floats(min_value=1.0, exclude_min=True), st.just(math.nan)))
def test_every_r_outside_zero_one_names_r(r: float) -> None:
    with pytest.raises(qif.QIFError) as info:
        qif.ReportingChannel(469, 5, r)
    _named(info, "r")


@_FAST
@given(k=st.integers(-5, qif.MAX_EPOCHS + 5))
def test_epochs(k: int) -> None:
    if 1 <= k <= qif.MAX_EPOCHS:
        assert qif.check_epochs(k) == [k]
        assert math.isfinite(qif.multi_epoch_max_case_capacity(469, 5, 0.05, k))
    else:
        with pytest.raises(qif.QIFError) as info:
            qif.check_epochs(k)
        _named(info, "epochs")


def test_epoch_lists_and_types() -> None:
    assert qif.check_epochs(range(1, 4)) == [1, 2, 3]
    for bad in ([], list(range(1, qif.MAX_EPOCHS + 2)), [1.5], [True]):
        with pytest.raises(qif.QIFError) as info:
            qif.check_epochs(bad)
        _named(info, "epochs")
    for field, args in (("m", (469.0, 5, 0.05)), ("s", (469, "5", 0.05)),
                        ("r", (469, 5, "0.05"))):
        with pytest.raises(qif.QIFError) as info:
            qif.ReportingChannel(*args)  # type: ignore[arg-type]
        _named(info, field)


def test_the_range_keeps_the_capacities_finite_and_printable() -> None:
    """At the corners of the range the App. C capacities stay finite (10^8 topics over 40
    epochs overflowed) and C(m, s) prints (s = 10^8 never finished)."""
    m, s = qif.MAX_TOPICS, qif.MAX_SET_SIZE
    assert math.isfinite(qif.multi_epoch_capacity(m, 1, 0.05, qif.MAX_EPOCHS))
    assert len(str(qif.ReportingChannel(m, s, 0.05).n_sets)) < 4300
    rows = qif.parameter_table(m, 1, 0.05, [1, qif.MAX_EPOCHS])
    assert all(math.isfinite(float(row["bayes_capacity"])) for row in rows)


def test_m_below_the_datas_taxonomy_names_m() -> None:
    tax = resolve("v1")
    sets = np.zeros((3, 1, 5), dtype=np.int16) + np.arange(5, dtype=np.int16)
    data = TopicSets(sets, tax)
    assert qif.population_tables(data, m=tax.size).m == tax.size
    with pytest.raises(qif.QIFError, match=f"{tax.size} topics") as info:
        qif.population_tables(data, m=tax.size - 1)
    _named(info, "m")


@_FAST
@given(users=st.integers(1, 10**8), m=st.integers(5, qif.MAX_TOPICS),
       epochs=st.integers(1, 8))
def test_tables_memory(users: int, m: int, epochs: int) -> None:
    need = qif.tables_memory(users, m, epochs, 5)
    assert need >= 64 * users
    if epochs == 1:
        assert need >= 24 * m * m  # the IBA co-occurrence tables
    else:
        # per user its sets, codes and the channels the four configurations share; per
        # thread two (m + 1)^2 slice tables (the exact sums visit cells, they do not store
        # them); at least what was measured at 10M users × 3 epochs × 5 slots (2.66 GB
        # before the int16 indices, 1.92 GB since)
        assert need <= users * (epochs * 100 + 96) + 1024 * (m + 1) ** 2
        assert need >= users * epochs * 5 * 17.7
