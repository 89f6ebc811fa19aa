"""Topics API personas and the end-to-end disclosure experiment (small seeded runs)."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from topicslab.api import Mechanism
from topicslab.disclosure import (
    PRI,
    PersonaModel,
    SensitiveCategory,
    default_categories,
    report_section,
    simulate_personas,
    topic_m_hat,
    topics_experiment,
)
from topicslab.disclosure.experiment import _fit_topics
from topicslab.errors import InputError
from topicslab.taxonomy import load

CATS = default_categories()


def test_default_mapping_follows_spec_04() -> None:
    by_name = {c.name: c.proxies for c in CATS}
    assert by_name["bankruptcy"] == (447, 170, 449)
    assert by_name["unemployment"] == (236, 238, 237)
    assert by_name["divorce"] == (242,)
    assert set(by_name) == {"bankruptcy", "unemployment", "divorce", "pregnancy"}
    v1 = {c.name: c.proxies for c in default_categories("v1")}
    assert v1["divorce"] == (242,) and load("v1").label(242).endswith("/Legal Services")
    d = CATS[0].to_dict("v2")
    assert d["labels"][0] == "/Finance/Credit & Lending"


def test_personas() -> None:
    tax = load("v2")
    labels = np.repeat(np.arange(5), 100)
    a = simulate_personas(labels, 0.2, categories=CATS, epochs=4, probe_sites=3, seed=7)
    assert a.sets.shape == (500, 4, 5) and a.answers is not None
    assert a.answers.shape == (3, 500, 4)
    assert (a.sets >= 0).all() and (np.diff(a.sets, axis=-1) > 0).all()
    b = simulate_personas(labels, 0.2, categories=CATS, epochs=4, probe_sites=3, seed=7)
    assert b.answers is not None
    assert np.array_equal(a.sets, b.sets) and np.array_equal(a.answers, b.answers)
    # common random numbers: with rho = 0 the label does not matter at all
    z0 = simulate_personas(np.zeros(50, int), 0.0, categories=CATS, epochs=3, seed=2)
    z4 = simulate_personas(np.full(50, 4), 0.0, categories=CATS, epochs=3, seed=2)
    assert z0.answers is not None and z4.answers is not None
    assert np.array_equal(z0.sets, z4.sets) and np.array_equal(z0.answers, z4.answers)
    # proxies enter the profiles more often as rho grows (bankruptcy personas)
    prox = tax.index(np.array(CATS[0].proxies))
    share = []
    for rho in (0.0, 0.05, 0.4):
        p = simulate_personas(np.zeros(300, int), rho, categories=CATS, epochs=4, seed=3,
                              with_answers=False)
        share.append(np.isin(p.sets, prox).any(-1).mean())
    assert share[0] < 0.05 < share[1] < share[2]
    # the onset delays the sensitive browsing
    late = simulate_personas(np.zeros(300, int), 0.4, categories=CATS, epochs=4, seed=3,
                             onset=2, with_answers=False)
    early = np.isin(late.sets[:, :2], prox).any(-1).mean()
    assert early < 0.05 and np.isin(late.sets[:, 2:], prox).any(-1).mean() > 0.8


def test_answers_come_from_the_mechanism() -> None:
    mech = Mechanism()
    p = simulate_personas(np.repeat(np.arange(5), 100), 0.1, categories=CATS, epochs=8,
                          probe_sites=10, seed=11, mechanism=mech)
    assert p.answers is not None
    in_set = (p.answers[..., None] == p.sets[None]).any(-1)
    expected = (1 - mech.p) + mech.p * mech.k / mech.tax.size
    se = math.sqrt(expected * (1 - expected) / in_set.size)
    assert abs(in_set.mean() - expected) < 5 * se


def test_bad_persona_inputs() -> None:
    with pytest.raises(InputError, match="rho"):
        simulate_personas([0], 1.5, categories=CATS)
    with pytest.raises(InputError, match="labels"):
        simulate_personas([7], 0.1, categories=CATS)
    with pytest.raises(InputError, match="proxies"):
        simulate_personas([0], 0.1, categories=[SensitiveCategory("x", (99999,))])
    with pytest.raises(InputError):
        SensitiveCategory("x", ())
    with pytest.raises(InputError):
        SensitiveCategory("x", (1, 1))
    with pytest.raises(InputError):
        PersonaModel(explore=2.0)


def test_topic_m_hat_is_the_generic_estimator() -> None:
    tax = load("v2")
    names = (*(c.name for c in CATS), "other")
    train = simulate_personas(np.repeat(np.arange(5), 30), 0.3, categories=CATS, epochs=3,
                              probe_sites=4, seed=5)
    assert train.answers is not None
    fast = _fit_topics(train.answers, train.labels, names, tax)
    docs = [(names[train.labels[u]], [int(tax.ids[train.answers[s, u, w]])])
            for s in range(4) for u in range(150) for w in range(3)]
    slow = PRI.fit(docs, categories=names[:-1])
    test = simulate_personas(np.repeat(np.arange(5), 3), 0.3, categories=CATS, epochs=3,
                             probe_sites=4, seed=5, first_user=10_000)
    assert test.answers is not None
    mh = topic_m_hat(test.answers, fast, tax)
    for u in range(15):
        for w in range(3):
            ads = [[int(tax.ids[test.answers[s, u, w]])] for s in range(4)]
            np.testing.assert_allclose(mh[u, w], slow.m_hat(slow.observe([ads])[0]),
                                       atol=1e-12)


def test_experiment_small() -> None:
    res = topics_experiment(rhos=(0.05, 0.4), epochs=6, personas=40, mc_samples=40,
                            probe_sites=6, seed=3, progress=False)
    d = res.to_dict()
    json.dumps(d, allow_nan=False)  # strict JSON
    assert d["settings"]["epsilon"] == pytest.approx(math.log(2))
    assert [r["rho"] for r in d["per_rho"]] == [0.05, 0.4]
    for r in res.per_rho:
        assert r.detection["n"] == 160 and r.false_positive["n"] == 40
        lo, hi = r.detection["ci95"]
        assert lo <= r.detection["rate"] <= hi
        assert len(r.whitebox["cumulative_violation"]) == 6
        assert all(a <= b for a, b in zip(r.whitebox["cumulative_violation"],
                                          r.whitebox["cumulative_violation"][1:],
                                          strict=False))
        assert len(r.evaluation.per_topic) == 4
    _low, high = res.per_rho
    # even at this size the white box sees most sensitive personas (seeded; bounds loose)
    assert high.whitebox["violated"] >= 0.8
    sec = report_section(res, figures=True)
    assert sec["title"] and sec["html"].startswith("<section")
    assert "data:image/png;base64," in sec["html"] and "<table" in sec["html"]
    assert "http" not in sec["html"].replace("data:image", "")
    assert set(sec["figures"]) == {"rates", "ln_m"}
    json.dumps(sec, allow_nan=False)
    bare = report_section(res, figures=False)
    assert bare["figures"] == {} and "<img" not in bare["html"]
    assert bare["worked_example"]["m_hat"]["prostate"] == pytest.approx(0.32)


def test_detection_rises_with_rho() -> None:
    """Seeded simulation: the rates rise with rho within binomial noise (z = 3)."""
    res = topics_experiment(rhos=(0.05, 0.1, 0.2, 0.4), epochs=5, personas=150,
                            whitebox=False, seed=0, progress=False)
    rates = [(r.detection["rate"], r.detection["n"]) for r in res.per_rho]

    def se(p: float, n: int) -> float:
        return math.sqrt(max(p * (1 - p), 1e-4) / n)

    for (p0, n0), (p1, n1) in itertools.pairwise(rates):
        assert p1 >= p0 - 3 * math.hypot(se(p0, n0), se(p1, n1))
    (p_first, n_first), (p_last, n_last) = rates[0], rates[-1]
    assert p_last - p_first > 3 * math.hypot(se(p_first, n_first), se(p_last, n_last))
    for r in res.per_rho:  # bands at 3 sigma: few non-sensitive sessions are flagged
        assert r.false_positive["rate"] <= 0.1
    # time to detection shortens as the signal grows
    assert (res.per_rho[-1].evaluation.time_to_detection["mean"]
            < res.per_rho[0].evaluation.time_to_detection["mean"])


def test_bad_experiment_parameters() -> None:
    for kw in ({"rhos": ()}, {"rhos": (2.0,)}, {"personas": 1}, {"epochs": 0},
               {"epsilon": -1.0}, {"prior": {"nobody": 1.0}}, {"k": 0}, {"seed": -1},
               {"probe_sites": 65}, {"prior": {"other": 0.0}},
               {"categories": [SensitiveCategory("other", (242,))]}):
        with pytest.raises(InputError):
            topics_experiment(progress=False, **kw)
