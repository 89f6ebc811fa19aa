"""Top-k profile selection: bucket first, then count, random ties, uniform padding."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topicslab.api import top_k, top_k_sparse
from topicslab.taxonomy import HIGH, load

Z = 5.0


def within_binomial(count: int, n: int, pi: float) -> bool:
    return abs(count - n * pi) <= Z * np.sqrt(n * pi * (1 - pi)) + 1e-9


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), density=st.floats(0.0, 0.05), k=st.integers(1, 8))
def test_selection_respects_bucket_then_count(seed, density, k):
    tax = load("v2")
    rng = np.random.default_rng(seed)
    counts = np.where(rng.random((300, tax.size)) < density,
                      rng.integers(1, 4, size=(300, tax.size)), 0)
    sets = top_k(counts, k=k, seed=seed)
    assert sets.shape == (300, k)
    assert (np.diff(sets.astype(int), axis=1) > 0).all()  # distinct, sorted
    for r in range(300):
        chosen = set(sets[r].tolist())
        seen = np.flatnonzero(counts[r])
        rank = {int(t): (int(tax.bucket[t]), int(counts[r, t])) for t in seen}
        chosen_seen = [t for t in chosen if t in rank]
        if len(seen) <= k:
            assert set(seen.tolist()) <= chosen  # all seen topics kept, rest padding
        else:
            assert len(chosen_seen) == k
            worst_in = min(rank[t] for t in chosen_seen)
            best_out = max(rank[int(t)] for t in seen if int(t) not in chosen)
            assert worst_in >= best_out


def test_high_bucket_beats_more_visited_standard_topic():
    tax = load("v2")
    news = int(tax.index(243))
    high = np.flatnonzero(tax.bucket == HIGH)[:5]
    counts = np.zeros((1, tax.size), dtype=int)
    counts[0, news] = 1000
    counts[0, high] = 1
    assert news not in top_k(counts)[0]


def test_ties_are_broken_uniformly():
    tax = load("v2")
    tied = np.flatnonzero(tax.bucket == HIGH)[:10]
    counts = np.zeros((20_000, tax.size), dtype=int)
    counts[:, tied] = 3
    sets = top_k(counts, seed=9)
    freq = np.array([(sets == t).any(1).sum() for t in tied])
    assert all(within_binomial(int(f), 20_000, 0.5) for f in freq)


def test_padding_is_distinct_and_uniform():
    tax = load("v2")
    counts = np.zeros((30_000, tax.size), dtype=int)
    counts[:, 100] = 2
    sets = top_k(counts, seed=11)
    assert (sets == 100).any(1).all()
    assert (np.diff(sets.astype(int), axis=1) > 0).all()
    others = sets[sets != 100]
    freq = np.bincount(others, minlength=tax.size)
    assert freq[100] == 0
    pi = 4 / (tax.size - 1)  # each other topic is in the padding w.p. 4/(m-1)
    assert all(within_binomial(int(f), 30_000, pi) for i, f in enumerate(freq) if i != 100)


def test_sparse_and_dense_agree_and_row_keys_make_slices_reproducible():
    tax = load("v2")
    rng = np.random.default_rng(3)
    counts = np.where(rng.random((500, tax.size)) < 0.01, 1, 0)
    dense = top_k(counts, seed=2)
    rows, cols = np.nonzero(counts)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=500))])
    sparse = top_k_sparse(indptr, cols, counts[rows, cols], seed=2)
    assert np.array_equal(dense, sparse)
    keys = np.arange(500, dtype=np.uint64)
    part = top_k(counts[200:300], seed=2, row_keys=keys[200:300])
    assert np.array_equal(part, dense[200:300])


def test_leading_dimensions_kept():
    counts = np.zeros((7, 3, 469), dtype=np.int32)
    assert top_k(counts).shape == (7, 3, 5)


def test_a_topic_twice_names_the_first_such_row_and_its_smallest_topic():
    from topicslab.errors import InputError

    indptr = np.array([0, 3, 7, 9])
    topics = np.array([1, 2, 3, 7, 4, 7, 4, 5, 5])
    with pytest.raises(InputError, match="topic 4 appears twice in row 1"):
        top_k_sparse(indptr, topics, np.ones(9), k=2, taxonomy="v2")
    ok = top_k_sparse(indptr[:2], topics[:3], np.ones(3), k=2, taxonomy="v2")
    assert ok.shape == (1, 2)


def test_the_first_repeat_is_found_across_work_items():
    """Rows are checked in parallel items of 4,096: the first row with a repeat wins, in
    whichever item it falls."""
    from topicslab.errors import InputError

    n = 10_000
    indptr = np.arange(0, 3 * n + 1, 3)
    topics = np.tile([1, 2, 3], n)
    topics[3 * 9000:3 * 9000 + 3] = [8, 8, 9]
    topics[3 * 4500:3 * 4500 + 3] = [6, 5, 6]
    with pytest.raises(InputError, match="topic 6 appears twice in row 4500"):
        top_k_sparse(indptr, topics, np.ones(3 * n), k=3, taxonomy="v2")


def test_profiles_as_they_were_before_the_one_pass_generator():
    """Digests of profiles computed by the earlier two-pass generator and CSR kernel
    (6d7195a): the rewritten kernels rank, break ties and pad exactly as before."""
    import hashlib

    from topicslab.population import generate

    def digest(a: np.ndarray) -> str:
        return hashlib.sha256(np.ascontiguousarray(a, dtype="<i2").tobytes()).hexdigest()

    assert digest(generate(500, 4, seed=9, first_user=100).sets) == (
        "71b7b5fbb9452a611254dbd6893cb6dc7d413d6539d204c452efd06f31daa704")
    rng = np.random.default_rng(3)
    n = 5000
    lens = rng.integers(0, 12, size=n)
    indptr = np.concatenate([[0], np.cumsum(lens)])
    topics = np.concatenate([rng.choice(469, length, replace=False) for length in lens])
    counts = rng.integers(0, 4, size=topics.size)
    out = top_k_sparse(indptr, topics, counts, k=5, taxonomy="v2", seed=7,
                       row_keys=rng.integers(0, 2**62, size=n))
    assert digest(out) == "07e81929302434fcde277b2643abfbe1463352bc7f3f59df80330c972d095b09"
