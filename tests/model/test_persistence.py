"""The persistence statistic on the model side: factorial moments, their closed form against
the exact pair statistics and the sampler, the fit's term and its effect."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import torch
from model_helpers import persistent_model

from topicslab import model as tm
from topicslab.model.closed_forms import persistent_forms
from topicslab.model.persistence import (
    PersistenceTerm,
    factorial_moments,
    overlap_histogram,
    overlap_moments,
    sampled_overlap,
)
from topicslab.taxonomy import Taxonomy


def _args(mdl: tm.TypeMixture) -> tuple[torch.Tensor, ...]:
    assert mdl.stay is not None and mdl.mode_weights is not None and mdl.mode_stay is not None
    return (torch.tensor(mdl.theta, dtype=torch.float64),
            torch.tensor(mdl.mode_weights, dtype=torch.float64),
            torch.tensor(mdl.mode_stay, dtype=torch.float64),
            torch.log(torch.tensor(mdl.stay, dtype=torch.float64)))


def test_factorial_moments_of_a_binomial() -> None:
    n, p = 5, 0.3
    hist = [math.comb(n, j) * p ** j * (1 - p) ** (n - j) for j in range(n + 1)]
    f = factorial_moments(np.array(hist))
    assert f.tolist() == pytest.approx([n * p, n * (n - 1) * p ** 2,
                                        n * (n - 1) * (n - 2) * p ** 3])


def test_first_moment_is_the_trace_of_the_exact_across_statistic(tax12: Taxonomy) -> None:
    """E[O_ℓ] = Σ_o q_across(ℓ)(o, o) exactly: the approximation is in the higher moments."""
    mdl = persistent_model(tax12, T=3, M=2, k=4, seed=3)
    args = _args(mdl)
    lags = (1, 2, 5)
    mom = overlap_moments(*args, lags)
    _, _, qa = persistent_forms(*args, lags)
    for i in range(len(lags)):
        assert float(mom[i, 0]) == pytest.approx(float(torch.diagonal(qa[i]).sum()), rel=1e-9)


def test_closed_form_matches_the_sampler_where_topics_are_independent() -> None:
    """Slots on disjoint topics, each nearly deterministic: given the component the topics are
    independent, so all three moments are exact; the sampler agrees within 4 standard
    errors."""
    from model_helpers import small_taxonomy

    tax = small_taxonomy(40)
    T, M, k = 2, 2, 4
    theta = np.full((T, M, k, tax.size), -30.0, dtype=np.float32)
    for t in range(T):
        for mu in range(M):
            for s in range(k):
                theta[t, mu, s, (t * M + mu) * k + s] = 30.0  # one topic per slot
    rng = np.random.default_rng(0)
    mdl = tm.TypeMixture(theta, tax, {"weeks": 4},
                         stay=rng.uniform(0.2, 0.9, size=(T, M, k)).astype(np.float32),
                         mode_weights=np.array([[0.3, 0.7], [0.6, 0.4]], dtype=np.float32),
                         mode_stay=np.array([0.5, 0.9], dtype=np.float32))
    n = 40_000
    hist = sampled_overlap(mdl, 3, n, seed=1)
    got = factorial_moments(hist)
    want = overlap_moments(*_args(mdl), (1, 2, 3))
    j = np.arange(k + 1)
    for lag in range(3):
        for i, f in enumerate((j, j * (j - 1), j * (j - 1) * (j - 2))):
            sd = math.sqrt(max(float(hist[lag] @ f ** 2) - float(hist[lag] @ f) ** 2, 1e-12) / n)
            assert abs(float(got[lag, i]) - float(want[lag, i])) <= 4 * sd + 1e-6


def test_term_offset_puts_the_sampled_moments_in_the_loss(tax12: Taxonomy) -> None:
    mdl = persistent_model(tax12, T=3, M=2, k=4, seed=5)
    target = sampled_overlap(mdl, 2, 20_000, seed=9)  # the model's own overlap
    term = PersistenceTerm(target, users=20_000, seed=100)
    params = {"theta": torch.tensor(mdl.theta), "mode_logit": torch.log(torch.tensor(
        mdl.mode_weights)), "mode_stay_logit": torch.logit(torch.tensor(mdl.mode_stay)),
        "slot_stay_logit": torch.logit(torch.tensor(mdl.stay))}
    laws = tm.PersistentTypes.laws
    loss = term.sse(params, laws, lambda: mdl, step=0)
    # the model matches its own statistic up to sampling noise: met, and a small loss
    assert term.met()
    assert float(loss) < 3 * 2 * 3 * 4  # 6 moments, each within ~2 s.e. (relative 1%)
    far = PersistenceTerm(np.array([[1.0, 0, 0, 0, 0], [1.0, 0, 0, 0, 0]]), users=5_000)
    far.sse(params, laws, lambda: mdl, step=0)
    assert not far.met()
    err = far.relative_errors()
    assert err is not None and err.shape == (2, 3)


@dataclass
class _Stats:
    q_single: np.ndarray
    q_within: np.ndarray
    q_across: np.ndarray
    taxonomy: Any
    k: int
    q_overlap: np.ndarray | None = None


def test_fit_with_the_statistic_matches_the_overlap_better() -> None:
    """A population whose users each keep a fixed profile half of the time and redraw it
    otherwise (pair statistics alone cannot tell it from gradual drift): the fit that sees
    the persistence statistic reproduces its overlap moments more closely."""
    from model_helpers import small_taxonomy

    tax = small_taxonomy(30)
    truth = persistent_model(tax, T=4, M=3, k=4, seed=11)
    pop = tm.sample(truth, 30_000, seed=2, weeks=4)
    sets = pop.sets
    k = 4
    m = tax.size
    pres = np.zeros((sets.shape[0], 4, m))
    for w in range(4):
        for s in range(k):
            idx = sets[:, w, s]
            ok = idx >= 0
            pres[np.flatnonzero(ok), w, idx[ok]] = 1
    qs = pres[:, :2].mean(axis=(0, 1))
    qw = np.einsum("uwa,uwb->ab", pres[:, :2], pres[:, :2]) / (2 * len(sets))
    np.fill_diagonal(qw, 0)
    qa = np.einsum("ua,ub->ab", pres[:, 0], pres[:, 1]) / len(sets)
    first = pres[:, 0]
    hist = np.stack([np.bincount((first * pres[:, lag]).sum(1).astype(int), minlength=k + 1)
                     [:k + 1] / len(sets) for lag in (1, 2, 3)])
    stats = _Stats(qs, qw, qa, tax, k, hist)
    errs = {}
    for weight in (0.0, 0.03):
        res = tm.fit(stats, tm.PersistentTypes(types=4, modes=3, weeks=4),
                     tm.FullObjective(steps=150, persistence=weight), seed=0, progress=False)
        got = factorial_moments(sampled_overlap(res.model, 3, 30_000, seed=5))
        errs[weight] = float(((got - factorial_moments(hist)).abs()
                              / factorial_moments(hist)).max())
        assert ("persistence" in res.model.metadata) == (weight > 0)
    assert errs[0.03] < errs[0.0]


def test_options_refused_in_one_line(tmp_path: Any) -> None:
    from typer.testing import CliRunner

    from topicslab.cli import app

    runner = CliRunner()
    stats = tmp_path / "stats"
    stats.mkdir()
    for extra in (["--persistence", "-1"], ["--persistence", "nan"],
                  ["--optimizer", "paper", "--model", "paper", "--persistence", "0.1"],
                  ["--model", "paper", "--persistence", "0.1"]):
        res = runner.invoke(app, ["fit", "--stats", str(stats), "--out", str(tmp_path / "m"),
                                  *extra])
        assert res.exit_code == 2, res.output
        assert "--persistence" in res.output and len(res.output.strip().splitlines()) == 1
        assert not (tmp_path / "m").exists()
    res = runner.invoke(app, ["run", "--stats", str(stats), "--out", str(tmp_path / "r"),
                              "--overlap-lags", "1"])
    assert res.exit_code == 2 and "--overlap-lags" in res.output, res.output
    res = runner.invoke(app, ["run", "--out", str(tmp_path / "r"), "--preset", "smoke",
                              "--overlap-lags", "4"])
    assert res.exit_code == 2 and "--overlap-lags" in res.output, res.output
    assert not (tmp_path / "r").exists()


def test_resumed_fit_with_the_term_is_exact(tmp_path: Any, tax12: Taxonomy) -> None:
    """The term's offset and unit are in the checkpoint: a fit interrupted at step 20 and
    resumed from step 14 ends where an uninterrupted one does."""
    from topicslab.errors import InputError

    truth = persistent_model(tax12, T=3, M=2, k=3, seed=4)
    pop = tm.sample(truth, 4000, seed=1, weeks=3)
    hist = overlap_histogram(pop.sets, 2)
    from model_helpers import stats_of
    base = stats_of(tm.TypeMixture(truth.theta, tax12, {"weeks": 2}, stay=truth.stay,
                                   mode_weights=truth.mode_weights, mode_stay=truth.mode_stay))
    st = _Stats(base.q_single, base.q_within, base.q_across, tax12, 3, hist)

    class Stop(Exception):
        pass

    def stop(entry: dict[str, float]) -> None:
        if entry["step"] >= 20:
            raise Stop

    kw: dict[str, Any] = dict(progress=False, seed=3, device="cpu", threads=1)
    variant = tm.PersistentTypes(types=3, modes=2, weeks=3)
    opt = tm.FullObjective(steps=30, persistence=0.03)
    straight = tm.fit(st, variant, opt, **kw)
    with pytest.raises(Stop):
        tm.fit(st, variant, opt, **kw, checkpoint_dir=tmp_path, checkpoint_every=7,
               callback=stop)
    resumed = tm.fit(st, variant, opt, **kw, checkpoint_dir=tmp_path, checkpoint_every=7,
                     resume=True)
    np.testing.assert_allclose(resumed.model.theta, straight.model.theta, rtol=0, atol=1e-6)
    np.testing.assert_allclose(resumed.model.stay, straight.model.stay, rtol=0, atol=1e-6)
    # another weight is another fit: its checkpoint is not resumed
    with pytest.raises(InputError, match="checkpoint was made with"):
        tm.fit(st, variant, tm.FullObjective(steps=30, persistence=0.3), **kw,
               checkpoint_dir=tmp_path, resume=True)


def test_a_release_without_the_statistic_fits_as_before() -> None:
    """No persistence key in the optimiser's config (checkpoints of earlier fits resume)."""
    assert "persistence" not in tm.FullObjective().config()
