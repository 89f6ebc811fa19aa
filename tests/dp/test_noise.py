"""The discrete Gaussian sampler: exact distribution, explicit statistical bounds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from topicslab.dp import RandomWords, discrete_gaussian
from topicslab.dp.noise import bernoulli_exp, sampled_sigma


def pmf(sigma: float, span: int) -> tuple[np.ndarray, np.ndarray]:
    x = np.arange(-span, span + 1)
    p = np.exp(-(x.astype(float) ** 2) / (2 * sigma**2))
    return x, p / p.sum()


@pytest.mark.parametrize("sigma", [0.8, 7.3, 43.2])
def test_moments_within_clt_bounds(sigma):
    n = 100_000
    x = discrete_gaussian(n, sigma, RandomWords(seed=12345)).astype(float)
    s = sampled_sigma(sigma)
    grid, p = pmf(s, int(60 * s) + 5)
    var = float((p * grid**2).sum())
    mu4 = float((p * grid**4).sum())
    assert abs(x.mean()) <= 5 * math.sqrt(var / n)
    # sample variance: CLT with Var(X^2) = mu4 - var^2, 5-sigma bound
    assert abs((x**2).mean() - var) <= 5 * math.sqrt((mu4 - var**2) / n)


def test_histogram_matches_exact_pmf():
    sigma, n = 3.0, 100_000
    x = discrete_gaussian(n, sigma, RandomWords(seed=7))
    grid, p = pmf(sampled_sigma(sigma), 40)
    inner = np.abs(grid) <= 8
    obs = np.array([np.sum(x == g) for g in grid[inner]] + [np.sum(np.abs(x) > 8)])
    exp = np.concatenate([p[inner], [p[~inner].sum()]]) * n
    chi2 = float(((obs - exp) ** 2 / exp).sum())
    assert stats.chi2.sf(chi2, len(obs) - 1) > 1e-6


def test_bernoulli_exp_rate():
    rw = RandomWords(seed=3)
    n = 200_000
    for num, den in [(1, 1), (5, 2), (1, 3), (0, 1)]:
        hits = bernoulli_exp(rw, np.full(n, num), np.full(n, den)).mean()
        p = math.exp(-num / den)
        assert abs(hits - p) <= 5 * math.sqrt(p * (1 - p) / n) + 1e-12


def test_seed_reproducible_and_secure_default_differs():
    a = discrete_gaussian(1000, 10.0, RandomWords(seed=1))
    b = discrete_gaussian(1000, 10.0, RandomWords(seed=1))
    np.testing.assert_array_equal(a, b)
    assert RandomWords().secure and not RandomWords(seed=1).secure
    c = discrete_gaussian(1000, 10.0, RandomWords())
    assert not np.array_equal(a, c)
    assert c.dtype == np.int64


def test_sampled_sigma_never_below_calibrated():
    for s in (1e-3, 0.5, 43.206, 85.8127, 3000.0):
        assert s <= sampled_sigma(s) <= s * (1 + 1e-6) + 1e-3


@pytest.mark.parametrize("sizes", [(1, 1), (7, 16), (64, 64)])
def test_the_buffer_size_changes_no_sample(monkeypatch: pytest.MonkeyPatch,
                                           sizes: tuple[int, int]) -> None:
    """A sample that runs past the buffer is drawn again from its first word once the
    buffer is refilled: on one seeded stream of words, the samples are the same whatever the
    buffer's size (down to one word, shorter than most samples)."""
    from topicslab.dp import noise

    expected = discrete_gaussian(3000, 7.3, RandomWords(seed=5))
    hits = bernoulli_exp(RandomWords(seed=6), np.arange(3000) % 7, np.full(3000, 3))
    monkeypatch.setattr(noise, "_MIN_WORDS", sizes[0])
    monkeypatch.setattr(noise, "_MAX_WORDS", sizes[1])
    np.testing.assert_array_equal(discrete_gaussian(3000, 7.3, RandomWords(seed=5)), expected)
    np.testing.assert_array_equal(
        bernoulli_exp(RandomWords(seed=6), np.arange(3000) % 7, np.full(3000, 3)), hits)


def test_a_certain_outcome_takes_no_word() -> None:
    """Bernoulli(exp(0)) is certain, and so is a uniform integer below 1: drawn from no words
    at all."""
    from topicslab.dp import noise

    out = np.zeros(500, dtype=np.bool_)
    done, used = noise._bernoulli_exp_kernel(np.empty(0, dtype=np.uint64), out, 0,
                                             np.zeros(500, dtype=np.int64),
                                             np.ones(500, dtype=np.int64))
    assert (done, used) == (500, 0) and out.all()
    # one that needs a word stops at the first sample, asking for more
    done, used = noise._bernoulli_exp_kernel(np.empty(0, dtype=np.uint64), out, 0,
                                             np.ones(500, dtype=np.int64),
                                             np.full(500, 2, dtype=np.int64))
    assert (done, used) == (0, 0)


def test_arguments_of_other_lengths_are_refused() -> None:
    with pytest.raises(ValueError):
        bernoulli_exp(RandomWords(seed=1), np.ones(5, dtype=np.int64),
                      np.ones(3, dtype=np.int64))
