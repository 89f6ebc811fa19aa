"""The truncated subset expansion of the fit's steps (``closed_forms`` docstring): every pair
statistic within the stated Frobenius tolerance, the presence rows exact, the default fit's
tolerance taken from the DP noise scale."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from model_helpers import stats_of
from test_model_closed_forms import persistent_model
from test_model_fit import NoisyStats

from topicslab.errors import InputError
from topicslab.model import FullObjective, closed_forms, fit, persistent_forms
from topicslab.model.closed_forms import (
    _expansion_norms,
    _expansion_rows,
    _log_expansion,
    _symmetric_product,
    kept_rows,
)


def _persistent_args(model, dtype=torch.float64):
    return ([torch.from_numpy(x).to(dtype) for x in (model.theta, model.mode_weights,
                                                      model.mode_stay)]
            + [torch.log(torch.from_numpy(model.stay).to(dtype))])


def test_kept_rows_drop_the_smallest_rows_within_the_tolerance():
    rng = np.random.default_rng(1)
    norms = torch.tensor(rng.exponential(size=(8, 30)) ** 3)
    flat = norms.reshape(-1)
    for tol in (0.0, 1e-3, 0.5, 5.0, 1e9):
        keep = kept_rows(norms, tol)
        assert bool((keep[1:] > keep[:-1]).all())  # ascending, no repeats
        assert set(range(30)) <= set(keep.tolist())  # block 0: the presence rows
        dropped = np.setdiff1d(np.arange(flat.numel()), keep.numpy())
        assert float(flat[dropped].sum()) <= tol
        kept_rest = np.setdiff1d(keep.numpy(), np.arange(30))
        if kept_rest.size:  # as many as fit: one more (the smallest kept) would exceed it
            assert float(flat[dropped].sum() + flat[kept_rest].min()) > tol
    assert kept_rows(norms, 0.0).numel() == flat.numel()
    assert kept_rows(norms, 1e9).numel() == 30


@pytest.mark.parametrize("tol", [1e-6, 1e-4, 1e-2])
def test_truncated_persistent_forms_are_within_the_tolerance(tax30, tol):
    model = persistent_model(tax30, T=20, k=5, M=3, seed=21, scale=2.5)
    args = _persistent_args(model)
    es, ew, ea = persistent_forms(*args, lags=(1, 2))
    ts, tw, ta = persistent_forms(*args, lags=(1, 2), tolerance=tol)
    assert torch.equal(ts, es)
    assert float((tw - ew).norm()) <= tol
    errors = [float((ta[i] - ea[i]).norm()) for i in range(2)]
    assert max(errors) <= tol
    assert torch.allclose(torch.diagonal(ta, dim1=1, dim2=2),
                          torch.diagonal(ea, dim1=1, dim2=2), rtol=0, atol=1e-15)
    if tol >= 1e-4:  # rows were dropped: the test sees a truncation at all
        assert float((tw - ew).norm()) > 0


def test_each_across_statistic_drops_rows_by_its_own_weights(tax30):
    # slots that rarely stay make the across rows' weights (σ_S^ℓ ρ^ℓ w/T) far smaller than
    # the within rows' (w/T): the across Grams drop their own rows, up to the tolerance, where
    # rows chosen by the within weights would change them by a thousandth of it at most
    model = persistent_model(tax30, T=20, k=5, M=3, seed=25, scale=2.5)
    model.stay[:] = 1e-3
    args = _persistent_args(model)
    tol = 1e-3
    _, ew, ea = persistent_forms(*args, lags=(1,))
    _, tw, ta = persistent_forms(*args, lags=(1,), tolerance=tol)
    error = float((ta[0] - ea[0]).norm())
    assert 1e-2 * tol < error <= tol
    assert float((tw - ew).norm()) <= tol


@pytest.mark.parametrize("tol", [1e-6, 1e-3])
def test_truncated_paper_forms_are_within_the_tolerance_each_week(tax30, tol):
    rng = np.random.default_rng(22)
    theta = torch.tensor(rng.normal(size=(12, 3, 5, tax30.size)) * 2.5)
    es, ew, ea = closed_forms(theta)
    ts, tw, ta = closed_forms(theta, tolerance=tol)
    assert torch.equal(ts, es) and torch.equal(ta, ea)  # presence only: exact
    for week in range(3):
        assert float((tw[week] - ew[week]).norm()) <= tol
    assert float((tw - ew).norm()) > 0


def test_a_tolerance_that_drops_nothing_gives_the_exact_values_and_gradients(tax12):
    model = persistent_model(tax12, T=4, k=3, M=2, seed=23)
    base = _persistent_args(model)

    def value_and_grads(tol):
        xs = [x.clone().requires_grad_(True) for x in base]
        qs, qw, qa = persistent_forms(*xs, lags=(1,), tolerance=tol)
        w = torch.linspace(-1, 1, qw.numel(), dtype=torch.float64).view_as(qw)
        val = (w * qw).sum() + (w * qa[0]).sum() + qs.sum()
        return val.detach(), torch.autograd.grad(val, xs)

    v0, g0 = value_and_grads(0.0)
    v1, g1 = value_and_grads(1e-300)  # the truncated path, every row kept
    assert abs(float(v1 - v0)) < 1e-13
    for a, b in zip(g0, g1, strict=True):
        assert float((a - b).abs().max()) < 1e-13


def test_the_fit_takes_its_tolerance_from_the_noise_and_ends_exact(tax30):
    truth = stats_of(persistent_model(tax30, T=6, k=3, M=2, weeks=2, seed=24))
    sigma = {"single": 1e-3, "within": 4e-4, "across": 3e-4}
    noisy = NoisyStats(truth, sigma)
    opt = FullObjective(steps=40, stop_at_noise=False)
    cut = fit(noisy, "persistent", opt, types=4, weeks=2, progress=False, seed=0,
              device="cpu")
    exact = fit(noisy, "persistent", FullObjective(steps=40, stop_at_noise=False,
                                                   truncation=0.0),
                types=4, weeks=2, progress=False, seed=0, device="cpu")
    assert cut.model.metadata["truncation"] == pytest.approx(1e-3 * 3e-4 * tax30.size)
    assert exact.model.metadata["truncation"] == 0.0
    # the two fits take nearly the same steps; the final J is computed exactly in both
    assert cut.loss_float64 == pytest.approx(exact.loss_float64, rel=1e-3)
    # without a noise scale there is nothing to compare an error with: exact steps
    plain = fit(truth, "persistent", FullObjective(steps=2), types=4, weeks=2,
                progress=False, seed=0, device="cpu")
    assert plain.model.metadata["truncation"] == 0.0


@pytest.mark.parametrize("bad", [-1e-3, 1.5, float("nan"), float("inf"), True, "0.1"])
def test_bad_truncations_are_refused(bad):
    with pytest.raises(InputError, match="truncation"):
        FullObjective(truncation=bad)


def _logs(C, k, m, seed, dtype=torch.float64):
    rng = np.random.default_rng(seed)
    logP = torch.log_softmax(torch.tensor(rng.normal(size=(C, k, m)) * 3.0, dtype=dtype), -1)
    return logP, torch.log1p(-logP.exp()).clamp(min=-1000.0)


@pytest.mark.parametrize("k", [1, 2, 4, 5, 6])
def test_the_expansion_norms_are_those_of_the_whole_expansion(k):
    """The norms as a product of the two halves of the slots are the whole expansion's
    rows' squared norms, subset by subset (odd and even k)."""
    logP, log1mP = _logs(C=23, k=k, m=17, seed=31)
    whole = _log_expansion(logP, log1mP)
    norms = _expansion_norms(logP.exp(), log1mP.exp())
    assert norms.shape == (2 ** k - 1, 23)
    assert torch.allclose(norms, (whole * whole).sum(dim=-1), rtol=1e-12, atol=0)


def test_the_rows_kept_do_not_depend_on_the_sort():
    """On a CPU the rows are ranked by NumPy's sort: the same rows as torch's."""
    rng = np.random.default_rng(4)
    norms = torch.tensor(rng.exponential(size=(31, 500)) ** 6)
    norms[3:9, :40] = 0.0  # ties: rows whose products underflowed
    flat = norms.reshape(-1)
    for tol in (0.0, 1e-6, 1e-2, 1.0, 50.0):
        order = torch.argsort(flat[500:]) + 500
        dropped = torch.cumsum(flat[order], dim=0) <= tol
        expected = torch.sort(torch.cat([torch.arange(500), order[~dropped]])).values
        assert torch.equal(kept_rows(norms, tol), expected), tol


def test_the_kept_rows_alone_have_the_whole_expansions_values_and_gradients():
    """A fit step computes only the kept rows (``_expansion_rows``): the same values and
    the same gradients as those rows taken out of the whole expansion."""
    base = _logs(C=9, k=5, m=11, seed=32)
    rows = torch.tensor(np.sort(np.random.default_rng(33).choice(31 * 9, 70, replace=False)))
    weights = torch.tensor(np.random.default_rng(34).normal(size=(70, 11)))

    def value_and_grads(kept_only):
        xs = [x.clone().requires_grad_(True) for x in base]
        h = (_expansion_rows(*xs, rows) if kept_only else
             _log_expansion(*xs).reshape(-1, 11).index_select(0, rows))
        return h.detach(), torch.autograd.grad((weights * h).sum(), xs)

    (h0, g0), (h1, g1) = value_and_grads(False), value_and_grads(True)
    assert torch.allclose(h1, h0, rtol=1e-12, atol=0) and bool((h0 > 0).any())
    for a, b in zip(g0, g1, strict=True):
        assert torch.allclose(a, b, rtol=1e-10, atol=1e-300)


@pytest.mark.parametrize("m", [5, 8, 31, 469])
def test_the_symmetric_product_is_the_weighted_gram(m):
    rng = np.random.default_rng(m)
    X = torch.tensor(rng.random((40, m)), dtype=torch.float32)
    w = torch.tensor(rng.normal(size=(40, 1)), dtype=torch.float32)
    G = _symmetric_product(X * w, X)
    ref = ((X * w).double().T @ X.double()).float()
    assert torch.allclose(G, ref, rtol=1e-4, atol=1e-5)
    assert torch.allclose(G, G.T, rtol=1e-5, atol=1e-6)
    if m >= 8:  # computed by blocks: those below the diagonal are copies of those above
        cut = round(m / 4)
        assert torch.equal(G[cut:, :cut], G[:cut, cut:].T)
