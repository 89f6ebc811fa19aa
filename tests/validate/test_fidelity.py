"""Release fidelity: the gap arithmetic, the verdict's logic, the measured gaps on data whose
answer is known, and the DP noise scale behind the fit's 2σ share."""

from __future__ import annotations

import math

import numpy as np
import pytest

from topicslab import dp
from topicslab.datamodel import TopicSets
from topicslab.errors import InputError
from topicslab.population import generate
from topicslab.validate import Fidelity, RiskGap, fidelity, fit_quality


def test_gap_and_its_standard_error() -> None:
    g = RiskGap("hamming", 2, population=0.010, population_se=0.0001, synthetic=0.0095,
                synthetic_se=0.0002)
    assert g.gap == pytest.approx(-0.05)
    # delta method: ratio * sqrt((se_p/p)^2 + (se_s/s)^2)
    assert g.gap_se == pytest.approx(0.95 * math.hypot(0.01, 0.0002 / 0.0095))
    lo, hi = g.ci95
    assert lo < g.gap < hi and hi - lo == pytest.approx(2 * 1.959963984540054 * g.gap_se)
    assert not g.within(0.02) and g.within(0.06)
    assert g.resolved(0.02) is False or g.ci95[1] < -0.02
    zero = RiskGap("hamming", 1, 0.0, 0.0, 0.001, 0.0001)
    assert math.isnan(zero.gap) and not zero.within(1.0) and not zero.resolved(1.0)


def _fid(gaps: list[tuple[float, float]], tol: float = 0.02) -> Fidelity:
    rows = [RiskGap("hamming", r + 1, 0.01, 0.0, 0.01 * (1 + g), se * 0.01 * (1 + g))
            for r, (g, se) in enumerate(gaps)]
    # population_se = 0 so that gap_se = se exactly
    return Fidelity(rows, tol, trials=1, users=100, synthetic_users=100, seconds=0.0)


def test_verdict_logic() -> None:
    ok = _fid([(0.005, 0.001), (-0.01, 0.002)])
    assert ok.passed and ok.resolved and ok.text.startswith("PASS")
    unsure = _fid([(0.015, 0.01)])
    assert unsure.passed and not unsure.resolved and "not resolved" in unsure.text
    bad = _fid([(0.001, 0.001), (-0.08, 0.01)])
    assert not bad.passed and bad.resolved and bad.text.startswith("FAIL")
    assert "UNDER-states" in bad.text and "r = 2" in bad.text
    assert bad.worst is not None and bad.worst.weeks == 2
    d = bad.to_dict()
    assert d["pass"] is False and len(d["gaps"]) == 2 and d["gaps"][1]["gap"] == pytest.approx(
        -0.08)


def test_the_outcome_is_fail_only_when_the_evidence_says_so() -> None:
    """A point estimate past the tolerance whose interval reaches back inside it is
    inconclusive; one whose interval lies outside, or that is significantly under-stated, is
    a failure; within the tolerance is a pass, resolved or not."""
    assert _fid([(0.005, 0.001)]).outcome == "pass"
    assert _fid([(0.015, 0.01)]).outcome == "pass"  # not resolved, still a pass
    unsure = _fid([(0.001, 0.001), (0.03, 0.01)])  # 95%: [+1.0, +5.0]%
    assert unsure.outcome == "inconclusive" and not unsure.passed
    assert unsure.text.startswith("INCONCLUSIVE") and "+3.0% ± 2.0%" in unsure.text
    assert unsure.to_dict()["outcome"] == "inconclusive" and unsure.to_dict()["pass"] is False
    assert _fid([(0.05, 0.01)]).outcome == "fail"  # [+3.0, +7.0]%: outside
    low = _fid([(-0.03, 0.0125)])  # [−5.5, −0.5]%: straddles −2%, but below 0
    assert low.understated and low.outcome == "fail" and low.text.startswith("FAIL")
    within_low = _fid([(-0.015, 0.005)])  # under-stated, but within the tolerance
    assert within_low.understated and within_low.outcome == "pass"
    assert _fid([]).outcome is None


def test_under_statement_is_flagged_over_the_whole_table() -> None:
    """A gap 2.5 standard errors below 0 is outside its own 95% interval but not outside the
    simultaneous one of a 16-gap table (Bonferroni z = 2.96); 4 standard errors below is."""
    table = [(0.0, 0.01)] * 14 + [(-0.025, 0.01), (-0.04, 0.01)]
    f = _fid(table, tol=0.05)
    assert f.family_z == pytest.approx(2.955, abs=1e-3)
    assert [g.weeks for g in f.understated] == [16]
    assert "r = 16" in f.text and "r = 15" not in f.text and "16 gaps together" in f.text
    assert f.to_dict()["understated"] == [{"attack": "hamming", "weeks": 16}]
    # one gap: the simultaneous interval is the gap's own 95% interval
    one = _fid([(-0.025, 0.01)], tol=0.05)
    assert one.family_z == pytest.approx(1.959964, abs=1e-5)
    assert [g.weeks for g in one.understated] == [1]


@pytest.fixture(scope="module")
def pop() -> TopicSets:
    return generate(30_000, 3, seed=11)


def test_same_data_has_no_gap(pop) -> None:
    """Synthetic = population (fresh API answers): every gap within 4 standard errors of 0,
    and the standard error is the per-target spread over √n."""
    f = fidelity(pop, pop, trials=2, seed=3)
    assert [(g.attack, g.weeks) for g in f.gaps] == [
        (a, r) for r in (1, 2, 3) for a in ("hamming", "asymmetric")]
    for g in f.measured:
        assert abs(g.gap) <= 4 * g.gap_se, (g.attack, g.weeks, g.gap, g.gap_se)
        assert 0 < g.population_se < g.population
    assert f.users == f.synthetic_users == pop.n_users and f.trials == 2


def test_a_safer_looking_synthetic_is_caught(pop) -> None:
    """Synthetic users who all share one profile are never re-identified: the gap is −100%,
    significantly negative, and the verdict says the risk is under-stated."""
    same = np.repeat(pop.sets[:1], pop.n_users, axis=0)
    syn = TopicSets(same, pop.taxonomy, pop.user_ids, {})
    f = fidelity(pop, syn, weeks=[2, 3], trials=1)
    assert not f.passed and f.resolved
    for g in f.gaps:
        assert g.gap < -0.9 and g.ci95[1] < 0
    assert "UNDER-states" in f.text


def test_fresh_synthetic_per_trial_and_target_samples(pop) -> None:
    drawn = []

    def synthetic(trial: int) -> TopicSets:
        drawn.append(trial)
        rng = np.random.default_rng(trial)
        return pop.subset(users=np.sort(rng.choice(pop.n_users, pop.n_users, replace=False)))

    f = fidelity(pop, synthetic, weeks=[2], trials=3, targets=5_000)
    assert drawn == [0, 1, 2]  # one draw per trial, whatever the number of r
    assert f.targets == 5_000 and "random targets" in " ".join(f.notes)
    assert all(g.population_se > 0 for g in f.gaps)


@pytest.mark.parametrize("kw, field", [(dict(trials=0), "trials"),
                                       (dict(tolerance=0.0), "tolerance"),
                                       (dict(weeks=[4]), "weeks"),
                                       (dict(targets=0), "targets")])
def test_bad_options(pop, kw, field) -> None:
    with pytest.raises(InputError) as info:
        fidelity(pop, pop, **kw)
    assert info.value.field == field


def test_noise_sigmas_match_the_noise_actually_added() -> None:
    """A release minus the exact statistics is the noise: on terms far from the clipping at 0
    (exact value ≥ 6σ) its spread is σ per family, within 5 standard errors of a standard
    deviation estimate (1/√(2N) relative)."""
    from topicslab.population import empirical_statistics

    s = generate(200_000, 2, seed=12)
    st = dp.compute_statistics(s, seed=1)
    sig = st.noise_sigmas()
    assert sig is not None
    es, ew, ea = empirical_statistics(s)
    iu = np.triu_indices(s.taxonomy.size, 1)
    for name, noisy, exact in (("within", st.q_within[iu], ew[iu]),
                               ("across", st.q_across.ravel(), ea.ravel()),
                               ("single", st.q_single, es)):
        keep = exact >= 6 * sig[name]
        d = (noisy - exact)[keep]
        assert d.size >= 50, (name, d.size)
        ratio = float(d.std()) / sig[name]
        assert abs(ratio - 1) < 5 / math.sqrt(2 * d.size), (name, ratio, d.size)


def test_fit_quality_reports_share_within_two_sigma(tmp_path) -> None:
    from topicslab import model as tm

    s = generate(20_000, 2, seed=13)
    st = dp.compute_statistics(s, seed=3)
    res = tm.fit(st, types=20, weeks=2, optimizer=tm.FullObjective(steps=30), progress=False,
                 device="cpu")
    q = fit_quality(st, res.model)
    assert q.noise_sigma is not None and q.share_within_2sigma is not None
    assert 0 < q.share_within_2sigma <= 1
    fams = q.to_dict()["by_family"]
    assert {"single", "within", "across"} <= set(fams)
    assert all("share_within_2sigma" in f for f in fams.values())
    dp.save_statistics(tmp_path, st)
    again = fit_quality(dp.load_statistics(tmp_path), res.model)
    assert again.share_within_2sigma == pytest.approx(q.share_within_2sigma)
