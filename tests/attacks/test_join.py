"""The joined engine (many queries) against the scanning engine and the brute-force
reference: the same match-set counts, slices and attack outcomes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import topicslab.attacks.protocol as protocol
from topicslab.attacks import brute_force_counts, join, match_set_counts
from topicslab.attacks.join import JoinedCounts, JoinTooLarge, prefer_join
from topicslab.population import generate


def _case(rng: np.random.Generator, n: int, n_q: int, r: int, alphabet: int,
          missing: float) -> tuple[np.ndarray, np.ndarray]:
    s1 = rng.integers(0, alphabet, size=(n, r)).astype(np.int16)
    s1[rng.random((n, r)) < missing] = -1
    # queries: noisy copies of site-1 rows (so large match sets occur) and random rows
    rows = rng.integers(0, max(n, 1), size=n_q)
    qs = (s1[rows].copy() if n else rng.integers(0, alphabet, size=(n_q, r)).astype(np.int16))
    flip = rng.random((n_q, r)) < 0.3
    qs[flip] = rng.integers(-1, alphabet, size=int(flip.sum()))
    return s1, qs


@pytest.mark.parametrize("matrix", [True, False])
@pytest.mark.parametrize("r", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("alphabet", [2, 7, 469])
def test_counts_equal_brute_force(r: int, alphabet: int, matrix: bool,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Both ways of reading the counts: the matrix of A_q(T) and the joined tables (the
    matrix only up to ``_MATRIX_BYTES``), with their slices."""
    if not matrix:
        monkeypatch.setattr(join, "_MATRIX_BYTES", 0)
    rng = np.random.default_rng(100 * r + alphabet)
    s1, qs = _case(rng, 400, 300, r, alphabet, missing=0.1)
    joined = JoinedCounts(s1, qs)
    assert (joined._matrix.shape[0] > 0) == matrix
    got = joined.counts()
    ref = brute_force_counts(s1, qs)
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(joined.counts(65, 201), ref[65:201])
    assert (got.sum(axis=1) == 400).all()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(0, 120), n_q=st.integers(0, 80), r=st.integers(1, 6),
       alphabet=st.integers(1, 5), missing=st.sampled_from([0.0, 0.2, 0.9]),
       seed=st.integers(0, 2**16))
def test_counts_equal_the_scanning_engine(n: int, n_q: int, r: int, alphabet: int,
                                          missing: float, seed: int) -> None:
    s1, qs = _case(np.random.default_rng(seed), n, n_q, r, alphabet, missing)
    joined = JoinedCounts(s1, qs)
    ref = match_set_counts(s1, qs)
    np.testing.assert_array_equal(joined.counts(), ref)
    lo, hi = n_q // 3, n_q - n_q // 4
    np.testing.assert_array_equal(joined.counts(lo, hi), ref[lo:hi])


def test_only_shared_projections_are_kept() -> None:
    # site 1 and the queries share exactly week 0's value 1 and the pair (1, 2)
    s1 = np.array([[1, 2], [1, 3], [0, 0]], dtype=np.int16)
    qs = np.array([[1, 2], [4, 4]], dtype=np.int16)
    joined = JoinedCounts(s1, qs)
    assert joined.shared == 3  # {w0 = 1}, {w1 = 2}, {w0 = 1, w1 = 2}
    np.testing.assert_array_equal(joined.counts(), brute_force_counts(s1, qs))
    np.testing.assert_array_equal(joined.counts(1, 2), [[3, 0, 0, 0]])


def test_bad_row_ranges_are_refused() -> None:
    joined = JoinedCounts(np.zeros((3, 2), np.int16), np.zeros((4, 2), np.int16))
    for lo, hi in ((-1, 2), (3, 2), (0, 5)):
        with pytest.raises(ValueError, match=r"outside 0\.\.4"):
            joined.counts(lo, hi)


def test_the_choice_follows_the_scans_it_saves() -> None:
    assert not prefer_join(1_000, 100, 4)
    assert prefer_join(1_000_000, 1_000_000, 4)
    assert prefer_join(1_000_000, 1_000_000, 8)
    assert not prefer_join(0, 1_000_000, 8)


def test_risk_is_the_same_with_either_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    data = generate(3000, 4, seed=7)
    results = {}
    for forced in (False, True):
        monkeypatch.setattr(join, "prefer_join", lambda *a, forced=forced: forced)
        curve = protocol.risk_curve(data, weeks=[1, 2, 4], targets="all", trials=2, seed=3,
                                    progress=False)
        results[forced] = [r.to_dict() for r in curve.results]
    for scanned, joined in zip(results[False], results[True], strict=True):
        for name in ("hamming", "asymmetric"):
            a, b = scanned["attacks"][name], joined["attacks"][name]
            assert a["expected_risk_mean"] == b["expected_risk_mean"]
            assert a["risk_mean"] == b["risk_mean"]
            assert a["expected_risk_mean"] > 0


def test_a_join_past_its_budget_stops_and_the_protocol_scans(
        monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    s1, qs = _case(rng, 500, 400, 4, 3, missing=0.0)
    with pytest.raises(JoinTooLarge, match="outgrow"):
        JoinedCounts(s1, qs, max_bytes=1000)
    assert JoinedCounts(s1, qs, max_bytes=1e9).shared > 0
    # the protocol falls back to the scanning engine: the same risks
    data = generate(2000, 3, seed=2)
    monkeypatch.setattr(join, "prefer_join", lambda *a: True)
    joined = protocol.risk_curve(data, weeks=[3], targets="all", trials=1, seed=1,
                                 progress=False).results[0].to_dict()

    real = join.JoinedCounts

    def tiny(*a: object, **k: object) -> JoinedCounts:
        return real(*a, **k, max_bytes=1000)  # type: ignore[arg-type, misc]

    monkeypatch.setattr(join, "JoinedCounts", tiny)
    scanned = protocol.risk_curve(data, weeks=[3], targets="all", trials=1, seed=1,
                                  progress=False).results[0].to_dict()
    assert joined["attacks"] == scanned["attacks"]


def test_the_matching_attack_is_the_same_with_either_engine(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from topicslab.attacks import MatchingOptions, measure_risk

    data = generate(1500, 3, seed=4)
    out = {}
    for forced in (False, True):
        monkeypatch.setattr(join, "prefer_join", lambda *a, forced=forced: forced)
        res = measure_risk(data, attacks=["hamming", "asymmetric"], weeks=3,
                           setting="matching", matching=MatchingOptions("assignment", 8),
                           trials=1, seed=2, progress=False)
        attacks = res.to_dict()["attacks"]
        for figures in attacks.values():  # all but the timings
            for trial in figures["matching"]["per_trial"]:
                trial.pop("seconds")
        out[forced] = attacks
    assert out[False] == out[True]
    assert out[True]["hamming"]["matching"]["per_trial"][0]["correct"] > 0


# ---- bad arguments of the public functions (round 36 of bad inputs) ------------------------


def test_unsigned_tables_are_counted_as_the_signed_ones() -> None:
    """An unsigned table was an OverflowError (``max(initial=-1)``), and uint64 beside an
    int64 table a float64 common type."""
    rng = np.random.default_rng(3)
    s1, qs = _case(rng, 200, 50, 3, 4, missing=0.0)
    qs = np.maximum(qs, 0)  # (an unsigned table has no -1)
    want = brute_force_counts(s1, qs)
    for a, b in ((s1.astype(np.uint8), qs.astype(np.uint8)), (s1.astype(np.uint64), qs),
                 (s1.astype(np.uint32), qs.astype(np.uint64))):
        np.testing.assert_array_equal(JoinedCounts(a, b).counts(), want)
    with pytest.raises(ValueError, match=r"categories must be below 2\^63"):
        JoinedCounts(np.full((3, 2), 2**63, np.uint64), np.zeros((2, 2), np.uint64))


@pytest.mark.parametrize("max_bytes", [float("nan"), -1, 0, "1e9", True])
def test_a_bad_budget_is_refused(max_bytes: object) -> None:
    """NaN was no budget at all, -1 "outgrow -0.0 GiB", text a TypeError."""
    from topicslab.errors import ParameterError

    with pytest.raises(ParameterError, match="max_bytes must be"):
        JoinedCounts(np.zeros((3, 2), np.int16), np.zeros((2, 2), np.int16),
                     max_bytes=max_bytes)  # type: ignore[arg-type]


@pytest.mark.parametrize(("lo", "hi"), [(True, 2), ("0", 2), (0.5, 2), (0, 2.0)])
def test_rows_that_are_not_integers_are_refused(lo: object, hi: object) -> None:
    """``counts(True, 2)`` was rows 1..2; ``"0"`` a TypeError of the comparison."""
    from topicslab.errors import ParameterError

    joined = JoinedCounts(np.zeros((3, 2), np.int16), np.zeros((4, 2), np.int16))
    with pytest.raises(ParameterError, match=r"(lo|hi) must be an integer"):
        joined.counts(lo, hi)  # type: ignore[arg-type]
    assert joined.counts(np.int32(1), np.int64(2)).shape == (1, 4)


@pytest.mark.parametrize(("args", "field"), [((-5, 10, 3), "n_users"),
                                             ((10, -1, 3), "n_queries"),
                                             ((10, 10, -1), "weeks"), ((10, 10, 17), "weeks"),
                                             ((10.5, 10, 3), "n_users"),
                                             (("10", 10, 3), "n_users")])
def test_prefer_join_checks_its_counts(args: tuple[object, ...], field: str) -> None:
    """weeks -1 was "negative shift count", 1000 True, a negative count False."""
    from topicslab.errors import ParameterError

    with pytest.raises(ParameterError, match=f"{field} must be"):
        prefer_join(*args)  # type: ignore[arg-type]


def test_count_chunks_takes_lists_and_checks_progress() -> None:
    """Lists were an AttributeError ('list' object has no attribute 'shape'); progress="no"
    was taken where the join was not chosen."""
    from topicslab.errors import ParameterError

    s1 = [[1, 2], [1, 3], [0, 0]]
    qs = [[1, 2], [4, 4]]
    [(lo, hi, counts)] = list(join.count_chunks(s1, qs))  # type: ignore[arg-type]
    assert (lo, hi) == (0, 2)
    np.testing.assert_array_equal(counts, brute_force_counts(np.array(s1), np.array(qs)))
    with pytest.raises(ParameterError, match="progress must be True or False"):
        join.count_chunks(np.array(s1), np.array(qs), progress="no")  # type: ignore[arg-type]


def test_the_dense_singletons_and_pairs_count_as_the_hash_tables(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A small alphabet's singletons and pairs are counted in dense arrays; the same counts
    (and shared projections) as the hash tables give, at r = 6 with missing weeks."""
    from topicslab.attacks import engine

    rng = np.random.default_rng(606)
    s1, qs = _case(rng, 3000, 2500, 6, 12, missing=0.1)
    qs[:30, 2] = 14  # past every site-1 category
    monkeypatch.setattr(join, "_MATRIX_BYTES", 0)  # (the tables read the dense arrays)
    dense = JoinedCounts(s1, qs)
    assert dense._values == 15 and dense._pairs.shape == (15, 225)
    monkeypatch.setattr(join, "_MATRIX_BYTES", 512 << 20)
    with_matrix = JoinedCounts(s1, qs)
    assert with_matrix._values == 15 and with_matrix._matrix.shape == (64, 2500)
    np.testing.assert_array_equal(with_matrix.counts(), match_set_counts(s1, qs))
    assert with_matrix.shared == dense.shared
    monkeypatch.setattr(join, "_MATRIX_BYTES", 0)
    monkeypatch.setattr(engine, "_DIRECT_BYTES", 0)
    hashed = JoinedCounts(s1, qs)
    assert hashed._values == 0
    np.testing.assert_array_equal(dense.counts(), hashed.counts())
    np.testing.assert_array_equal(dense.counts(), match_set_counts(s1, qs))
    assert dense.shared == hashed.shared
