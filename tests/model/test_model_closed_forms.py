"""Closed forms (Appendix A) against exact enumeration, Monte Carlo and autograd."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from model_helpers import random_model, small_taxonomy

from topicslab.model import TypeMixture, closed_forms, sample
from topicslab.model.closed_forms import signed_gram, subset_expansion, subset_signs


def _enumerate(model: TypeMixture) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact statistics by enumerating every slot outcome (m^k per type and week)."""
    P = model.slot_probabilities()
    T, r, k, m = P.shape
    dist = np.zeros((T, r, 1 << m))
    for t, i in itertools.product(range(T), range(r)):
        for xs in itertools.product(range(m), repeat=k):
            mask = 0
            for x in xs:
                mask |= 1 << x
            dist[t, i, mask] += math.prod(P[t, i, s, x] for s, x in enumerate(xs))
    member = np.array([[(mask >> o) & 1 for o in range(m)] for mask in range(1 << m)], float)
    qs = np.einsum("tim,mo->io", dist, member) / T
    qw = np.einsum("tim,mo,mp->iop", dist, member, member) / T
    qa = np.stack([np.einsum("tm,mo,tn,np->op", dist[:, i], member, dist[:, i + 1], member)
                   / T for i in range(r - 1)])
    idx = np.arange(m)
    qw[:, idx, idx] = 0
    return qs, qw, qa


def test_closed_forms_equal_enumeration():
    model = random_model(small_taxonomy(6), T=3, r=3, k=3, seed=1, scale=1.5)
    es, ew, ea = _enumerate(model)
    qs, qw, qa = model.statistics()
    assert np.abs(qs - es).max() < 1e-12
    assert np.abs(qw - ew).max() < 1e-12
    assert np.abs(qa - ea).max() < 1e-12
    # the identity of Dick et al. §4.1 holds for sets of exactly k topics only; here sets can be
    # smaller, so Σ_o2 q_within(o, o2) = E[(|S| - 1) 1{o ∈ S}] <= (k - 1) q_single(o)
    assert (qw.sum(axis=2) <= (model.k - 1) * qs + 1e-12).all()


def _indicators(sets: np.ndarray, m: int) -> np.ndarray:
    """x[u, w, o] = 1 when user u holds topic o in week w (padding -1 ignored)."""
    n, weeks, k = sets.shape
    x = np.zeros((n, weeks, m), dtype=np.float64)
    u = np.repeat(np.arange(n), k)
    for w in range(weeks):
        s = sets[:, w, :].reshape(-1)
        keep = s >= 0
        x[u[keep], w, s[keep]] = 1.0
    return x


def test_closed_forms_match_monte_carlo(tax12):
    """Sampler frequencies vs closed forms: every statistic within z = 5 binomial sd."""
    model = random_model(tax12, T=4, r=2, k=5, seed=2, scale=1.5)
    n = 200_000
    sets = sample(model, n, seed=3).sets
    m = tax12.size
    x = _indicators(sets, m)
    emp_s = x.mean(axis=0)
    emp_w = np.einsum("nwo,nwp->wop", x, x) / n
    emp_a = np.einsum("no,np->op", x[:, 0], x[:, 1])[None] / n
    qs, qw, qa = model.statistics()
    for emp, exact in ((emp_s, qs), (emp_w, qw), (emp_a, qa)):
        sd = np.sqrt(exact * (1 - exact) / n)
        off = np.ones_like(exact, dtype=bool)
        if exact.ndim == 3 and exact is qw:
            idx = np.arange(m)
            off[:, idx, idx] = False
        z = np.abs(emp - exact)[off] / np.maximum(sd[off], 1e-12)
        assert z.max() < 5.0, z.max()


def _naive(theta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The formulas of Appendix A written directly (autograd only, no custom backward)."""
    P = torch.softmax(theta, dim=-1)
    T = theta.shape[0]
    n1 = torch.prod(1 - P, dim=2)  # [T, r, m]
    pa = P.unsqueeze(-1)
    pb = P.unsqueeze(-2)
    n12 = torch.prod(1 - pa - pb, dim=2)  # [T, r, m, m]
    qw = (1 - n1.unsqueeze(-1) - n1.unsqueeze(-2) + n12).mean(0)
    a = 1 - n1
    qs = a.mean(0)
    qa = torch.stack([a[:, i].T @ a[:, i + 1] / T for i in range(theta.shape[1] - 1)])
    return qs, qw, qa


def test_gradients_match_autograd_float64():
    rng = np.random.default_rng(4)
    theta = torch.tensor(rng.normal(size=(3, 2, 3, 7)), dtype=torch.float64)
    w = [torch.tensor(rng.normal(size=s), dtype=torch.float64)
         for s in ((2, 7), (2, 7, 7), (1, 7, 7))]
    mask = torch.triu(torch.ones(7, 7, dtype=torch.bool), 1)

    def loss(fn):
        th = theta.clone().requires_grad_(True)
        qs, qw, qa = fn(th)
        val = (w[0] * qs).sum() + (w[1] * qw * mask).sum() + (w[2] * qa).sum()
        (g,) = torch.autograd.grad(val, th)
        return val.detach(), g

    v1, g1 = loss(closed_forms)
    v2, g2 = loss(_naive)
    assert abs(float(v1 - v2)) < 1e-12
    assert float((g1 - g2).abs().max()) < 1e-12


def test_signed_gram_gradcheck():
    rng = np.random.default_rng(5)
    H = torch.tensor(rng.random((2, 4, 3, 5)), dtype=torch.float64, requires_grad=True)
    sign = torch.tensor([1.0, -1.0, -1.0, 1.0], dtype=torch.float64)
    assert torch.autograd.gradcheck(lambda h: signed_gram(h, sign), (H,))


def test_subset_expansion_sums_to_one_and_signs():
    rng = np.random.default_rng(6)
    P = torch.softmax(torch.tensor(rng.normal(size=(2, 1, 4, 6))), dim=-1)
    H = subset_expansion(P)
    assert H.shape == (1, 16, 2, 6)
    assert torch.allclose(H.sum(dim=1), torch.ones(1, 2, 6, dtype=H.dtype))
    s = subset_signs(3)
    assert s.tolist() == [1, -1, -1, 1, -1, 1, 1, -1]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_float32_close_to_float64(tax30, dtype):
    model = random_model(tax30, T=20, r=2, k=5, seed=7)
    qs, qw, qa = closed_forms(torch.from_numpy(model.theta).to(dtype))
    es, ew, ea = model.statistics()
    tol = 1e-6 if dtype == torch.float32 else 1e-13
    idx = np.arange(tax30.size)
    qw = qw.numpy().copy()
    qw[:, idx, idx] = 0
    assert np.abs(qs.numpy() - es).max() < tol
    assert np.abs(qw - ew).max() < tol
    assert np.abs(qa.numpy() - ea).max() < tol


# ---------------------------------------------------------------- persistent types

def persistent_model(tax, T: int, k: int, M: int = 2, weeks: int = 3, seed: int = 0,
                     scale: float = 1.5) -> TypeMixture:
    rng = np.random.default_rng(seed)
    theta = (rng.normal(size=(T, M, k, tax.size)) * scale).astype(np.float32)
    stay = rng.uniform(0.0, 1.0, size=(T, M, k)).astype(np.float32)
    stay[0, 0, 0] = 0.0  # the edge cases: a slot that never stays, one that always does
    stay[-1, -1, -1] = 1.0
    weights = rng.dirichlet(np.ones(M), size=T).astype(np.float32)
    mode_stay = rng.uniform(0.0, 1.0, size=T).astype(np.float32)
    mode_stay[0] = 1.0
    return TypeMixture(theta, tax, {"weeks": weeks}, stay=stay, mode_weights=weights,
                       mode_stay=mode_stay)


def _markov_statistics(model: TypeMixture, lag: int) -> tuple[np.ndarray, ...]:
    """Exact statistics of weeks 0 and ``lag`` from each type's full Markov chain over its
    states (mode, slot values): the transition matrix written out from the generative rule,
    its ``lag``-th power, and every pair of states enumerated — independent of the closed
    forms' algebra."""
    assert model.stay is not None and model.mode_weights is not None
    assert model.mode_stay is not None
    P = model.slot_probabilities()
    T, M, k, m = P.shape
    states = [(mu, xs) for mu in range(M) for xs in itertools.product(range(m), repeat=k)]
    member = np.zeros((len(states), m))
    for i, (_, xs) in enumerate(states):
        member[i, list(xs)] = 1.0
    qs = np.zeros(m)
    qw = np.zeros((m, m))
    qa = np.zeros((m, m))
    for t in range(T):
        w = model.mode_weights[t].astype(float)
        w /= w.sum()
        rho = float(model.mode_stay[t])
        fresh = np.array([w[mu] * math.prod(P[t, mu, s, x] for s, x in enumerate(xs))
                          for mu, xs in states])  # also the stationary law
        step = np.zeros((len(states), len(states)))
        for i, (mu, xs) in enumerate(states):
            step[i] += (1 - rho) * fresh  # a new mode, all slots afresh
            for j, (nu, ys) in enumerate(states):
                if nu != mu:
                    continue
                p = rho
                for s in range(k):
                    sig = float(model.stay[t, mu, s])
                    p *= sig * (xs[s] == ys[s]) + (1 - sig) * P[t, mu, s, ys[s]]
                step[i, j] += p
        joint = np.diag(fresh) @ np.linalg.matrix_power(step, lag)
        qs += fresh @ member
        qw += member.T @ np.diag(fresh) @ member
        qa += member.T @ joint @ member
    idx = np.arange(m)
    qw[idx, idx] = 0
    return qs / T, qw / T, qa / T


@pytest.mark.parametrize("lag", [1, 2, 3])
def test_persistent_forms_equal_the_markov_chain(lag):
    model = persistent_model(small_taxonomy(4), T=3, k=2, M=2, weeks=lag + 1, seed=11)
    es, ew, ea = _markov_statistics(model, lag)
    qs, qw, qa = model.statistics([(0, lag)])
    for week in range(model.weeks):
        assert np.abs(qs[week] - es).max() < 1e-12
        assert np.abs(qw[week] - ew).max() < 1e-12
    assert np.abs(qa[0] - ea).max() < 1e-12


def test_persistent_nests_the_paper_types():
    """One mode with stays 0 is the paper's model with identical weeks; stays 1 repeat the
    week's set."""
    tax = small_taxonomy(6)
    model = persistent_model(tax, T=3, k=3, M=1, weeks=3, seed=12)
    paper = TypeMixture(np.repeat(model.theta, 3, axis=1), tax)
    one = np.ones((3, 1), np.float32)

    def with_stays(slot: float, mode: float) -> TypeMixture:
        return TypeMixture(model.theta, tax, {"weeks": 3},
                           stay=np.full((3, 1, 3), slot, np.float32), mode_weights=one,
                           mode_stay=np.full(3, mode, np.float32))

    for a, b in zip(with_stays(0.0, 0.7).statistics(), paper.statistics(), strict=True):
        assert np.abs(a - b).max() < 1e-12
    for a, b in zip(with_stays(0.5, 0.0).statistics(), paper.statistics(), strict=True):
        assert np.abs(a - b).max() < 1e-12  # a mode drawn afresh redraws every slot
    qs, qw, qa = with_stays(1.0, 1.0).statistics()
    idx = np.arange(tax.size)
    expect = qw[0].copy()
    expect[idx, idx] = qs[0]
    assert np.abs(qa[0] - expect).max() < 1e-12


def test_persistent_sampler_matches_closed_forms(tax12):
    """Sampler frequencies vs closed forms at lags 1 and 2: within z = 5 binomial sd."""
    model = persistent_model(tax12, T=4, k=5, M=3, weeks=3, seed=13)
    n = 200_000
    sets = sample(model, n, seed=3).sets
    assert sets.shape == (n, 3, 5)
    m = tax12.size
    x = _indicators(sets, m)
    qs, qw, qa = model.statistics([(0, 1), (1, 2), (0, 2)])
    emp = [(x.mean(axis=0), qs), (np.einsum("nwo,nwp->wop", x, x) / n, qw),
           (np.stack([np.einsum("no,np->op", x[:, a], x[:, b]) / n
                      for a, b in ((0, 1), (1, 2), (0, 2))]), qa)]
    idx = np.arange(m)
    for observed, exact in emp:
        sd = np.sqrt(exact * (1 - exact) / n)
        off = np.ones_like(exact, dtype=bool)
        if exact is qw:
            off[:, idx, idx] = False
        z = np.abs(observed - exact)[off] / np.maximum(sd[off], 1e-12)
        assert z.max() < 5.0, z.max()


def _naive_persistent(theta: torch.Tensor, weights: torch.Tensor, rho: torch.Tensor,
                      log_stay: torch.Tensor, lag: int,
                      ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-slot products written directly, per (type, mode) component (autograd only)."""
    T, m = theta.shape[0], theta.shape[-1]
    P = torch.softmax(theta, dim=-1)  # [T, M, k, m]
    n1 = torch.prod(1 - P, dim=2)  # [T, M, m]
    pa, pb = P.unsqueeze(-1), P.unsqueeze(-2)
    within = 1 - n1.unsqueeze(-1) - n1.unsqueeze(-2) + torch.prod(1 - pa - pb, dim=2)
    sig = torch.exp(lag * log_stay).unsqueeze(-1).unsqueeze(-1)  # [T, M, k, 1, 1]
    eye = torch.eye(m, dtype=P.dtype)
    joint = sig * eye * pa + (1 - sig) * pa * pb  # Pr(x_i = o1, x_{i+lag} = o2) per slot
    chain = 1 - n1.unsqueeze(-1) - n1.unsqueeze(-2) + torch.prod(1 - pa - pb + joint, dim=2)
    wt = weights.unsqueeze(-1)
    a = 1 - n1
    abar = (wt * a).sum(1)  # [T, m]
    kept = (rho ** lag).view(T, 1, 1)
    qa = (kept * (weights.unsqueeze(-1).unsqueeze(-1) * chain).sum(1)
          + (1 - kept) * abar.unsqueeze(-1) * abar.unsqueeze(-2)).mean(0)
    qw = (weights.unsqueeze(-1).unsqueeze(-1) * within).sum(1).mean(0)
    return (wt * a).sum(1).mean(0), qw, qa


def test_persistent_gradients_match_autograd_float64():
    from topicslab.model import persistent_forms

    rng = np.random.default_rng(14)
    theta = torch.tensor(rng.normal(size=(3, 2, 3, 7)), dtype=torch.float64)
    logits = [torch.tensor(rng.normal(size=s), dtype=torch.float64)
              for s in ((3, 2), (3,), (3, 2, 3))]
    w = [torch.tensor(rng.normal(size=s), dtype=torch.float64) for s in ((7,), (7, 7), (7, 7))]
    mask = torch.triu(torch.ones(7, 7, dtype=torch.bool), 1)

    def loss(fn):
        xs = [x.clone().requires_grad_(True) for x in (theta, *logits)]
        weights = torch.softmax(xs[1], dim=-1)
        qs, qw, qa = fn(xs[0], weights, torch.sigmoid(xs[2]),
                        torch.nn.functional.logsigmoid(xs[3]))
        val = (w[0] * qs).sum() + (w[1] * qw * mask).sum() + (w[2] * qa).sum()
        return val.detach(), torch.autograd.grad(val, xs)

    def closed(th, wt, rho, ls, lag):
        qs, qw, qa = persistent_forms(th, wt, rho, ls, (lag,))
        return qs, qw, qa[0]

    for lag in (1, 2):
        v1, g1 = loss(lambda *a, lag=lag: closed(*a, lag))
        v2, g2 = loss(lambda *a, lag=lag: _naive_persistent(*a, lag))
        assert abs(float(v1 - v2)) < 1e-12
        for a, b in zip(g1, g2, strict=True):
            assert float((a - b).abs().max()) < 1e-12


def test_persistent_float32_close_to_float64(tax30):
    from topicslab.model import persistent_forms

    model = persistent_model(tax30, T=20, k=5, M=3, seed=15)
    assert model.stay is not None and model.mode_weights is not None
    assert model.mode_stay is not None
    args = [torch.from_numpy(x).double() for x in (model.theta, model.mode_weights,
                                                    model.mode_stay)]
    log_stay = torch.log(torch.from_numpy(model.stay).double())
    es, ew, ea = persistent_forms(*args, log_stay)
    qs, qw, qa = persistent_forms(*[a.float() for a in args], log_stay.float())
    assert float((qs.double() - es).abs().max()) < 1e-6
    assert float((qw.double() - ew).abs().max()) < 1e-6
    assert float((qa.double() - ea).abs().max()) < 1e-6


def test_weighted_gram_gradcheck():
    from topicslab.model.closed_forms import weighted_gram

    rng = np.random.default_rng(16)
    H = torch.tensor(rng.random((4, 3, 5)), dtype=torch.float64, requires_grad=True)
    w = torch.tensor(rng.normal(size=(4, 3)), dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(weighted_gram, (H, w))
    with torch.no_grad():
        direct = sum(float(w[j, c]) * torch.outer(H[j, c], H[j, c]) for j in range(4)
                     for c in range(3))
        assert torch.allclose(weighted_gram(H, w), direct)


def test_gram_gradients_of_many_rows_match_autograd():
    """Past 512 rows the backward multiplies the rows in blocks on a CPU (``_rows_times``):
    a ragged last block included, the gradients are autograd's of the plain products."""
    from topicslab.model.closed_forms import _CPU_ROW_BLOCK, weighted_gram

    rng = np.random.default_rng(17)
    J, C, m = 2, 2 * _CPU_ROW_BLOCK + 37, 7
    H = torch.tensor(rng.random((J, C, m)), requires_grad=True)
    w = torch.tensor(rng.normal(size=(J, C)), requires_grad=True)
    R = torch.tensor(rng.normal(size=(m, m)))
    (weighted_gram(H, w) * R).sum().backward()
    got = H.grad.clone(), w.grad.clone()
    H.grad, w.grad = None, None
    flat = H.reshape(J * C, m)
    (((flat * w.reshape(-1, 1)).T @ flat) * R).sum().backward()
    assert torch.allclose(got[0], H.grad) and torch.allclose(got[1], w.grad)

    Hs = torch.tensor(rng.random((3, 4, C // 4 + 1, m)), requires_grad=True)
    sign = torch.tensor([1.0, -1.0, -1.0, 1.0], dtype=torch.float64)
    Rs = torch.tensor(rng.normal(size=(3, m, m)))
    (signed_gram(Hs, sign) * Rs).sum().backward()
    got_s = Hs.grad.clone()
    Hs.grad = None
    r, S, T, _ = Hs.shape
    signed = (Hs * sign.view(1, S, 1, 1)).reshape(r, S * T, m)
    ((signed.transpose(1, 2) @ Hs.reshape(r, S * T, m)) * Rs).sum().backward()
    assert torch.allclose(got_s, Hs.grad)


# ---------------------------------------------------------------- large mixtures in blocks

@pytest.mark.parametrize("kind", ["paper", "persistent"])
def test_statistics_of_a_large_mixture_are_summed_in_blocks_of_types(monkeypatch, tax12, kind):
    """A mixture whose subset expansion exceeds ``_EXPANSION_VALUES`` is evaluated block by
    block of types (uneven last block here: 7 types in blocks of 2): the same statistics
    as all types at once, to float64 rounding, and the blocks really are smaller."""
    import importlib

    # (the package's name closed_forms is the function, which hides its module)
    cf = importlib.import_module("topicslab.model.closed_forms")
    tmx = importlib.import_module("topicslab.model.typemixture")

    if kind == "paper":
        model = random_model(tax12, T=7, r=3, k=3, seed=21)
        name, per_type = "closed_forms", 2**3 * 3 * tax12.size
    else:
        model = persistent_model(tax12, T=7, k=3, M=2, weeks=4, seed=22)
        name, per_type = "persistent_forms", 2**3 * 2 * tax12.size
    pairs = [*model.week_pairs, (0, 2)]
    whole = model.statistics(pairs)
    sizes: list[int] = []
    forms = getattr(cf, name)

    def counted(theta, *args, **kwargs):
        sizes.append(theta.shape[0])
        return forms(theta, *args, **kwargs)

    monkeypatch.setattr(tmx, name, counted)
    monkeypatch.setattr(tmx, "_EXPANSION_VALUES", 2 * per_type + 1)
    blocked = model.statistics(pairs)
    assert sizes == [2, 2, 2, 1]
    for a, b in zip(whole, blocked, strict=True):
        assert a.shape == b.shape
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-15)
    sizes.clear()
    monkeypatch.setattr(tmx, "_EXPANSION_VALUES", 7 * per_type)
    same = model.statistics(pairs)
    assert sizes == [7]  # one block: the numbers of the unblocked evaluation, bit for bit
    for a, b in zip(whole, same, strict=True):
        assert np.array_equal(a, b)
