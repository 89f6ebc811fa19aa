"""Contribution bounding makes the L2 sensitivities of Dick et al. §4.2 (Lemma) true."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topicslab.dp import bound_contributions, pair_counts
from topicslab.errors import InputError

M = 12


@st.composite
def datasets(draw):
    weeks = draw(st.integers(1, 3))
    width = draw(st.integers(1, 8))
    n = draw(st.integers(0, 6))
    # values in -1..M-1: empties, duplicates and over-long weeks all occur
    cells = st.integers(-1, M - 1)
    data = draw(st.lists(st.lists(st.lists(cells, min_size=width, max_size=width),
                                  min_size=weeks, max_size=weeks), min_size=n, max_size=n))
    extra = draw(st.lists(st.lists(cells, min_size=width, max_size=width),
                          min_size=weeks, max_size=weeks))
    k = draw(st.integers(2, 5))
    seed = draw(st.integers(0, 2**31))
    arr = np.array(data, dtype=np.int16).reshape(n, weeks, width)
    return arr, np.array(extra, dtype=np.int16)[None], k, seed


@settings(max_examples=120, deadline=None)
@given(datasets())
def test_adding_a_user_moves_counts_by_exactly_the_claimed_l2(case):
    sets, extra, k, seed = case
    n = sets.shape[0]
    both = np.concatenate([sets, extra])
    b0, _ = bound_contributions(sets, M, k=k, bound="truncate", seed=seed)
    b1, _ = bound_contributions(both, M, k=k, bound="truncate", seed=seed)
    # keyed padding: the existing users are bounded identically with or without the new one
    np.testing.assert_array_equal(b0, b1[:n])
    c0, c1 = pair_counts(b0, M), pair_counts(b1, M)
    for w in range(sets.shape[1]):
        diff = c1.within[w] - c0.within[w]
        assert set(np.unique(diff)) <= {0, 1}
        assert math.isclose(np.linalg.norm(diff), math.sqrt(math.comb(k, 2)))
        assert not np.tril(diff).any()
    for w in range(sets.shape[1] - 1):
        diff = c1.across[w] - c0.across[w]
        assert set(np.unique(diff)) <= {0, 1}
        assert math.isclose(np.linalg.norm(diff), k)


def test_bounded_rows_are_k_distinct_sorted():
    rng = np.random.default_rng(3)
    sets = rng.integers(-1, M, size=(200, 3, 7)).astype(np.int16)
    sets[5, 1] = -1  # a missing week
    b, rep = bound_contributions(sets, M, k=5, bound="truncate", seed=1)
    assert b.shape == (200, 3, 5)
    assert (np.diff(b, axis=-1) > 0).all() and (b >= 0).all() and (b < M).all()
    assert rep.weeks_missing >= 1 and rep.duplicates_removed > 0 and rep.weeks_truncated > 0
    # truncation keeps the k lowest ids of the row
    row = np.unique(sets[0, 0][sets[0, 0] >= 0])
    if row.size >= 5:
        np.testing.assert_array_equal(b[0, 0], row[:5])


def test_padding_is_uniform_over_missing_topics():
    sets = np.full((20000, 1, 5), -1, dtype=np.int16)
    b, _ = bound_contributions(sets, M, k=2, seed=9)
    freq = np.bincount(b.ravel(), minlength=M) / b.size
    assert np.abs(freq - 1 / M).max() < 5 * math.sqrt((1 / M) / b.size) + 1e-3


def test_over_long_week_is_rejected_naming_user_and_week():
    sets = np.array([[[0, 1, 2, 3, 4], [0, 1, 2, 3, 4]],
                     [[0, 1, 2, 3, 4], [0, 1, 2, 3, 4, ]]], dtype=np.int16)
    wide = np.concatenate([sets, np.full((2, 2, 1), -1, dtype=np.int16)], axis=2)
    wide[1, 1, 5] = 7
    with pytest.raises(InputError) as exc:
        bound_contributions(wide, M, k=5, user_ids=np.array([10, 42]))
    msg = str(exc.value)
    # the second user is data row 2 (rows are 1-based)
    assert "row 2" in msg and "epoch_1_topics" in msg and "user 42" in msg and "week 1" in msg


def test_out_of_range_topic_is_an_input_error():
    with pytest.raises(InputError, match="out of range"):
        bound_contributions(np.array([[[0, 1, M]]]), M, k=2)


@pytest.mark.parametrize("rows", [[[1, 3, 2]], [[1, 2, 2]], [[-1, 2, 3]], [[1, 2, 40]]])
def test_pair_counts_refuse_sets_that_are_not_bounded(rows: list[list[int]]) -> None:
    """Unsorted, repeated, empty or out-of-range slots are refused (the check runs without
    copies of the sets since 2026-11-26; a bounded week is counted)."""
    good = np.array([[[1, 2, 3], [4, 5, 6]]], dtype=np.int16)
    bad = np.concatenate([good, np.array([[rows[0], [4, 5, 6]]], dtype=np.int16)])
    with pytest.raises(ValueError, match="bounded sets"):
        pair_counts(bad, 40)
    assert int(pair_counts(good, 40).within.sum()) == 6
