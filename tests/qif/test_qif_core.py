"""QIF primitives and composition: identities from the paper on random small channels."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topicslab import qif
from topicslab.errors import TopicsLabError

SETTINGS = settings(max_examples=40, deadline=None)


@st.composite
def channels(draw: st.DrawFn, rows: int | None = None, zeros: bool = True) -> np.ndarray:
    n = rows if rows is not None else draw(st.integers(1, 4))
    k = draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    c = rng.random((n, k))
    if zeros and draw(st.booleans()):
        c[rng.random((n, k)) < 0.3] = 0.0
        c[np.arange(n), rng.integers(0, k, n)] += 0.5  # keep every row non-zero
    return c / c.sum(axis=1, keepdims=True)


@st.composite
def priors(draw: st.DrawFn, n: int) -> np.ndarray:
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    p = rng.random(n) ** 3
    return p / p.sum()


@st.composite
def channel_and_prior(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    c = draw(channels())
    return c, draw(priors(c.shape[0]))


@SETTINGS
@given(channels(), channels())
def test_theorem2_kronecker_capacity(c: np.ndarray, d: np.ndarray) -> None:
    """Theorem 2: ML×_1(C (x) D) = ML×_1(C) ML×_1(D)."""
    assert qif.bayes_capacity(qif.kron(c, d)) == pytest.approx(
        qif.bayes_capacity(c) * qif.bayes_capacity(d), rel=1e-12)


@SETTINGS
@given(channels(), channels())
def test_corollary3_uniform_posterior(c: np.ndarray, d: np.ndarray) -> None:
    """Corollary 3: V_1[u > C (x) D] = V_1[u > C] V_1[u > D] for uniform priors."""
    n, k = c.shape[0], d.shape[0]
    lhs = qif.posterior_vulnerability(qif.uniform(n * k), qif.kron(c, d))
    rhs = (qif.posterior_vulnerability(qif.uniform(n), c)
           * qif.posterior_vulnerability(qif.uniform(k), d))
    assert lhs == pytest.approx(rhs, rel=1e-12)


@SETTINGS
@given(channel_and_prior(), st.integers(0, 2**32 - 1))
def test_miracle_bound(cp: tuple[np.ndarray, np.ndarray], seed: int) -> None:
    """Leakage <= Bayes capacity for every prior and non-negative gain (eq 8)."""
    c, pi = cp
    cap = qif.bayes_capacity(c)
    assert qif.multiplicative_leakage(pi, c) <= cap * (1 + 1e-12)
    g = np.random.default_rng(seed).random((3, c.shape[0]))
    assert qif.multiplicative_leakage(pi, c, g) <= cap * (1 + 1e-12)
    assert qif.multiplicative_leakage(qif.uniform(c.shape[0]), c) == pytest.approx(cap)


@SETTINGS
@given(channels(rows=3), st.integers(0, 2**32 - 1))
def test_dalenius_bound(c: np.ndarray, seed: int) -> None:
    """Eq 10: leakage about a correlated secret Z (via J_ZX then C) <= ML×_1(D, C)."""
    rng = np.random.default_rng(seed)
    corr = rng.random((4, 3))
    corr /= corr.sum(axis=1, keepdims=True)  # Z -> X
    pz = rng.random(4)
    pz /= pz.sum()
    leak = qif.multiplicative_leakage(pz, qif.cascade(corr, c))
    assert leak <= qif.bayes_capacity(c) * (1 + 1e-12)


@SETTINGS
@given(channel_and_prior(), st.floats(0, 1))
def test_lemma6_internal_choice(cp: tuple[np.ndarray, np.ndarray], r: float) -> None:
    c, pi = cp
    d = qif.uniform(c.shape[1])[None, :].repeat(c.shape[0], axis=0)
    mix = qif.internal_choice(c, d, r)
    v = qif.posterior_vulnerability(pi, mix)
    assert v >= max((1 - r) * qif.posterior_vulnerability(pi, c),
                    r * qif.posterior_vulnerability(pi, d)) - 1e-12
    # external choice reveals which channel ran: never less vulnerable (refinement)
    ext = qif.external_choice(c, d, r)
    assert qif.posterior_vulnerability(pi, ext) >= v - 1e-12


@SETTINGS
@given(channel_and_prior())
def test_cascade_never_increases_leakage(cp: tuple[np.ndarray, np.ndarray]) -> None:
    """Data processing: V[pi > CD] <= V[pi > C]."""
    c, pi = cp
    rng = np.random.default_rng(0)
    d = rng.random((c.shape[1], 3))
    d /= d.sum(axis=1, keepdims=True)
    assert qif.posterior_vulnerability(pi, qif.cascade(c, d)) <= \
        qif.posterior_vulnerability(pi, c) + 1e-12


@SETTINGS
@given(channels(rows=3), channels(rows=3))
def test_parallel_and_max_case(c: np.ndarray, d: np.ndarray) -> None:
    par = qif.parallel(c, d)
    assert par.shape == (3, c.shape[1] * d.shape[1])
    assert np.allclose(par.sum(axis=1), 1)
    # parallel composition refines each component and caps at the product of capacities
    pi = qif.uniform(3)
    assert qif.posterior_vulnerability(pi, par) >= qif.posterior_vulnerability(pi, c) - 1e-12
    assert qif.bayes_capacity(par) <= qif.bayes_capacity(c) * qif.bayes_capacity(d) + 1e-9
    # max-case capacity (eq 9) is sub-multiplicative under parallel composition
    mc = qif.max_case_capacity(par)
    assert mc <= qif.max_case_capacity(c) * qif.max_case_capacity(d) * (1 + 1e-9)


def test_prior_and_posterior_by_hand() -> None:
    c = np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]])
    pi = np.array([0.25, 0.75])
    assert qif.prior_vulnerability(pi) == 0.75
    assert qif.posterior_vulnerability(pi, c) == pytest.approx(0.125 + 0.375 + 0.375)
    g = np.array([[1.0, 1.0], [2.0, 0.0]])  # "guess nothing" gains 1, "guess x0" gains 2
    assert qif.prior_vulnerability(pi, g) == 1.0
    assert qif.posterior_vulnerability(pi, c, g) == pytest.approx(
        max(0.25, 0.125 * 2) + max(0.5, 0.25) + max(0.375, 0))


def test_max_case_infinite_when_column_mixes_zeros() -> None:
    c = np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]])
    assert qif.max_case_capacity(c) == math.inf
    assert qif.epsilon(c) == math.inf
    rr = np.array([[0.75, 0.25], [0.25, 0.75]])  # randomised response
    assert qif.max_case_capacity(rr) == pytest.approx(3.0)
    assert qif.epsilon(rr) == pytest.approx(math.log(3))
    # all-zero columns are never observed and do not count
    assert qif.max_case_capacity(np.array([[1.0, 0.0], [1.0, 0.0]])) == 1.0


def test_internal_choice_with_labels() -> None:
    c1 = np.array([[1.0, 0.0], [0.0, 1.0]])
    c2 = np.array([[0.5, 0.5], [0.5, 0.5]])
    mix = qif.internal_choice(c1, c2, 0.2, y1=["a", "b"], y2=["b", "z"])
    assert qif.choice_labels(["a", "b"], ["b", "z"]) == ["a", "b", "z"]
    assert np.allclose(mix, [[0.8, 0.1, 0.1], [0.0, 0.9, 0.1]])


def test_kron_power_and_parallel_power_shapes() -> None:
    c = np.array([[0.9, 0.1], [0.2, 0.8]])
    assert qif.kron_power(c, 3).shape == (8, 8)
    assert qif.parallel_power(c, 3).shape == (2, 8)
    assert np.allclose(qif.kron_power(c, 2), np.kron(c, c))


def test_k_anonymity() -> None:
    g = qif.deterministic_channel([0, 0, 1, 2, 2, 2])
    assert qif.is_deterministic(g)
    assert qif.k_anonymity(g) == 1
    assert qif.k_anonymity(qif.deterministic_channel([0, 0, 1, 1, 1])) == 2
    with pytest.raises(qif.QIFError):
        qif.k_anonymity(np.array([[0.5, 0.5]]))
    gen, first = qif.generalisation_channel(np.array([[1, 2], [1, 2], [3, 4]]))
    assert gen.shape == (3, 2) and qif.k_anonymity(gen) == 1 and list(first) == [0, 2]


def test_bad_inputs_are_topicslab_errors() -> None:
    with pytest.raises(TopicsLabError):
        qif.bayes_capacity(np.array([[0.5, 0.4]]))
    with pytest.raises(TopicsLabError):
        qif.prior_vulnerability([0.5, 0.6])
    with pytest.raises(TopicsLabError):
        qif.internal_choice(np.eye(2), np.eye(2), 1.5)
    with pytest.raises(TopicsLabError):
        qif.cascade(np.eye(2), np.eye(3))
    for m, s, r in [(3, 5, 0.05), (10, 0, 0.05), (10, 5, -0.1), (10, 5, 1.5)]:
        with pytest.raises(TopicsLabError):
            qif.reporting_bayes_capacity(m, s, r)
