"""The re-identification protocol: results layout, engines, trials, settings, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from topicslab.api import Mechanism, observe
from topicslab.attacks import (
    AsymmetricAttack,
    RiskResult,
    measure_risk,
    measure_risk_traces,
    risk_curve,
    split_sites,
    student_interval,
    wilson_interval,
)
from topicslab.datamodel import SiteTraces, TopicSets
from topicslab.errors import InputError


@pytest.fixture(scope="module")
def small_pop() -> TopicSets:
    from topicslab.population import generate

    return generate(3000, 3, seed=5)


def test_result_layout_and_statistics(small_pop):
    res = measure_risk(small_pop, weeks=2, targets=500, trials=3, seed=1, progress=False)
    assert isinstance(res, RiskResult)
    d = res.to_dict()
    for key in ("attacks", "users", "targets", "trials", "weeks", "seconds"):
        assert key in d
    assert (d["users"], d["targets"], d["trials"], d["weeks"]) == (3000, 500, 3, 2)
    for name in ("hamming", "asymmetric"):
        a = d["attacks"][name]
        for key in ("risk_mean", "risk_std", "ci95", "expected_risk_mean"):
            assert key in a
        assert len(a["per_trial"]) == 3
        risks = [t["risk"] for t in a["per_trial"]]
        assert a["risk_mean"] == pytest.approx(np.mean(risks))
        assert a["risk_std"] == pytest.approx(np.std(risks, ddof=1))
        lo, hi = a["ci95"]
        assert lo <= a["risk_mean"] <= hi
        assert 0 < a["expected_risk_mean"] < 1
        assert res.attacks[name].risk_mean == a["risk_mean"]
    # fresh API randomness per trial
    seeds = [t["api_seed"] for t in d["per_trial"]]
    assert len(set(seeds)) == 3
    # reproducible
    again = measure_risk(small_pop, weeks=2, targets=500, trials=3, seed=1, progress=False)
    assert again.to_dict()["attacks"] == d["attacks"]


def test_exact_and_brute_engines_agree_through_the_protocol(small_pop):
    kw = dict(weeks=3, targets=150, trials=2, seed=3, progress=False)
    ex = measure_risk(small_pop, engine="exact", **kw).to_dict()["attacks"]
    bf = measure_risk(small_pop, engine="brute", **kw).to_dict()["attacks"]
    for name in ("hamming", "asymmetric"):
        for key in ("expected", "per_trial", "argmax_size_mean", "in_argmax_mean"):
            if key in ex[name]:
                assert ex[name][key] == bf[name][key]


def test_targets_all_makes_expected_risk_deterministic(small_pop):
    tr = observe(small_pop.sets, 2, weeks=2, seed=9)
    a = measure_risk_traces(tr[0], tr[1], attacks=("hamming", "asymmetric"), targets="all",
                            trials=3, seed=1, progress=False)
    b = measure_risk_traces(tr[0], tr[1], attacks=("hamming", "asymmetric"), targets="all",
                            trials=2, seed=7, progress=False)
    for name in ("hamming", "asymmetric"):
        exp_a, exp_b = a.attacks[name].expected, b.attacks[name].expected
        assert len(set(exp_a)) == 1 and exp_a[0] == pytest.approx(exp_b[0], abs=1e-15)
        assert a.attacks[name].expected_risk_std == 0.0
    assert a.targets == 3000


def test_sampled_risk_is_consistent_with_expected(small_pop):
    """Over 3000 targets the tie-broken successes are a sum of independent Bernoullis with
    the exact expected probabilities: |successes - sum p| <= 5 sqrt(sum p(1-p))."""
    from topicslab.attacks import HammingAttack, evaluate_attacks

    tr = observe(small_pop.sets, 2, weeks=1, seed=2)  # r = 1: large argmax sets
    rows = np.arange(3000)
    att = HammingAttack()
    out = evaluate_attacks(tr[0], tr[1], rows, [att])[0]
    p = out.expected()
    hits = out.sample(np.random.default_rng(0))
    assert abs(hits.sum() - p.sum()) <= 5 * np.sqrt((p * (1 - p)).sum())
    assert (out.argmax_size > 1).mean() > 0.5  # heavy ties at r = 1


def test_matching_setting_uses_every_user(small_pop):
    res = measure_risk(small_pop, weeks=2, trials=1, setting="matching", progress=False,
                       attacks="hamming")
    assert res.targets == 3000 and res.setting == "matching"
    rand = measure_risk(small_pop, weeks=2, trials=1, targets="all", progress=False,
                        attacks="hamming")
    # Lemma 5: the per-item rule's matching accuracy is the random-user accuracy
    assert res.attacks["hamming"].expected_risk_mean == pytest.approx(
        rand.attacks["hamming"].expected_risk_mean)


def test_populations_per_trial(small_pop):
    from topicslab.population import generate

    pops = [generate(800, 2, seed=s) for s in range(2)]
    res = measure_risk(pops[0], weeks=2, targets=100, trials=2, populations=pops,
                       progress=False, attacks=["hamming"])
    assert [t["users"] for t in res.per_trial] == [800, 800]
    res2 = measure_risk(pops[0], weeks=2, targets=100, trials=2,
                        populations=lambda t: pops[t], progress=False, attacks=["hamming"])
    assert res2.to_dict()["attacks"] == res.to_dict()["attacks"]
    with pytest.raises(InputError, match="populations"):
        measure_risk(pops[0], weeks=2, targets=10, trials=3, populations=pops,
                     progress=False)


def test_a_trials_population_is_let_go_before_the_next_is_drawn():
    """Per-trial populations (synthetic users drawn per trial) are 0.8 GB each at the paper's
    10M users: the protocol holds one at a time, so the next is drawn after the last is gone
    (measure_risk and risk_curve alike)."""
    import gc
    import weakref

    from topicslab.population import generate

    for run in (lambda pops: measure_risk(generate(600, 2, seed=9), weeks=2, targets=50,
                                          trials=3, populations=pops, progress=False,
                                          attacks=["hamming", "asymmetric"]),
                lambda pops: risk_curve(generate(600, 2, seed=9), weeks=(1, 2), targets=50,
                                        trials=3, populations=pops, progress=False)):
        previous: list[weakref.ref] = []
        alive: list[bool] = []

        def draw(trial: int, previous: list[weakref.ref] = previous,
                 alive: list[bool] = alive) -> TopicSets:
            gc.collect()
            alive.extend(ref() is not None for ref in previous)
            sets = generate(600, 2, seed=10 + trial)
            previous.append(weakref.ref(sets))
            return sets

        run(draw)
        assert len(previous) == 3 and alive == [False, False, False]


def test_risk_curve(small_pop):
    curve = risk_curve(small_pop, weeks=(1, 2, 3), targets=300, trials=1, progress=False)
    assert curve.weeks == [1, 2, 3]
    d = curve.to_dict()
    assert [c["weeks"] for c in d["curve"]] == [1, 2, 3]
    # more weeks, more risk (with margin: 3000 users, 300 targets)
    exp = [r.attacks["hamming"].expected_risk_mean for r in curve.results]
    assert exp[0] < exp[2]


@pytest.mark.parametrize(("engine", "lookback", "setting"), [
    ("exact", 1, "random-user"), ("exact", 2, "random-user"), ("brute", 1, "random-user"),
    ("exact", 1, "matching")])
def test_risk_curve_equals_measure_risk_per_r(engine, lookback, setting):
    """One shared count serves every r: each point is exactly ``measure_risk(weeks=r)``
    (expected and tie-broken risks, per trial), with the attacks fitted per r."""
    from topicslab.population import generate

    sets = generate(600 if engine == "brute" else 2500, 4, seed=21)
    mech = Mechanism(lookback=lookback)
    rs = (1, 2, 4 - lookback + 1) if lookback == 1 else (1, 3)
    opts = {"targets": "all" if setting == "matching" else 400, "trials": 2, "seed": 3,
            "progress": False, "engine": engine, "mechanism": mech, "setting": setting}
    curve = risk_curve(sets, weeks=rs, **opts)
    for r, got in zip(rs, curve.results, strict=True):
        alone = measure_risk(sets, weeks=r, **opts)
        assert (got.weeks, got.trace_weeks) == (alone.weeks, alone.trace_weeks)
        for name in ("hamming", "asymmetric"):
            a, b = got.attacks[name], alone.attacks[name]
            assert a.expected == b.expected and a.risk == b.risk, (r, name)
            assert a.argmax_size_mean == b.argmax_size_mean
            assert a.description == b.description  # fitted on the r-week table
    assert any("served r" in n for n in curve.results[0].notes)


def test_evaluate_suffixes_checks_its_arguments(small_pop):
    from topicslab.attacks import HammingAttack, evaluate_suffixes

    tr = observe(small_pop.sets[:50], 2, seed=1)
    with pytest.raises(ValueError, match="suffix"):
        evaluate_suffixes(tr[0], tr[1], np.arange(50), [[HammingAttack()]], [4])


def test_lookback_widens_the_traces(small_pop):
    res = measure_risk(small_pop, weeks=1, targets=200, trials=1, progress=False,
                       mechanism=Mechanism(lookback=3), attacks="hamming")
    assert (res.weeks, res.trace_weeks) == (1, 3)
    assert res.mechanism is not None and res.mechanism["lookback"] == 3


def test_targets_capped_with_a_note(small_pop):
    res = measure_risk(small_pop, weeks=1, targets=10_000, trials=1, progress=False,
                       attacks="hamming")
    assert res.targets == 3000 and res.notes


def test_site_traces_input_and_split():
    rng = np.random.default_rng(0)
    traces = rng.integers(0, 469, size=(2, 400, 3)).astype(np.int16)
    st = SiteTraces(traces[::-1].copy(), "v2", site_ids=np.array([9, 4]))
    s1, s2 = split_sites(st)
    np.testing.assert_array_equal(s1, traces[0])
    np.testing.assert_array_equal(s2, traces[1])  # site 4 (the smaller id) is website 1
    res = measure_risk_traces(st, attacks=["hamming", AsymmetricAttack()], targets=50,
                              progress=False)
    assert set(res.attacks) == {"hamming", "asymmetric"}
    with pytest.raises(InputError, match="exactly 2"):
        split_sites(SiteTraces(traces[:1], "v2"))


def test_generic_sequences_hamming_only():
    rng = np.random.default_rng(1)
    s1 = rng.integers(0, 10**6, size=(500, 4))
    res = measure_risk_traces(s1, s1.copy(), targets="all", progress=False)
    assert res.attacks["hamming"].risk_mean == 1.0  # identical traces, all distinct
    with pytest.raises(InputError, match="not a topic"):
        measure_risk_traces(s1, s1, attacks="asymmetric", progress=False)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(targets=0), "targets"),
        (dict(targets="some"), "targets"),
        (dict(targets=True), "targets"),
        (dict(trials=0), "trials"),
        (dict(weeks=4), "weeks"),
        (dict(weeks=0), "weeks"),
        (dict(attacks="nope"), "unknown attack"),
        (dict(attacks=[]), "no attack"),
        (dict(attacks=["hamming", "hamming"]), "distinct"),
        (dict(engine="gpu"), "engine"),
        (dict(setting="other"), "setting"),
        (dict(mechanism=Mechanism(k=4)), "k"),
        (dict(mechanism=Mechanism(taxonomy="v1")), "taxonomy"),
    ],
)
def test_bad_input(small_pop, kwargs, message):
    base = dict(weeks=2, targets=10, trials=1, progress=False)
    base.update(kwargs)
    with pytest.raises(InputError, match=message):
        measure_risk(small_pop, **base)


def test_bad_traces():
    good = np.zeros((5, 2), np.int16)
    with pytest.raises(InputError, match="same shape"):
        measure_risk_traces(good, np.zeros((4, 2), np.int16), progress=False)
    with pytest.raises(InputError, match="integer"):
        measure_risk_traces(good.astype(float), good.astype(float), progress=False)
    with pytest.raises(InputError, match=">= 0"):
        measure_risk_traces(good - 3, good, progress=False)
    with pytest.raises(InputError, match="missing"):
        measure_risk_traces(good, progress=False)
    with pytest.raises(InputError, match="no users"):
        measure_risk_traces(good[:0], good[:0], progress=False)


def test_intervals():
    lo, hi = wilson_interval(5, 100)
    assert lo < 0.05 < hi and lo > 0.01 and hi < 0.12
    assert wilson_interval(0, 0) == (0.0, 1.0)
    lo, hi = student_interval([0.1, 0.2, 0.3])
    assert lo == pytest.approx(0.2 - 4.302652729911275 * 0.1 / np.sqrt(3))
    with pytest.raises(ValueError):
        student_interval([0.1])
