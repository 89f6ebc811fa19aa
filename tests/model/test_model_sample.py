"""Sampler (Algorithm 2): reproduces its model's statistics, is seeded and chunk-invariant,
follows the stationarity rule for extra weeks, and streams to Parquet and TFRecord."""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import persistent_model, random_model

from topicslab import io as tio
from topicslab.errors import InputError
from topicslab.model import TypeMixture, alias_tables, sample, sample_to_file, week_map


def _frequencies(sets: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n, W, _ = sets.shape
    x = np.zeros((n, W, m))
    u = np.repeat(np.arange(n), sets.shape[2])
    for w in range(W):
        s = sets[:, w, :].reshape(-1)
        keep = s >= 0
        x[u[keep], w, s[keep]] = 1.0
    qs = x.mean(axis=0)
    qw = np.einsum("nwo,nwp->wop", x, x) / n
    qa = np.stack([x[:, w].T @ x[:, w + 1] / n for w in range(W - 1)])
    return qs, qw, qa


def _zmax(emp: np.ndarray, exact: np.ndarray, n: int) -> float:
    sd = np.sqrt(np.clip(exact * (1 - exact), 1e-12, None) / n)
    return float((np.abs(emp - exact) / sd).max())


def test_sampler_reproduces_model_statistics(tax12):
    """Every q_single, q_within (o1 != o2) and q_across within z = 5 binomial sd."""
    model = random_model(tax12, T=6, r=3, k=5, seed=11, scale=1.2)
    n = 100_000
    sets = sample(model, n, seed=5)
    sets.validate()
    qs, qw, qa = _frequencies(sets.sets, 12)
    es, ew, ea = model.statistics()
    off = ~np.eye(12, dtype=bool)
    assert _zmax(qs, es, n) < 5
    assert _zmax(qw[:, off], ew[:, off], n) < 5
    assert _zmax(qa, ea, n) < 5


def test_alias_tables_are_exact(tax12):
    model = random_model(tax12, T=3, r=2, k=2, seed=1)
    tabs = alias_tables(model)
    P = model.slot_probabilities()
    m = tax12.size
    # probability of topic o = (prob[o] + sum over j with alias j = o of (1 - prob[j])) / m
    got = np.zeros_like(P)
    for idx in np.ndindex(P.shape[:3]):
        p, a = tabs.prob[idx], tabs.alias[idx]
        got[idx] += p / m
        np.add.at(got[idx], a, (1 - p) / m)
    np.testing.assert_allclose(got, P, atol=1e-12)


def test_seeded_and_chunk_invariant(tax12):
    model = random_model(tax12, T=4, r=2, k=5, seed=2)
    a = sample(model, 5000, seed=9)
    b = sample(model, 5000, seed=9, chunk_users=333)
    c = sample(model, 1000, seed=9, first_user=2000)
    d = sample(model, 5000, seed=10)
    assert np.array_equal(a.sets, b.sets)
    assert np.array_equal(a.sets[2000:3000], c.sets)
    assert np.array_equal(c.user_ids, np.arange(2000, 3000))
    assert not np.array_equal(a.sets, d.sets)
    assert a.metadata["seed"] == 9


def test_raw_slots_give_the_sets(tax12):
    model = random_model(tax12, T=4, r=2, k=5, seed=3, scale=3.0)
    sets = sample(model, 3000, seed=1).sets
    raw = sample(model, 3000, seed=1, raw=True).sets
    assert (raw >= 0).all()
    for u in range(0, 3000, 97):
        for w in range(2):
            want = sorted(set(raw[u, w].tolist()))
            got = [x for x in sets[u, w].tolist() if x >= 0]
            assert got == want
    # peaky slots repeat topics: some weeks have fewer than k topics, kept as they are
    assert (sets == -1).any()


def test_more_weeks_than_fitted_use_the_stationarity_rule(tax12):
    model = random_model(tax12, T=5, r=2, k=5, seed=4)
    assert week_map(2, 5).tolist() == [0, 1, 0, 1, 0]
    n = 60_000
    sets = sample(model, n, seed=2, weeks=5).sets
    assert sets.shape == (n, 5, 5)
    qs, _, qa = _frequencies(sets, 12)
    es, _, ea = model.statistics()
    assert _zmax(qs[4], es[0], n) < 5  # week 4 is fitted week 0
    assert _zmax(qa[2], ea[0], n) < 5  # transition 2 -> 3 is fitted pair (0, 1)
    wrap = model.q_across([(1, 0)])[0]  # transition 1 -> 2 is the wrap pair (1 -> 0)
    assert _zmax(qa[1], wrap, n) < 5


def test_parquet_stream_round_trip(tmp_path, tax12):
    model = random_model(tax12, T=4, r=2, k=5, seed=5)
    path = tmp_path / "synth.parquet"
    files = sample_to_file(model, path, 2500, seed=3, chunk_users=1000, progress=False)
    assert files == [str(path)]
    back = tio.read_sets(path, taxonomy=tax12)
    want = sample(model, 2500, seed=3)
    assert np.array_equal(back.sets, want.sets)
    assert np.array_equal(back.user_ids, np.arange(2500))
    assert back.metadata["seed"] == 3


def test_tfrecord_release_layout(tmp_path, tax12):
    model = random_model(tax12, T=4, r=2, k=5, seed=6, scale=3.0)
    path = tmp_path / "synth.tfrecord"
    files = sample_to_file(model, path, 2500, seed=4, format="tfrecord", chunk_users=1000,
                           progress=False)
    assert len(files) == 3 and files[0].endswith("synth-00000-of-00003.tfrecord")
    # raw slots: k values per week, duplicates possible, weights all 1.0
    first = next(tio.iter_records(files[0]))[1]
    ex = tio.decode_example(first)
    raw = sample(model, 1, seed=4, raw=True).sets[0]
    assert ex["epoch_0_topics"].values == tax12.id_of(raw[0]).tolist()
    assert ex["epoch_0_weights"].values == [1.0] * 5
    back = tio.read_sets(tmp_path / "synth-*.tfrecord", taxonomy=tax12, format="tfrecord")
    assert np.array_equal(back.sets, sample(model, 2500, seed=4).sets)


def test_failed_stream_leaves_nothing(tmp_path, tax12):
    model = random_model(tax12, T=4, r=2, k=5, seed=7)
    with pytest.raises(InputError):
        sample_to_file(model, tmp_path / "x.parquet", 100, seed=-1, progress=False)
    with pytest.raises(InputError, match="format"):
        sample_to_file(model, tmp_path / "x.csv", 100, seed=1, format="csv",  # type: ignore
                       progress=False)
    assert list(tmp_path.iterdir()) == []


def test_bad_sampling_options(tax12):
    model = random_model(tax12, T=2, r=2, k=3, seed=8)
    for kw in (dict(n_users=-1, seed=1), dict(n_users=5, seed=1, weeks=0),
               dict(n_users=5, seed=1, chunk_users=0)):
        with pytest.raises(InputError):
            sample(model, **kw)  # type: ignore[arg-type]
    assert sample(model, 0, seed=1).sets.shape == (0, 2, 3)


def test_persistent_sampling_is_seeded_chunk_invariant_and_any_length(tax12):
    model = persistent_model(tax12, T=4, M=3, k=5, seed=5)
    a = sample(model, 4000, seed=9)
    b = sample(model, 4000, seed=9, chunk_users=333)
    c = sample(model, 1000, seed=9, first_user=1500)
    assert np.array_equal(a.sets, b.sets) and np.array_equal(a.sets[1500:2500], c.sets)
    assert a.sets.shape == (4000, 4, 5)  # the model's weeks by default
    long = sample(model, 4000, seed=9, weeks=9)
    assert np.array_equal(long.sets[:, :4], a.sets)  # more weeks extend the same users
    assert "mode" in long.metadata["week_rule"]
    raw = sample(model, 500, seed=1, raw=True).sets
    sets = sample(model, 500, seed=1).sets
    for u in range(0, 500, 37):
        for w in range(4):
            assert [x for x in sets[u, w].tolist() if x >= 0] == sorted(set(raw[u, w].tolist()))


def test_persistent_stays_repeat_slots(tax12):
    """Mode stay 1 and slot stay 1 repeat week 0 forever; stays 0 redraw every week."""
    m = persistent_model(tax12, T=3, M=2, k=5, seed=6)
    ones = TypeMixture(m.theta, tax12, {"weeks": 5}, stay=np.ones_like(m.stay),
                       mode_weights=m.mode_weights, mode_stay=np.ones_like(m.mode_stay))
    s = sample(ones, 2000, seed=2).sets
    assert (s == s[:, :1]).all()
    zeros = TypeMixture(m.theta, tax12, {"weeks": 5}, stay=np.zeros_like(m.stay),
                        mode_weights=m.mode_weights, mode_stay=np.zeros_like(m.mode_stay))
    z = sample(zeros, 2000, seed=2).sets
    assert (z[:, 1:] != z[:, :-1]).any(axis=(1, 2)).mean() > 0.5


def test_packed_tables_keep_a_column_exactly_when_the_float_test_does():
    """``_packed``'s integer threshold ⌈p · 2^32⌉ decides as ``x · 2^-32 < p`` does, for the
    32-bit x next to every threshold, probabilities of 0 and 1, a hair outside [0, 1] (Vose's
    rounding), thresholds that are whole numbers, and random ones."""
    from topicslab.model.sample import AliasTables, _packed

    rng = np.random.default_rng(3)
    p = np.concatenate([[0.0, -0.0, 1.0, -1e-17, 1.0 + 2e-16, 0.5, 0.25, 2.0**-32, 3 * 2.0**-32,
                         np.nextafter(0.5, 0.0), np.nextafter(0.5, 1.0), 1 - 2.0**-32,
                         np.nextafter(1.0, 0.0)],
                        rng.uniform(size=2000), rng.uniform(size=500) * 1e-6])
    alias = rng.integers(0, 469, size=p.size).astype(np.int16)
    word = _packed(AliasTables(p.reshape(1, 1, 1, -1), alias.reshape(1, 1, 1, -1))).ravel()
    assert np.array_equal((word & np.uint64(0xFFFF)).astype(np.int16), alias)
    threshold = word >> np.uint64(16)
    base = np.floor(np.clip(p, 0.0, 1.0) * 2.0**32).astype(np.int64)
    for shift in (-2, -1, 0, 1, 2):
        x = np.clip(base + shift, 0, 2**32 - 1).astype(np.uint64)
        float_test = x.astype(np.float64) * (1.0 / 4294967296.0) < p
        assert np.array_equal(x < threshold, float_test)
    x = rng.integers(0, 2**32, size=p.size, dtype=np.uint64)
    assert np.array_equal(x < threshold, x.astype(np.float64) * (1.0 / 4294967296.0) < p)


def test_sampler_draws_the_users_of_sample_a_range_at_a_time(tax12):
    """``sampler``'s ranges are ``sample``'s users bit for bit (ids, sets and provenance),
    for paper and persistent types, in any order, and it refuses what ``sample`` refuses."""
    from topicslab.model import sampler

    for model, weeks in ((random_model(tax12, T=4, r=2, k=3, seed=2), 5),
                         (persistent_model(tax12, seed=3), None)):
        whole = sample(model, 3000, seed=9, weeks=weeks)
        draw = sampler(model, seed=9, weeks=weeks)
        for lo, hi in ((2000, 3000), (0, 1), (1, 1999), (0, 3000), (1999, 1999)):
            part = draw(lo, hi - lo)
            assert np.array_equal(part.sets, whole.sets[lo:hi])
            assert np.array_equal(part.user_ids, whole.user_ids[lo:hi])
            assert part.metadata == whole.metadata
    with pytest.raises(InputError, match="first_user"):
        draw(-1, 10)
    with pytest.raises(InputError, match="users"):
        draw(0, 2.5)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="seed"):
        sampler(model, seed=-1)
