"""J, its minibatch form, the fitters (default and paper), checkpoints, early stops and the
rejection of bad statistics."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from model_helpers import Stats, random_model, small_taxonomy, stats_of

from topicslab.errors import InputError
from topicslab.model import (
    FullObjective,
    Objective,
    PaperAdam,
    PaperTypes,
    PersistentTypes,
    QualityBar,
    Targets,
    TypeMixture,
    exact_loss,
    fit,
    model_terms,
    n_terms,
    target_terms,
)


def test_n_terms_of_the_paper():
    assert n_terms(4, 469) == 1_100_743


def test_objective_is_mean_squared_error_over_terms(tax12):
    true = random_model(tax12, T=5, r=3, k=4, seed=1)
    st = stats_of(true)
    tg = Targets.from_statistics(st)
    guess = random_model(tax12, T=4, r=3, k=4, seed=2)
    qs, qw, qa = guess.statistics()
    brute = np.mean((model_terms(qs, qw, qa) - target_terms(tg, 3)) ** 2)
    assert math.isclose(exact_loss(guess.theta, tg), brute, rel_tol=1e-10)
    assert exact_loss(true.theta, Targets.from_statistics(
        Stats(*[x[0] for x in true.statistics()[:2]], true.statistics()[2][0],
              tax12, 4))) >= 0.0


def test_minibatch_terms_equal_full_objective(tax12):
    tg = Targets.from_statistics(stats_of(random_model(tax12, T=5, r=3, k=4, seed=1)))
    obj = Objective(tg, 3, dtype=torch.float64)
    th = torch.tensor(np.random.default_rng(3).normal(size=(4, 3, 4, 12)))
    full, _ = obj.sse(th)
    P = torch.softmax(th, dim=-1)
    idx = torch.randperm(obj.n_terms, generator=torch.Generator().manual_seed(0))
    parts = sum(float(obj.batch_sse(P, idx[i:i + 97])) for i in range(0, obj.n_terms, 97))
    assert math.isclose(parts, float(full), rel_tol=1e-10)


def stationary_model(tax, T, r, k, seed):
    """A model whose weeks are identical: its statistics are exactly realisable targets."""
    one = random_model(tax, T=T, r=1, k=k, seed=seed)
    return TypeMixture(np.repeat(one.theta, r, axis=1), tax)


def test_default_fit_converges_on_known_targets():
    tax = small_taxonomy(20)
    true = stationary_model(tax, T=5, r=2, k=5, seed=4)
    st = stats_of(true)
    tg = Targets.from_statistics(st)
    init = exact_loss(np.log(np.clip(st.q_single, 1e-7, None) / 5)[None, None, None, :]
                      * np.ones((1, 2, 5, 1)), tg)
    res = fit(st, "paper", FullObjective(steps=200), types=10, weeks=2, progress=False,
              seed=1, device="cpu")
    assert res.stopped == "steps"
    assert res.loss_float64 < init / 100, (res.loss_float64, init)
    assert math.isclose(res.loss, res.loss_float64, rel_tol=1e-3)
    assert res.quality["share_rel_within_20pct"] > 0.95
    assert res.model.theta.shape == (10, 2, 5, 20)
    assert res.model.metadata["statistics_fingerprint"] == tg.fingerprint
    losses = [h["loss"] for h in res.history]
    assert losses[-1] < losses[0]
    assert any("share_rel_within_20pct" in h for h in res.history)


def test_paper_optimizer_reduces_the_loss(tax12):
    st = stats_of(stationary_model(tax12, T=4, r=2, k=3, seed=5))
    # the paper's lr = 1.0 is tuned for 4.7M parameters; a toy problem needs a smaller one
    res = fit(st, PaperTypes(types=6, weeks=2), PaperAdam(epochs=100, batch_terms=64, lr=0.2),
              progress=False, seed=2, device="cpu")
    assert res.stopped == "epochs"
    first, last = res.history[0]["loss"], res.history[-1]["loss"]
    assert last < first / 100, (first, last)
    # the paper's recipe by default: lr 1.0, batches of 8192 terms, init N(0, 0.001^2)
    paper = PaperAdam()
    assert (paper.lr, paper.batch_terms, paper.init_std, paper.epochs) == (
        1.0, 8192, 0.001, 8000)
    res_sum = fit(st, PaperTypes(types=6, weeks=2),
                  PaperAdam(epochs=3, batch_terms=64, lr=0.05, batch_loss="sum"),
                  progress=False, seed=2, device="cpu")
    assert res_sum.history[-1]["loss"] < first
    res0 = fit(st, PaperTypes(types=6, weeks=2),
               PaperAdam(epochs=1, batch_terms=10**6, lr=1e-12), progress=False, seed=2,
               device="cpu")
    assert float(np.abs(res0.model.theta).max()) < 0.01
    assert fit(st, "paper", "paper", types=6, weeks=2, progress=False,
               max_minutes=0.001).model.metadata["optimizer"] == "paper"
    with pytest.raises(InputError, match="paper's types only"):
        fit(st, "persistent", PaperAdam(epochs=1), progress=False)


def test_early_stop_at_loss_and_bar(tax12):
    st = stats_of(stationary_model(tax12, T=4, r=2, k=3, seed=6))
    res = fit(st, "paper", FullObjective(steps=500), types=8, weeks=2, target=1e-5,
              progress=False, seed=0, device="cpu")
    assert res.stopped == "target"
    assert res.loss <= 1e-5 and res.steps < 500
    bar = QualityBar(abs_tol=0.01, abs_share=0.9, rel_tol=0.2, rel_share=0.8)
    res2 = fit(st, "paper", FullObjective(steps=500), types=8, weeks=2, target=bar,
               progress=False, device="cpu")
    assert res2.stopped == "target" and res2.steps < 500
    assert bar.met(res2.quality["share_abs_within_0_1pp"],
                   res2.quality["share_rel_within_20pct"])


def test_divergence_names_the_learning_rate(tax12):
    """A step size past stability overflows a softmax: one line naming lr, not a model with
    non-finite logits."""
    st = stats_of(random_model(tax12, T=4, r=2, k=3, seed=6))
    with pytest.raises(InputError, match=r"diverged at step \d+ .*lower the learning rate") \
            as exc:
        fit(st, "persistent", FullObjective(steps=200, lr=1e4), types=8, weeks=2,
            progress=False, seed=0, device="cpu")
    assert exc.value.field == "lr"
    fine = fit(st, "persistent", FullObjective(steps=5), types=8, weeks=2, progress=False,
               seed=0, device="cpu")
    assert np.isfinite(fine.loss)


def test_time_budget(tax12):
    st = stats_of(random_model(tax12, T=4, r=2, k=3, seed=6))
    res = fit(st, "persistent", FullObjective(steps=10**6), types=8, weeks=2,
              max_minutes=0.02, progress=False, device="cpu")
    assert res.stopped == "time"
    assert res.seconds < 30


class _Interrupt(Exception):
    pass


@pytest.mark.parametrize("variant, optimizer", [
    ("paper", FullObjective(steps=40, eval_every=1)),
    ("persistent", FullObjective(steps=40, eval_every=1)),
    ("paper", PaperAdam(epochs=6, batch_terms=50, eval_every=1)),
])
def test_checkpoint_resume_is_exact(tmp_path, tax12, variant, optimizer):
    """A fit interrupted after step 20 and resumed from its last checkpoint (step 14) ends
    exactly where an uninterrupted fit does."""
    st = stats_of(random_model(tax12, T=4, r=2, k=3, seed=7))
    kw = dict(types=5, weeks=2, progress=False, seed=3, device="cpu", threads=1)
    straight = fit(st, variant, optimizer, **kw)

    def stop(entry):
        if entry["step"] >= 20:
            raise _Interrupt

    with pytest.raises(_Interrupt):
        fit(st, variant, optimizer, **kw, checkpoint_dir=tmp_path, checkpoint_every=7,
            callback=stop)
    assert (tmp_path / "checkpoint.pt").is_file()
    resumed = fit(st, variant, optimizer, **kw, checkpoint_dir=tmp_path, checkpoint_every=7,
                  resume=True)
    assert resumed.steps == straight.steps
    np.testing.assert_allclose(resumed.model.theta, straight.model.theta, rtol=0, atol=1e-6)
    if variant == "persistent":
        np.testing.assert_allclose(resumed.model.stay, straight.model.stay, rtol=0, atol=1e-6)
    with pytest.raises(InputError, match="checkpoint was made with"):
        fit(st, variant, optimizer, **{**kw, "seed": 4}, checkpoint_dir=tmp_path,
            resume=True)


def test_cyclic_adds_the_wrap_pair(tax12):
    st = stats_of(random_model(tax12, T=4, r=3, k=3, seed=8))
    res = fit(st, PaperTypes(types=4, weeks=3, cyclic=True), FullObjective(steps=3),
              progress=False, device="cpu")
    assert res.model.week_pairs == [(0, 1), (1, 2), (2, 0)]


def _bad(tax, **change):
    st = stats_of(random_model(tax, T=3, r=2, k=3, seed=9))
    for k, v in change.items():
        setattr(st, k, v)
    return st


@pytest.mark.parametrize("change, message", [
    ("nan", "not finite"),
    ("negative", "negative"),
    ("above_one", "greater than 1"),
    ("wrong_taxonomy", "does not match taxonomy"),
    ("asymmetric", "not symmetric"),
    ("diagonal", "diagonal"),
    ("k", "k must be"),
])
def test_bad_statistics_are_rejected(tax12, change, message):
    st = _bad(tax12)
    if change == "nan":
        st.q_across = st.q_across.copy()
        st.q_across[2, 3] = np.nan
    elif change == "negative":
        st.q_single = st.q_single.copy()
        st.q_single[1] = -0.01
    elif change == "above_one":
        st.q_within = st.q_within.copy()
        st.q_within[1, 2] = st.q_within[2, 1] = 1.5
    elif change == "wrong_taxonomy":
        st.taxonomy = small_taxonomy(13)
    elif change == "asymmetric":
        st.q_within = st.q_within.copy()
        st.q_within[1, 2] += 0.01
    elif change == "diagonal":
        st.q_within = st.q_within.copy()
        st.q_within[3, 3] = 0.1
    elif change == "k":
        st.k = 1
    with pytest.raises(InputError, match=message) as info:
        fit(st, types=2, weeks=2, optimizer=FullObjective(steps=1), progress=False)
    assert "\n" not in str(info.value)


def test_bad_options_are_rejected(tax12):
    st = _bad(tax12)
    one = FullObjective(steps=1)
    for kw, msg in ((dict(optimizer="sgd"), "optimizer"), (dict(types=0), "types"),
                    (dict(model="mixture"), "model"),
                    (dict(device="tpu"), "device"), (dict(target="best"), "target"),
                    (dict(max_minutes=0), "max_minutes"),
                    (dict(max_minutes=float("nan")), "max_minutes"),
                    (dict(checkpoint_every=0), "checkpoint_every")):
        with pytest.raises(InputError, match=msg):
            fit(st, **{"weeks": 2, "optimizer": one, "progress": False, **kw})
    for make, msg in ((lambda: PaperAdam(batch_loss="max"), "batch_loss"),
                      (lambda: FullObjective(single_weight="log"), "single_weight"),
                      (lambda: FullObjective(lr=-1), "lr"),
                      (lambda: FullObjective(lr=0), "lr"),
                      (lambda: FullObjective(steps=0), "steps"),
                      (lambda: PersistentTypes(types=0), "types"),
                      (lambda: PersistentTypes(init_slot_stay=1.0), "init_slot_stay"),
                      (lambda: PersistentTypes(modes=0), "modes")):
        with pytest.raises(InputError, match=msg):
            make()
    if not torch.cuda.is_available():
        with pytest.raises(InputError, match="CUDA"):
            fit(st, weeks=2, optimizer=one, progress=False, device="cuda")


class NoisyStats(Stats):
    """Statistics that know their DP noise scale (as ``DPStatistics`` does from its ledger)."""

    def __init__(self, base: Stats, sigma: dict[str, float]) -> None:
        super().__init__(base.q_single, base.q_within, base.q_across, base.taxonomy, base.k)
        self.sigma = sigma

    def noise_sigmas(self) -> dict[str, float]:
        return self.sigma


def _released(truth: Stats, sigma: dict[str, float], rng: np.random.Generator) -> Stats:
    """The truth plus Gaussian noise, clipped at 0 like a DP release (q_within symmetric)."""
    m = truth.q_single.size
    noise_w = np.triu(rng.normal(size=(m, m)) * sigma["within"], 1)
    qw = np.clip(truth.q_within + noise_w + noise_w.T, 0, 1)
    np.fill_diagonal(qw, 0)
    return Stats(np.clip(truth.q_single + rng.normal(size=m) * sigma["single"], 0, 1), qw,
                 np.clip(truth.q_across + rng.normal(size=(m, m)) * sigma["across"], 0, 1),
                 truth.taxonomy, truth.k)


def test_noise_floor_is_the_expected_error_of_the_truth(tax30):
    """Evaluated at the true statistics, the floor is E[J(truth)] over clipped noisy releases
    (Monte Carlo, 5 standard errors); all-zero targets give σ²/2 per term."""
    truth = stats_of(random_model(tax30, T=5, r=2, k=3, seed=31, scale=1.0))
    sigma = {"single": 0.02, "within": 0.004, "across": 0.006}
    floor = Objective(Targets.from_statistics(NoisyStats(truth, sigma)), 2,
                      dtype=torch.float64).noise_floor()
    assert floor is not None
    rng = np.random.default_rng(32)
    qs, qw, qa = (torch.tensor(x)[None] for x in (truth.q_single, truth.q_within,
                                                  truth.q_across))
    js = []
    for _ in range(400):
        obj = Objective(Targets.from_statistics(_released(truth, sigma, rng)), 2,
                        dtype=torch.float64)
        js.append(float(obj.sse_of(qs, qw, qa)) / obj.n_terms)
    mean, se = float(np.mean(js)), float(np.std(js, ddof=1) / math.sqrt(len(js)))
    assert abs(mean - floor) < 5 * se, (mean, floor, se)
    # a floor without clipping (σ² per term) would be far off: the test can tell
    m = truth.q_single.size
    plain = (2 * (m * sigma["single"] ** 2 + m * (m - 1) / 2 * sigma["within"] ** 2)
             + m * m * sigma["across"] ** 2) / n_terms(2, m)
    assert abs(mean - plain) > 5 * se
    zeros = Stats(np.zeros(m), np.zeros((m, m)), np.zeros((m, m)), tax30, 3)
    zfloor = Objective(Targets.from_statistics(NoisyStats(zeros, sigma)), 2).noise_floor()
    assert zfloor == pytest.approx(plain / 2, rel=1e-6)
    assert Objective(Targets.from_statistics(truth), 2).noise_floor() is None


def test_fit_stops_at_the_noise_floor(tax12):
    truth = stats_of(stationary_model(tax12, T=4, r=2, k=3, seed=6))
    sigma = {"single": 0.01, "within": 0.003, "across": 0.003}
    noisy = NoisyStats(_released(truth, sigma, np.random.default_rng(7)), sigma)
    floor = Objective(Targets.from_statistics(noisy), 2).noise_floor()
    res = fit(noisy, "paper", FullObjective(steps=400), types=8, weeks=2, progress=False,
              seed=0, device="cpu")
    assert res.stopped == "noise" and res.steps < 400
    assert floor is not None and res.loss <= floor < res.history[-2]["loss"]
    assert res.model.metadata["noise_floor"] == pytest.approx(floor)
    full = fit(noisy, "paper", FullObjective(steps=400, stop_at_noise=False), types=8,
               weeks=2, progress=False, seed=0, device="cpu")
    assert full.stopped == "steps" and full.steps == 400 and full.loss < res.loss
    # without the noise scale (statistics from elsewhere) the fit runs all its steps
    plain = fit(Stats(noisy.q_single, noisy.q_within, noisy.q_across, tax12, noisy.k),
                "paper", FullObjective(steps=60), types=8, weeks=2, progress=False, seed=0,
                device="cpu")
    assert plain.stopped == "steps"
    with pytest.raises(InputError, match="stop_at_noise"):
        FullObjective(stop_at_noise="yes")  # type: ignore[arg-type]


def test_thread_trials_back_off_while_the_other_count_loses(monkeypatch):
    """After the warm-up trial, trial steps on the other thread count wait 40, 80, 160, 160 ...
    steps while they lose; the count switches (and the wait resets) as soon as they win."""
    import importlib

    fit_mod = importlib.import_module("topicslab.model.fit")  # the module, not ``fit``
    threads = {"n": 2}
    monkeypatch.setattr(fit_mod.torch, "get_num_threads", lambda: threads["n"])
    monkeypatch.setattr(fit_mod.torch, "set_num_threads",
                        lambda n: threads.__setitem__("n", int(n)))
    clock = {"t": 0.0, "one_thread_step": 2.0}

    def step_and_tick(tuner):
        clock["t"] += clock["one_thread_step"] if threads["n"] == 1 else 1.0
        tuner.tick()

    monkeypatch.setattr(fit_mod.time, "perf_counter", lambda: clock["t"])
    tuner = fit_mod._Threads(None, torch.device("cpu"))
    starts = []
    for step in range(1, 600):
        before = threads["n"]
        step_and_tick(tuner)
        if before == 2 and threads["n"] == 1:
            starts.append(step)
    gaps = np.diff(starts).tolist()
    assert starts[0] == 2 and gaps[:4] == [42, 82, 162, 162]
    assert threads["n"] == 2
    clock["one_thread_step"] = 0.5  # one thread now wins: the next trial switches to it
    back = 0
    for _ in range(300):
        before = threads["n"]
        step_and_tick(tuner)
        back += before == 1 and threads["n"] == 2
    # the wait restarts at 20 after the switch (trials on two threads at +22, +42, +82, ...):
    # at the 160-step wait there would be at most one trial in the 160 steps after it
    assert threads["n"] == 1 and back >= 3
