"""``TopicSets.validate`` checks a large table in blocks of users (its masks no longer cover
the whole table at once): the rows it names and the order of its checks are unchanged."""

from __future__ import annotations

import numpy as np
import pytest

from topicslab.datamodel import TopicSets
from topicslab.errors import InputError
from topicslab.taxonomy import resolve

N = (1 << 20) + 1000  # past the first block


def _sets() -> TopicSets:
    s = np.empty((N, 1, 2), dtype=np.int16)
    s[:, 0, 0], s[:, 0, 1] = 3, 7
    return TopicSets(s, resolve("v2"))


def test_a_valid_table_passes() -> None:
    _sets().validate()


def test_rows_past_the_first_block_are_named() -> None:
    bad = _sets()
    bad.sets[N - 10, 0, 1] = 2  # out of order
    with pytest.raises(InputError, match="sorted") as info:
        bad.validate()
    assert info.value.row == N - 10


def test_a_range_error_anywhere_comes_before_an_order_error() -> None:
    bad = _sets()
    bad.sets[5, 0, 1] = 2  # out of order, first block
    bad.sets[N - 1, 0, 1] = 9999  # out of range, second block
    with pytest.raises(InputError, match="out of range") as info:
        bad.validate()
    assert info.value.row == N - 1
