"""The exact engine against the brute-force reference: counts, argmax sets, outcomes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from topicslab.attacks import (
    MatchSetCounter,
    argmax_members,
    brute_force_counts,
    brute_force_members,
    brute_force_outcomes,
    match_masks,
    match_set_counts,
    outcomes_from_counts,
    subset_scores,
)


def _random_case(rng: np.random.Generator, *, n: int, r: int, alphabet: int, n_q: int,
                 missing: float = 0.1, dtype: type = np.int16):
    s1 = rng.integers(0, alphabet, size=(n, r)).astype(dtype)
    s1[rng.random((n, r)) < missing] = -1
    # half the queries are noisy copies of site-1 rows (true users), half are random
    rows = rng.integers(0, n, size=n_q)
    qs = s1[rows].copy()
    flip = rng.random((n_q, r)) < 0.4
    qs[flip] = rng.integers(-1, alphabet, size=int(flip.sum()))
    return s1, qs, rows.astype(np.int64)


def _check_all(s1, qs, rows, gains_list):
    counts = match_set_counts(s1, qs)
    ref = brute_force_counts(s1, qs)
    np.testing.assert_array_equal(counts, ref)
    assert (counts.sum(axis=1) == s1.shape[0]).all()
    true_masks = match_masks(s1[rows], qs)
    scores = [subset_scores(g) for g in gains_list]
    brute = brute_force_outcomes(s1, qs, scores, true_masks)
    for sc, b in zip(scores, brute, strict=True):
        ex = outcomes_from_counts(counts, sc, true_masks)
        np.testing.assert_array_equal(ex.argmax_size, b.argmax_size)
        np.testing.assert_array_equal(ex.in_argmax, b.in_argmax)
        np.testing.assert_array_equal(ex.best_score, b.best_score)
        np.testing.assert_array_equal(ex.expected(), b.expected())
        # identical argmax *sets*, not only sizes
        eq, eu = argmax_members(s1, qs, counts, sc)
        bq, bu = brute_force_members(s1, qs, sc)
        np.testing.assert_array_equal(eq, bq)
        np.testing.assert_array_equal(eu, bu)
        np.testing.assert_array_equal(np.bincount(eq, minlength=len(qs)), ex.argmax_size)
        # the true user is in its argmax set exactly when the outcome says so
        member = {(int(q), int(u)) for q, u in zip(eq, eu, strict=True)}
        inside = np.array([(q, int(rows[q])) in member for q in range(len(qs))])
        np.testing.assert_array_equal(inside, ex.in_argmax)


@pytest.mark.parametrize(
    ("n", "r", "alphabet", "n_q"),
    [
        (500, 1, 3, 40),      # r = 1, tiny alphabet: huge ties
        (400, 2, 2, 30),      # binary categories
        (300, 4, 1, 20),      # a single category: everyone ties with everyone
        (800, 4, 6, 60),
        (600, 6, 3, 50),
        (200, 8, 4, 25),
        (150, 10, 2, 10),
    ],
)
def test_exact_matches_brute_force(n, r, alphabet, n_q):
    rng = np.random.default_rng(1000 * r + alphabet)
    s1, qs, rows = _random_case(rng, n=n, r=r, alphabet=alphabet, n_q=n_q)
    hamming = np.ones(qs.shape)
    weighted = rng.choice([0.5, 1.0, 1.5, 2.0], size=qs.shape)  # many exact score ties
    signed = rng.normal(size=qs.shape)  # negative gains: the empty match set can win
    _check_all(s1, qs, rows, [hamming, weighted, signed])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 60), r=st.integers(1, 5), alphabet=st.integers(1, 4),
       n_q=st.integers(1, 12), seed=st.integers(0, 2**31 - 1),
       missing=st.sampled_from([0.0, 0.3]))
def test_exact_matches_brute_force_property(n, r, alphabet, n_q, seed, missing):
    rng = np.random.default_rng(seed)
    s1, qs, rows = _random_case(rng, n=n, r=r, alphabet=alphabet, n_q=n_q, missing=missing)
    gains = [np.ones(qs.shape), rng.integers(0, 3, size=qs.shape).astype(float)]
    _check_all(s1, qs, rows, gains)


@pytest.mark.parametrize(("r", "alphabet"), [(8, 469), (10, 100)])
def test_exact_and_hashed_keys_in_one_scan(r, alphabet):
    """Subsets of up to ``63 // bits`` weeks carry exact keys (no hit verified against a
    query), the longer ones hashed keys: the Topics API's 469 topics at eight weeks (9 bits:
    the eight-week subset is hashed), and 100 values at ten weeks (7 bits: ten hashed)."""
    from topicslab.attacks.engine import exact_key

    bits = alphabet.bit_length()  # values v + 1 in 1..alphabet
    assert exact_key(r - 1, bits) and not exact_key(r, bits)
    rng = np.random.default_rng(r)
    s1, qs, rows = _random_case(rng, n=3000, r=r, alphabet=alphabet, n_q=80, missing=0.0)
    qs[:40] = s1[rows[:40]]  # noiseless queries: the full set matches (hashed key)
    # copies of those users with the last week changed: matches on the first r - 1 weeks
    # exactly (an exact key), and with the first week changed
    s1[-40:] = s1[rows[:40]]
    s1[-40:, r - 1] = (s1[-40:, r - 1] + 1) % alphabet
    s1[-80:-40] = s1[rows[:40]]
    s1[-80:-40, 0] = (s1[-80:-40, 0] + 1) % alphabet
    s1[rng.random(s1.shape) < 0.02] = -1  # a few missing weeks, which never match
    counts = match_set_counts(s1, qs)
    assert (counts[:40, (1 << r) - 1] > 0).sum() >= 20
    assert (counts[:40, (1 << (r - 1)) - 1] > 0).sum() >= 20
    _check_all(s1, qs, rows, [np.ones(qs.shape)])


def test_large_categories_and_dtypes():
    """Generic sequences: categories far beyond 16 bits, int64 site 1, int32 queries."""
    rng = np.random.default_rng(7)
    s1, qs, rows = _random_case(rng, n=700, r=3, alphabet=5, n_q=30, dtype=np.int64)
    s1 = np.where(s1 >= 0, s1 * 1_000_003 + 2**40, -1)
    qs32 = np.where(qs >= 0, qs, -1).astype(np.int32)  # these never match (different ids)
    assert (match_set_counts(s1, qs32)[:, 0] == 700).all()
    qs = np.where(qs >= 0, qs * 1_000_003 + 2**40, -1)
    _check_all(s1, qs, rows, [np.ones(qs.shape)])


def test_chunking_does_not_change_counts():
    rng = np.random.default_rng(3)
    s1, qs, _ = _random_case(rng, n=1000, r=5, alphabet=4, n_q=97)
    whole = match_set_counts(s1, qs)
    for chunk in (1, 7, 50, 1000):
        np.testing.assert_array_equal(match_set_counts(s1, qs, query_chunk=chunk), whole)
    counter = MatchSetCounter(s1)
    np.testing.assert_array_equal(counter.counts(qs[:10]), whole[:10])


def test_identical_users_tie_exactly():
    """Twenty identical site-1 traces: the argmax set has all of them, expected = 1/20."""
    s1 = np.zeros((50, 4), dtype=np.int16)
    s1[:20] = [1, 2, 3, 4]
    s1[20:] = np.arange(30 * 4).reshape(30, 4) + 10
    qs = np.array([[1, 2, 3, 4], [1, 2, 9, 9], [-1, -1, -1, -1]], dtype=np.int16)
    counts = match_set_counts(s1, qs)
    out = outcomes_from_counts(counts, subset_scores(np.ones(qs.shape)),
                               np.array([15, 3, 0]))
    np.testing.assert_array_equal(out.argmax_size, [20, 20, 50])
    np.testing.assert_array_equal(out.in_argmax, [True, True, True])
    np.testing.assert_allclose(out.expected(), [1 / 20, 1 / 20, 1 / 50])
    assert out.best_score.tolist() == [4.0, 2.0, 0.0]


def test_sampled_success_matches_expectation():
    """The random tie-break is a Bernoulli(1/|argmax|) draw (z = 5 binomial bound)."""
    from topicslab.attacks import TargetOutcomes

    size = np.full(200_000, 4, dtype=np.int64)
    inside = np.ones(200_000, dtype=bool)
    inside[::2] = False
    out = TargetOutcomes(size, inside, np.zeros(200_000))
    hits = out.sample(np.random.default_rng(11))
    assert not hits[~inside].any()
    p, n = 0.25, int(inside.sum())
    assert abs(hits.sum() - p * n) <= 5 * np.sqrt(n * p * (1 - p))


@pytest.mark.parametrize(
    ("site1", "queries", "message"),
    [
        (np.zeros((3,), np.int16), np.zeros((1, 1), np.int16), "2-D"),
        (np.zeros((3, 2), np.int16), np.zeros((1, 3), np.int16), "weeks"),
        (np.zeros((3, 0), np.int16), np.zeros((1, 0), np.int16), "1..16"),
        (np.zeros((3, 17), np.int16), np.zeros((1, 17), np.int16), "1..16"),
        (np.zeros((3, 2)), np.zeros((1, 2)), "integer"),
        (np.full((3, 2), -2, np.int16), np.zeros((1, 2), np.int16), ">= 0"),
        (np.zeros((3, 2), np.int16), np.full((1, 2), -5, np.int16), ">= 0"),
    ],
)
def test_bad_input(site1, queries, message):
    with pytest.raises(ValueError, match=message):
        match_set_counts(site1, queries)


def test_chunk_cells_bound_tables_and_counters():
    from topicslab.attacks.engine import MatchSetCounter, chunk_cells

    assert chunk_cells(1) == chunk_cells(2) == chunk_cells(8) == 1 << 22  # the tables' bound
    assert chunk_cells(16) == 1 << 21 and chunk_cells(32) == chunk_cells(256) == 1 << 20
    # counters (one per slot and thread) stay bounded as threads grow, until the floor
    assert all(t * chunk_cells(t) <= 1 << 25 for t in (2, 4, 8, 16, 32))
    counter = MatchSetCounter(np.zeros((10, 4), dtype=np.int16))
    assert counter.chunk == chunk_cells() >> 4


def test_dense_slot_arrays_count_as_the_hash_tables_over_many_blocks(monkeypatch):
    """The singletons' and pairs' dense slot arrays (a small alphabet) give the hash
    tables' counts, over more users than one block of the scan holds (2^19 per thread),
    with queries holding categories site 1 never shows and missing weeks."""
    from topicslab.attacks import engine

    rng = np.random.default_rng(19)
    n, r = 1_200_000, 3
    s1 = rng.integers(0, 40, size=(n, r)).astype(np.int16)
    s1[rng.random((n, r)) < 0.05] = -1
    rows = rng.integers(0, n, size=300)
    qs = s1[rows].copy()
    qs[:20, 1] = 45  # past every site-1 category: the dense arrays are that much wider
    qs[20:40, 2] = -1
    assert engine._direct_values(r, 45) == 46  # (the dense path is taken)
    dense = match_set_counts(s1, qs)
    monkeypatch.setattr(engine, "_DIRECT_BYTES", 0)
    assert engine._direct_values(r, 45) == 0
    hashed = match_set_counts(s1, qs)
    np.testing.assert_array_equal(dense, hashed)
    assert (dense.sum(axis=1) == n).all()
    # and both equal the brute-force counts on a slice small enough to compare every pair
    np.testing.assert_array_equal(match_set_counts(s1[:5000], qs[:50]),
                                  brute_force_counts(s1[:5000], qs[:50]))


def test_the_dense_arrays_are_left_to_large_alphabets_hash_tables():
    from topicslab.attacks.engine import _DIRECT_BYTES, _direct_values

    assert _direct_values(8, 468) == 469  # the v2 taxonomy at eight weeks: 24.6 MB
    assert 28 * 469 * 469 * 4 <= _DIRECT_BYTES
    assert _direct_values(8, 5000) == 0 and _direct_values(4, -1) == 0
