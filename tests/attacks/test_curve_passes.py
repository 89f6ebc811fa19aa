"""The risk curve's cheaper passes give what the former ones gave.

- ``TopicTally`` (one compiled pass over the answers, strided views read in place) against
  NumPy's bincount, min and max of a contiguous copy;
- ``estimate_popularity`` and ``AsymmetricAttack.fit`` of a column suffix view against the
  same of its copy;
- ``outcomes_from_gains`` (scores computed beside each decision) against
  ``outcomes_from_counts(counts, subset_scores(gains))``, ties included;
- ``_suffix_counts`` (one halving per bit) against NumPy's reduction over 2^d columns.
"""

from __future__ import annotations

import numpy as np
import pytest

from topicslab.api import Mechanism
from topicslab.attacks import AsymmetricAttack, estimate_popularity, outcomes_from_counts
from topicslab.attacks.outcomes import outcomes_from_gains
from topicslab.attacks.popularity import TopicTally
from topicslab.attacks.protocol import _suffix_counts
from topicslab.attacks.scoring import subset_scores
from topicslab.errors import ParameterError


@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.int64])
@pytest.mark.parametrize("drop", [0, 1, 5])
def test_tally_matches_bincount_on_views(dtype: type, drop: int) -> None:
    rng = np.random.default_rng(drop)
    table = rng.integers(-1, 40, size=(700_003, 8)).astype(dtype)
    view = table[:, drop:]
    flat = np.ascontiguousarray(view).ravel()
    tally = TopicTally.of(view, 40)
    assert np.array_equal(tally.counts, np.bincount(flat[flat >= 0], minlength=40))
    assert tally.withheld == int((flat == -1).sum())
    assert (tally.low, tally.high) == (int(flat.min()), int(flat.max()))


def test_tally_reports_values_out_of_range() -> None:
    a = np.array([[3, -1], [7, 2]], dtype=np.int16)
    t = TopicTally.of(a, 5)  # 7 is no topic of 5: counted nowhere, seen as the largest
    assert t.high == 7 and t.low == -1 and t.counts.tolist() == [0, 0, 1, 1, 0]
    with pytest.raises(ParameterError, match="topic 7"):
        estimate_popularity(a, 5, 0.9, 0.01)
    with pytest.raises(ParameterError, match="topic -3"):
        estimate_popularity(np.array([-3, 1]), 5, 0.9, 0.01)


def test_tally_of_unsigned_words_past_int64() -> None:
    a = np.array([[3, 2**64 - 1]], dtype=np.uint64)
    assert TopicTally.of(a, 5).high == 2**64 - 1
    with pytest.raises(ParameterError, match=f"topic {2**64 - 1}"):
        estimate_popularity(a, 5, 0.9, 0.01)


def test_tally_of_no_answers() -> None:
    t = TopicTally.of(np.zeros((0, 4), dtype=np.int16), 10)
    assert t.counts.tolist() == [0] * 10 and t.withheld == 0
    p = estimate_popularity(np.zeros(0, dtype=np.int16), 10, 0.9, 0.01)
    assert p.shape == (10,) and np.isfinite(p).all()  # the pseudo-count alone


def test_popularity_and_fit_of_a_view_equal_those_of_its_copy() -> None:
    rng = np.random.default_rng(3)
    site1 = rng.integers(-1, 469, size=(50_000, 8)).astype(np.int16)
    mech = Mechanism()
    for c in range(1, 9):
        view = site1[:, 8 - c:]
        copy = np.ascontiguousarray(view)
        # the former estimator: float counts from the pseudo-count plus bincounts
        counts = 1.0 + np.bincount(copy[copy >= 0].ravel(), minlength=469)
        former = np.clip((counts / counts.sum() - mech.q_out) / (mech.q_in - mech.q_out),
                         1e-6, 1 - 1e-6)
        got = estimate_popularity(view, 469, mech.q_in, mech.q_out)
        assert np.array_equal(got, former)
        a, b = AsymmetricAttack(), AsymmetricAttack()
        a.fit(view, mech)
        b.fit(copy, mech)
        assert np.array_equal(a.w_match, b.w_match)
        assert np.array_equal(a.w_mismatch, b.w_mismatch)
        assert a.describe() == b.describe()


@pytest.mark.parametrize("r", [1, 2, 5, 8])
def test_outcomes_from_gains_equal_the_score_table(r: int) -> None:
    rng = np.random.default_rng(r)
    n_q = 3_000
    counts = rng.integers(0, 3, size=(n_q, 1 << r)) * (rng.random((n_q, 1 << r)) < 0.4)
    # few distinct gain values: many ties between match sets
    gains = rng.choice([0.5, 1.0, 1.0, 2.25, 3.0], size=(n_q, r))
    gains[::7] = 1.0  # the Hamming attack's
    masks = rng.integers(-1, 1 << r, size=n_q)
    want = outcomes_from_counts(counts, subset_scores(gains), masks)
    got = outcomes_from_gains(counts, gains, masks)
    assert np.array_equal(got.argmax_size, want.argmax_size)
    assert np.array_equal(got.in_argmax, want.in_argmax)
    assert np.array_equal(got.best_score, want.best_score)


def test_outcomes_from_gains_refuses_what_subset_scores_refuses() -> None:
    counts = np.ones((2, 4), dtype=np.int64)
    with pytest.raises(ParameterError, match="finite"):
        outcomes_from_gains(counts, np.array([[1.0, np.nan], [1.0, 1.0]]), np.zeros(2, int))
    with pytest.raises(ValueError, match="do not match"):
        outcomes_from_gains(counts, np.ones((2, 3)), np.zeros(2, int))


def test_suffix_counts_equal_the_reduction() -> None:
    rng = np.random.default_rng(9)
    counts = rng.integers(0, 1000, size=(257, 256))
    drops = [7, 0, 3, 5, 1, 2, 4, 6, 3]
    got = _suffix_counts(counts, drops)
    for d in drops:
        want = counts if d == 0 else counts.reshape(257, -1, 1 << d).sum(axis=2)
        assert np.array_equal(got[d], want)
