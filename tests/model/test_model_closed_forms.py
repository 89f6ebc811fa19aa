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
    # the identity of spec 01 §2 holds for sets of exactly k topics only; here sets can be
    # smaller, so Σ_o2 q_within(o, o2) = E[(|S| - 1) 1{o ∈ S}] <= (k - 1) q_single(o)
    assert (qw.sum(axis=2) <= (model.k - 1) * qs + 1e-12).all()


def test_closed_forms_match_monte_carlo(tax12):
    """Sampler frequencies vs closed forms: every statistic within z = 5 binomial sd."""
    model = random_model(tax12, T=4, r=2, k=5, seed=2, scale=1.5)
    n = 200_000
    sets = sample(model, n, seed=3).sets
    m = tax12.size
    x = np.zeros((n, 2, m), dtype=np.float64)
    u = np.repeat(np.arange(n), 5)
    for w in range(2):
        s = sets[:, w, :].reshape(-1)
        keep = s >= 0
        x[u[keep], w, s[keep]] = 1.0
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
