"""The product channel's exact sums against brute force over every output (small m)."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest

from topicslab import qif
from topicslab.qif.product_channel import max_sums, topics_channel


def _random_sets(rng: np.random.Generator, n: int, k: int, m: int, s: int,
                 avoid_last: bool) -> np.ndarray:
    sets = np.full((n, k, s), -1, dtype=np.int16)
    pool = m - 1 if avoid_last else m  # leave a topic nobody holds: a collapsed index
    for u in range(n):
        for i in range(k):
            size = int(rng.integers(1, s + 1))
            sets[u, i, :size] = rng.choice(pool, size, replace=False)
    return sets


def _brute(sets: np.ndarray, m: int, cin: np.ndarray, beta: np.ndarray, w: np.ndarray,
           alpha: np.ndarray) -> tuple[float, float, float]:
    """Σ_t max_u v_u, Σ_t (1 − Π_u (1 − v_u/w_u)), −Σ_t v̄ log v̄ (v̄ = mean of v_u/w_u)."""
    n, k, _ = sets.shape
    top = none = ent = 0.0
    for t in itertools.product(range(m), repeat=k):
        f = np.array([[cin[u, i] * alpha[i, t[i]] if t[i] in sets[u, i] else beta[i, t[i]]
                       for i in range(k)] for u in range(n)]).prod(axis=1)
        top += float((w * f).max())
        none += 1.0 - float(np.prod(1.0 - f))
        mean = float(f.mean())
        ent -= mean * math.log(mean) if mean > 0 else 0.0
    return top, none, ent


@pytest.mark.parametrize("seed", range(10))
def test_sums_match_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, k, m, s = int(rng.integers(1, 7)), 1 + seed % 5, int(rng.integers(3, 6)), 2
    if k >= 4:
        m = 3
    sets = _random_sets(rng, n, k, m, s, avoid_last=seed % 2 == 1)
    q = 0.05 / m
    cin = 0.95 / (sets >= 0).sum(axis=2) + q
    w = rng.random(n) + 0.1
    ch = topics_channel(sets, m, cin, q)
    top, none, ent = _brute(sets, m, cin, np.full((k, m), q), w, np.ones((k, m)))
    assert ch.max_sum(w) == pytest.approx(top, rel=1e-12)
    assert ch.none_sum() == pytest.approx(none, rel=1e-12)
    assert ch.entropy() == pytest.approx(ent, rel=1e-12)
    assert ch.cells <= m**k


@pytest.mark.parametrize("seed", range(4))
def test_per_topic_values_match_brute_force(seed: int) -> None:
    """Topic-dependent values (Lemma 2's posterior): nothing is collapsed, still exact."""
    rng = np.random.default_rng(100 + seed)
    n, k, m = 5, 2 + seed % 3, 4
    sets = _random_sets(rng, n, k, m, 1, avoid_last=False)
    beta = rng.random((k, m)) * 0.01 + 0.001
    alpha = rng.random((k, m)) + 0.5
    w = rng.random(n) + 0.1
    ch = topics_channel(sets, m, np.ones((n, k)), beta, alpha=alpha)
    top, _, _ = _brute(sets, m, np.ones((n, k)), beta, w, alpha)
    assert ch.max_sum(w) == pytest.approx(top, rel=1e-12)
    with pytest.raises(qif.QIFError, match="topic-independent"):
        ch.none_sum()


def test_collapsing_and_cells() -> None:
    """Topics nobody holds share one index; the cell count says what an exact sum visits."""
    sets = np.array([[[0, 1], [2, -1], [3, 4]]], dtype=np.int16)
    ch = topics_channel(sets, 469, 0.5, 1e-4)
    assert ch.dims.tolist() == [3, 2, 3] and ch.cells == 18
    assert ch.mult[0, :3].tolist() == [1.0, 1.0, 467.0]
    # one user: Σ_t v(t) = w Π_i (|σ_i| cin + (m − |σ_i|) q), every output its own
    expect = (2 * 0.5 + 467e-4) * (0.5 + 468e-4) * (2 * 0.5 + 467e-4)
    assert ch.max_sum([1.0]) == pytest.approx(expect, rel=1e-12)


def test_bad_channels() -> None:
    with pytest.raises(qif.QIFError, match="every user must hold"):
        topics_channel(np.array([[[0], [-1]]]), 5, 0.5, 0.1)
    with pytest.raises(qif.QIFError, match="outside"):
        topics_channel(np.array([[[7]]]), 5, 0.5, 0.1)
    ch = topics_channel(np.array([[[0]], [[1]]]), 5, 0.5, 0.1)
    with pytest.raises(qif.QIFError, match="one finite"):
        ch.max_sum([1.0])
    with pytest.raises(qif.QIFError, match="at least as likely"):
        topics_channel(np.array([[[0]]]), 5, 0.01, 0.1).max_sum([1.0])


def test_three_epochs_of_the_full_taxonomy_are_exact() -> None:
    """The default limit covers 3 epochs over 469 topics (1e8 cells): no bounds left."""
    rng = np.random.default_rng(7)
    n, m = 3_000, 469
    raw = np.sort(np.stack([np.stack([rng.choice(m, 5, replace=False) for _ in range(3)])
                            for _ in range(n)]), axis=2).astype(np.int16)
    t = qif.population_tables(raw, m=m, weeks=[0, 1, 2], r=0.05)
    assert t.leak_topics is not None and t.post_reporting is not None and not t.bounds
    # distinct random profiles: each user is re-identified about as often as the
    # three-answer channel allows, and never more than the n profiles
    assert 1.0 < t.leak_topics <= n


def test_holder_lists_are_a_stable_sort_of_the_slots() -> None:
    """The counting sort fills each (position, topic) list in ascending user order, as a
    stable argsort of the flattened slots by topic does (the definition it replaced)."""
    from topicslab.qif.product_channel import _inverted_lists

    rng = np.random.default_rng(3)
    sets = _random_sets(rng, 200, 4, 9, 3, avoid_last=True)
    ch = topics_channel(sets, 9, 0.5, 0.01)
    p = ch.positions - 2
    ptr, users = _inverted_lists(ch.local, ch.dims, p)
    width = int(ch.dims.max()) + 1
    offset = 0
    for i in range(p):
        topics = ch.local[:, i, :].ravel().astype(np.int64)
        owner = np.repeat(np.arange(ch.users), ch.local.shape[2])
        keep = topics >= 0
        order = np.argsort(topics[keep], kind="stable")
        expect = owner[keep][order]
        starts = np.concatenate([[0], np.cumsum(np.bincount(topics[keep],
                                                            minlength=width - 1))]) + offset
        assert ptr[i * width:i * width + starts.size].tolist() == starts.tolist()
        assert users[offset:offset + expect.size].tolist() == expect.tolist()
        offset += expect.size
    assert users.size == offset and users.dtype == np.int32


def test_max_sums_share_values_and_weights() -> None:
    """Configurations given the same arrays share one row of them and give the values of
    configurations given equal copies."""
    rng = np.random.default_rng(5)
    sets = _random_sets(rng, 30, 3, 6, 2, avoid_last=False)
    sizes = (sets >= 0).sum(axis=2)
    w1, w2 = np.ones(30), rng.random(30) + 0.1
    c0, c1 = 1.0 / sizes, 0.9 / sizes + 0.1 / 6
    base = topics_channel(sets, 6, c0, 1e-9)
    alt = dataclasses.replace(base, cin=c1, beta=np.where(base.mult > 0, 0.1 / 6, 0.0))
    shared = max_sums([(base, w1), (alt, w1), (base, w2), (alt, w2)])
    copies = max_sums([(dataclasses.replace(base, cin=c0.copy()), w1.copy()),
                           (dataclasses.replace(alt, cin=c1.copy()), w1.copy()),
                           (dataclasses.replace(base, cin=c0.copy()), w2.copy()),
                           (dataclasses.replace(alt, cin=c1.copy()), w2.copy())])
    assert shared == copies
    assert shared == [base.max_sum(w1), alt.max_sum(w1), base.max_sum(w2), alt.max_sum(w2)]


@pytest.mark.parametrize("positions", [1, 2, 3])
def test_coded_values_give_the_dense_values_sums(positions: int) -> None:
    """Values coded by set size (``cin_codes``, the QIF tables' memory saving) give the same
    maxima, sums and entropy as the same values written out per user and position."""
    rng = np.random.default_rng(11 + positions)
    sets = _random_sets(rng, 40, positions, 6, 3, avoid_last=False)
    sizes = (sets >= 0).sum(axis=2).astype(np.int8)
    table = 0.9 / np.arange(4, dtype=np.float64).clip(min=1) + 0.1 / 6
    dense = topics_channel(sets, 6, table[sizes], 0.1 / 6)
    coded = topics_channel(sets, 6, table, 0.1 / 6, cin_codes=sizes)
    assert np.array_equal(coded.dense_cin(), dense.dense_cin())
    assert np.array_equal(coded.cin_min(), dense.cin_min())
    w = rng.random(40) + 0.1
    assert coded.max_sum(w) == dense.max_sum(w)
    assert coded.none_sum() == dense.none_sum()
    assert coded.entropy(w / w.sum()) == dense.entropy(w / w.sum())
    # (one position is padded with a second whose value, 1, is the table's last entry)
    alt_table = table * 0.5 + 0.05
    alt = dataclasses.replace(coded, cin=np.append(alt_table, 1.0) if positions == 1
                              else alt_table)
    assert max_sums([(coded, w), (alt, w)]) == [coded.max_sum(w), alt.max_sum(w)]
    with pytest.raises(qif.QIFError, match="cin_codes"):
        topics_channel(sets, 6, table, 0.1 / 6, cin_codes=sizes + 5)


def test_iba_vulnerabilities_of_int16_sets_are_those_of_int64_sets() -> None:
    rng = np.random.default_rng(3)
    topics = np.sort(rng.choice(469, size=(500, 5)), axis=1)
    topics = np.array([np.unique(t).tolist() + [-1] * (5 - len(np.unique(t))) for t in topics])
    w = rng.random(500)
    w /= w.sum()
    a = qif.iba_vulnerabilities(topics.astype(np.int16), w, 469, 0.05)
    b = qif.iba_vulnerabilities(topics.astype(np.int64), w, 469, 0.05)
    assert a == b
