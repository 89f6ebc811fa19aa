"""The learned re-identification attack (Carey et al. Appendix E.1.3; issue 17): untrained it
is the asymmetric attack bit for bit, it learns a planted signal, outcomes and candidate
recall match a brute-force reference (ties included), model files round-trip, bad model
directories (and format 1 files) give one-line errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from topicslab.api import Mechanism, observe
from topicslab.attacks import measure_risk
from topicslab.attacks.learned import (
    FORMAT_VERSION,
    MAX_TERM,
    LearnedAttackConfig,
    _new_attack,
    _Site1,
    attack_outcomes,
    load_attack,
    measure_risk_learned,
    save_attack,
    theorem1_gains,
    train_attack,
)
from topicslab.cli import app
from topicslab.datamodel import TopicSets
from topicslab.errors import InputError

TINY = dict(batch_users=256, queries_per_epoch=400, validation=300, hard_pool=8)
M = 469  # topics of taxonomy v2


def persistent_sets(n: int, weeks: int = 4, seed: int = 0) -> TopicSets:
    """Every user keeps one random 5-topic profile every week: a site-2 answer is often a
    topic website 1 showed in *another* week (the planted signal)."""
    rng = np.random.default_rng(seed)
    prof = np.sort(np.argsort(rng.random((n, M)), axis=1)[:, :5], axis=1)
    return TopicSets(np.repeat(prof[:, None, :], weeks, axis=1).astype(np.int16), "v2")


def clique_sets(n: int, weeks: int = 4, seed: int = 0) -> TopicSets:
    """Topics in 60 disjoint cliques of 7; a user keeps 5 topics of one clique every week:
    two answers of one user come from one clique (co-occurrence, which Theorem 1 ignores)."""
    rng = np.random.default_rng(seed)
    clique = rng.integers(0, 60, size=n)
    pick = np.sort(np.argsort(rng.random((n, 7)), axis=1)[:, :5], axis=1)
    prof = clique[:, None] * 7 + pick
    return TopicSets(np.repeat(prof[:, None, :], weeks, axis=1).astype(np.int16), "v2")


def _reference(site1, queries, ew, cw, gw, pw):
    """The module docstring's score from explicit per-query weights (``_Site1.run``'s
    inputs), contributions summed in ascending order."""
    out = np.empty((len(queries), len(site1)))
    for qi, o in enumerate(queries):
        for u, x in enumerate(site1):
            parts, hits = [], 0
            for s, t in enumerate(o):
                if t < 0:
                    continue
                hit = False
                if x[s] == t:
                    parts.append(ew[qi, s])
                    hit = True
                elif x[s] >= 0:
                    parts.append(pw[x[s], t])
                if any(x[w] == t for w in range(len(o)) if w != s):
                    parts.append(cw[qi, s])
                    hit = True
                hits += hit
            parts.append(gw[hits])
            out[qi, u] = sum(sorted(parts), 0.0)
    return out


def brute_scores(att, site1, queries, delta):
    """Reference score of every (query, site-1 row), straight from the module docstring's
    formula (numpy, no index), contributions summed in ascending order."""
    a, b, g, pw = att.terms()
    q = np.asarray(queries)
    idx = np.where(q >= 0, q, 0)
    return _reference(site1, q, delta[idx] + a[idx], b[idx], g, pw)


def test_untrained_is_the_asymmetric_attack_bit_for_bit() -> None:
    """Every learned term zero: the same outcomes (argmax sizes, membership, best scores) as
    the exact engine's asymmetric attack, ties included (the 'never below by construction'
    start that training is gated against)."""
    from topicslab.attacks import AsymmetricAttack, evaluate_attacks

    sets = persistent_sets(400, seed=8)
    att = _new_attack(M, "v2", 4, 1, LearnedAttackConfig(**TINY), "cpu")
    mech = Mechanism()
    tr = observe(sets.sets, [0, 1], weeks=4, seed=21)
    site1 = tr[0].copy()
    site1[10:20] = site1[5]  # a tie of 11 identical traces
    rows = np.arange(0, 400, 2, dtype=np.int64)
    asym = AsymmetricAttack()
    asym.fit(site1, mech)
    ref = evaluate_attacks(site1, tr[1][rows], rows, [asym])[0]
    out, _ = attack_outcomes(att, site1, tr[1][rows], rows, mechanism=mech)
    np.testing.assert_array_equal(out.argmax_size, ref.argmax_size)
    np.testing.assert_array_equal(out.in_argmax, ref.in_argmax)
    np.testing.assert_array_equal(out.best_score, ref.best_score)


def test_scorer_learns_planted_signal() -> None:
    """Topics that share profiles (cliques) are evidence Theorem 1 ignores: the learned
    co-occurrence term finds them (positive within a clique, not across)."""
    train = clique_sets(1500, seed=1)
    cfg = LearnedAttackConfig(epochs=1, gate=-1e9, **TINY)  # keep it, better or not
    att = train_attack(train, weeks=4, config=cfg, seed=3)
    _, _, _, pw = att.terms()
    same = np.zeros((M, M), dtype=bool)
    for k in range(60):
        same[k * 7:(k + 1) * 7, k * 7:(k + 1) * 7] = True
    np.fill_diagonal(same, False)
    assert pw[same].mean() > 0.2 and pw[same].mean() > 10 * abs(pw[~same].mean())


def test_training_never_keeps_a_worse_model() -> None:
    """The validation gate: a kept epoch beat the asymmetric start by more than ``gate``
    standard errors; otherwise the attack is the asymmetric one (every learned term zero)."""
    train = clique_sets(1500, seed=1)
    att = train_attack(train, weeks=4, config=LearnedAttackConfig(epochs=1, **TINY), seed=3)
    md = att.metadata
    kept = [h for h in md["history"] if h.get("kept")]
    if md["best_epoch"] < 0:
        assert not kept and all(not t.any() for t in att.terms())
        assert md["validation_gain"] == 0.0
    else:
        assert md["validation_gain"] > 0.0 and kept[-1]["epoch"] == md["best_epoch"]
        assert kept[-1]["validation_gain"] > kept[-1]["validation_gain_se"]


def test_zero_epochs_is_the_counted_cooccurrence_only() -> None:
    """``epochs = 0``: the counted co-occurrence (epoch 0) is validated and kept or not, no
    gradient step is taken (the residual, cross-week and count terms stay zero)."""
    train = clique_sets(1500, seed=1)
    att = train_attack(train, weeks=4, config=LearnedAttackConfig(epochs=0, **TINY), seed=3)
    a, b, g, pw = att.terms()
    assert not a.any() and not b.any() and not g.any()
    assert [h["epoch"] for h in att.metadata["history"]] == [-1, 0]
    assert att.metadata["best_epoch"] in (-1, 0)
    assert pw.any() == (att.metadata["best_epoch"] == 0)


@pytest.fixture(scope="module")
def small_attack():
    sets = persistent_sets(300, seed=4)
    att = train_attack(sets, weeks=4, config=LearnedAttackConfig(epochs=1, **TINY), seed=5)
    # nonzero learned terms everywhere, so the reference check covers every term
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in (att.scorer.exact, att.scorer.cross, att.scorer.count, att.scorer.pair):
            p.add_(torch.randn(p.shape, generator=g) * 0.5)
    return sets, att


def test_outcomes_and_candidate_recall_match_a_reference(small_attack) -> None:
    sets, att = small_attack
    mech = Mechanism()
    tr = observe(sets.sets, [0, 1], weeks=4, seed=11)
    site1, site2 = tr[0].copy(), tr[1]
    site1[50:60] = site1[45]  # eleven users share one website-1 trace: a tie of 11
    site1[200] = -1  # an all-withheld trace
    rows = np.arange(0, 300, 3, dtype=np.int64)
    rows[5] = 45  # a target inside the tied group
    queries = site2[rows].copy()
    queries[6] = site1[45]  # its query equals the tied trace
    rows[6] = 45
    queries[7] = -1  # a query with nothing: every user ties
    out, got = attack_outcomes(att, site1, queries, rows, mechanism=mech)
    delta = theorem1_gains(site1, mech)
    sc = brute_scores(att, site1, queries, delta)
    best = sc.max(1)
    members = sc == best[:, None]
    np.testing.assert_array_equal(out.argmax_size, members.sum(1))
    np.testing.assert_array_equal(out.in_argmax, members[np.arange(len(rows)), rows])
    np.testing.assert_array_equal(out.best_score, best)
    share = np.array([bool(set(site1[r][site1[r] >= 0]) & set(q[q >= 0]))
                      for r, q in zip(rows, queries, strict=True)])
    np.testing.assert_array_equal(got, share)
    assert 0.0 < got.mean() < 1.0
    assert out.argmax_size[6] >= 11 and out.in_argmax[6]
    assert out.argmax_size[7] == 300 and out.in_argmax[7]
    assert out.expected()[6] == pytest.approx(1.0 / out.argmax_size[6])
    # a target not on site 1 is never found
    rows2 = rows.copy()
    rows2[0] = -1
    out2, got2 = attack_outcomes(att, site1, queries, rows2, mechanism=mech)
    assert not got2[0] and not out2.in_argmax[0]


def test_sixteen_weeks_and_every_term_match_the_reference() -> None:
    """The longest traces the engines take (16 weeks) with every learned term non-zero:
    argmax sets, the true user in them and the best score equal the reference's (ties
    between different week orders are tested below, on the kernel itself)."""
    weeks = 16
    sets = persistent_sets(150, weeks=weeks, seed=9)
    att = _new_attack(M, "v2", weeks, 1, LearnedAttackConfig(**TINY), "cpu")
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in (att.scorer.exact, att.scorer.cross, att.scorer.count, att.scorer.pair):
            p.add_(torch.randn(p.shape, generator=g))
    mech = Mechanism()
    tr = observe(sets.sets, [0, 1], weeks=weeks, seed=13)
    site1, site2 = tr[0].copy(), tr[1]
    site1[7] = site1[3][::-1]  # the same answers in reverse week order
    rows = np.arange(0, 150, 2, dtype=np.int64)
    queries = site2[rows].copy()
    queries[1] = site1[3]  # every week of the query matched by trace 3, none in order by 7
    out, got = attack_outcomes(att, site1, queries, rows, mechanism=mech)
    sc = brute_scores(att, site1, queries, theorem1_gains(site1, mech))
    best = sc.max(1)
    members = sc == best[:, None]
    np.testing.assert_array_equal(out.argmax_size, members.sum(1))
    np.testing.assert_array_equal(out.in_argmax, members[np.arange(len(rows)), rows])
    np.testing.assert_array_equal(out.best_score, best)
    assert got.mean() > 0.5


def test_kernel_ties_across_week_orders_at_31_weeks() -> None:
    """The kernel's limit (31 trace weeks: its per-trace count of weeks showing a query topic
    fills 5 low bits without carry), weights that are not multiples of 2^-32, and ties
    between traces that hold the same contributions in different weeks: a query showing t in
    two weeks, one trace with t in the first and z in the second, another the reverse, both
    get {exact(t), pair(z, t), cross(t), count(2)}."""
    rng = np.random.default_rng(5)
    c, m, n = 31, 12, 40
    site1 = rng.integers(-1, m, size=(n, c)).astype(np.int16)
    queries = rng.integers(-1, m, size=(6, c)).astype(np.int16)
    queries[0] = -1
    queries[0, [4, 20]] = 3  # topic 3 in weeks 4 and 20, nothing else
    site1[10] = -1
    site1[10, [4, 20]] = (3, 7)
    site1[11] = -1
    site1[11, [4, 20]] = (7, 3)
    queries[1] = site1[12]  # every week matched by one trace
    ew = np.repeat(rng.normal(3.0, 1.0, size=(1, c)), 6, axis=0) + rng.normal(size=(6, 1)) / 3
    ew[0, :] = 2.0 / 3.0  # one exact weight for topic 3 in both of its weeks
    cw = np.abs(rng.normal(size=(6, c))) / 7
    cw[0, :] = 1.0 / 7.0
    gw = rng.normal(size=c + 1) / 11
    pw = rng.normal(size=(m, m)) / 13
    pw[7, 3] = 5.0  # z = 7 with t = 3 outranks every other trace for query 0
    rows = np.array([10, 12, 0, 1, 2, 3], dtype=np.int64)
    out, found, _ = _Site1(site1, m).run(queries, rows, ew, cw, gw, pw)
    sc = _reference(site1, queries, ew, cw, gw, pw)
    best = sc.max(1)
    members = sc == best[:, None]
    np.testing.assert_array_equal(out.argmax_size, members.sum(1))
    np.testing.assert_array_equal(out.in_argmax, members[np.arange(len(rows)), rows])
    np.testing.assert_allclose(out.best_score, best, rtol=0, atol=1e-12)
    assert out.argmax_size[0] == 2 and out.in_argmax[0]  # traces 10 and 11 tie
    assert found[0] and found[1]


def test_kernel_refusals() -> None:
    site1 = np.zeros((3, 32), dtype=np.int16)
    w = np.zeros((1, 32))
    with pytest.raises(InputError, match="31 trace weeks"):
        _Site1(site1, 4).run(site1[:1], np.zeros(1, dtype=np.int64), w, w, np.zeros(33),
                             np.zeros((4, 4)))
    site1 = np.zeros((3, 2), dtype=np.int16)
    w = np.zeros((1, 2))
    with pytest.raises(InputError, match="within"):
        _Site1(site1, 4).run(site1[:1], np.zeros(1, dtype=np.int64), w + 2 * MAX_TERM, w,
                             np.zeros(3), np.zeros((4, 4)))


def test_model_files_round_trip(small_attack, tmp_path) -> None:
    sets, att = small_attack
    d = save_attack(tmp_path / "m", att)
    meta = json.loads((d / "model.json").read_text())
    assert meta["format"] == "topicslab-learned-attack" and meta["weeks"] == 4
    assert meta["format_version"] == FORMAT_VERSION == 2
    back = load_attack(d)
    for x, y in zip(back.terms(), att.terms(), strict=True):
        np.testing.assert_array_equal(x, y)
    tr = observe(sets.sets, [0, 1], weeks=4, seed=12)
    a = attack_outcomes(att, tr[0], tr[1][:50], np.arange(50))
    b = attack_outcomes(back, tr[0], tr[1][:50], np.arange(50))
    np.testing.assert_array_equal(a[0].best_score, b[0].best_score)
    np.testing.assert_array_equal(a[0].argmax_size, b[0].argmax_size)
    np.testing.assert_array_equal(a[1], b[1])
    assert back.config == att.config and back.lookback == 1


def _one_line(exc: InputError) -> str:
    text = str(exc)
    assert "\n" not in text
    return text


def test_bad_model_directories(small_attack, tmp_path) -> None:
    _, att = small_attack
    with pytest.raises(InputError, match="no such file"):  # (round 36: was "not a directory")
        load_attack(tmp_path / "nothing")
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(InputError, match="not a directory"):
        load_attack(tmp_path / "a-file")
    d = save_attack(tmp_path / "m", att)
    meta = json.loads((d / "model.json").read_text())
    (d / "model.json").write_text("{not json")
    with pytest.raises(InputError, match="invalid JSON") as e:
        load_attack(d)
    assert e.value.file.endswith("model.json") and _one_line(e.value)
    for change, field in ((dict(format="x"), "format"), (dict(weeks=0), "weeks"),
                          (dict(format_version=1), "format_version"),
                          (dict(taxonomy="v9"), "taxonomy"),
                          (dict(weeks=3), "scorer.count"),
                          (dict(config={**meta["config"], "negatives": -1}),
                           "config.negatives")):
        (d / "model.json").write_text(json.dumps({**meta, **change}))
        with pytest.raises(InputError) as e:
            load_attack(d)
        assert e.value.field == field, (change, str(e.value))
        _one_line(e.value)
    (d / "model.json").write_text(json.dumps(meta))
    from safetensors.torch import load_file, save_file

    good = load_file(str(d / "model.safetensors"))
    huge = dict(good)
    huge["scorer.pair"] = huge["scorer.pair"].clone()
    huge["scorer.pair"][0, 1] = 1e9  # finite, but past what fixed-point scores hold
    save_file(huge, str(d / "model.safetensors"))
    with pytest.raises(InputError, match="beyond") as e:
        load_attack(d)
    assert e.value.field == "scorer.pair" and e.value.file.endswith("model.safetensors")
    (d / "model.safetensors").write_bytes(b"garbage")
    with pytest.raises(InputError, match="cannot read safetensors"):
        load_attack(d)
    (d / "model.safetensors").unlink()
    with pytest.raises(InputError, match="file missing"):
        load_attack(d)


def test_cli_bad_model_directory_is_one_line(tmp_path) -> None:
    from topicslab.io import write_sets

    pop = tmp_path / "pop.parquet"
    write_sets(pop, persistent_sets(50, seed=6))
    res = CliRunner().invoke(app, ["reid", "--sets", str(pop), "--attack", "learned",
                                   "--attack-model", str(tmp_path / "none"), "--no-progress"])
    assert res.exit_code == 2
    assert res.output.strip().count("\n") == 0
    assert "field '--attack-model': no such file" in res.output


def test_cli_train_then_reid(tmp_path) -> None:
    from topicslab.io import write_sets

    pop = tmp_path / "pop.parquet"
    write_sets(pop, persistent_sets(200, seed=7))
    runner = CliRunner()
    res = runner.invoke(app, ["attack-train", "--sets", str(pop), "--weeks", "2", "--epochs",
                              "1", "--batch-users", "64", "--queries", "100", "--validation",
                              "100", "--out", str(tmp_path / "att"), "--no-progress"])
    assert res.exit_code == 0, res.output
    js = tmp_path / "r.json"
    res = runner.invoke(app, ["reid", "--sets", str(pop), "--attack", "learned,asymmetric",
                              "--attack-model", str(tmp_path / "att"), "--weeks", "2",
                              "--targets", "50", "--trials", "2",
                              "--json", str(js), "--no-progress"])
    assert res.exit_code == 0, res.output
    data = json.loads(js.read_text())
    rec = data["attacks"]["learned"]["attack"]["candidate_recall"]
    assert len(rec) == 2 and all(0.0 <= r <= 1.0 for r in rec)
    res = runner.invoke(app, ["reid", "--sets", str(pop), "--attack", "learned",
                              "--attack-model", str(tmp_path / "att"), "--weeks", "3",
                              "--no-progress"])
    assert res.exit_code == 2 and "trained on r = 2" in res.output
    # an attacker trained at another p is a legitimate experiment, but it is said
    res = runner.invoke(app, ["reid", "--sets", str(pop), "--attack", "learned",
                              "--attack-model", str(tmp_path / "att"), "--weeks", "2",
                              "--targets", "20", "--trials", "1", "--p", "0.1",
                              "--no-progress"])
    assert res.exit_code == 0, res.output
    said = " ".join(res.output.split())
    assert "trained at p = 0.05" in said and "simulated at p = 0.1" in said


def test_hand_made_figures_equal_measure_risk(small_attack) -> None:
    sets, att = small_attack
    mech = Mechanism()
    res = measure_risk_learned(sets, att, targets=60, trials=2, seed=3, mechanism=mech,
                               progress=False)
    ref = measure_risk(sets, weeks=4, targets=60, trials=2, seed=3, mechanism=mech,
                       progress=False)
    for name in ("hamming", "asymmetric"):
        assert res.attacks[name].expected == ref.attacks[name].expected
        assert res.attacks[name].risk == ref.attacks[name].risk
    assert 0.0 <= res.attacks["learned"].expected_risk_mean <= 1.0
    assert len(res.attacks["learned"].description["candidate_recall"]) == 2


def test_cli_cuda_refused_without_gpu(tmp_path) -> None:
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    res = CliRunner().invoke(app, ["attack-train", "--sets", str(tmp_path / "none.parquet"),
                                   "--out", str(tmp_path / "att"), "--device", "cuda"])
    assert res.exit_code == 2 and "--device" in res.output
    assert res.output.strip().count("\n") == 0


@pytest.mark.parametrize(("field", "value"), [("negatives", 1001), ("negatives", 0),
                                              ("epochs", -1), ("hard_fraction", 1.5),
                                              ("l2", -1.0), ("validation", 0)])
def test_config_refuses_out_of_range(field: str, value: object) -> None:
    with pytest.raises(InputError) as exc:
        LearnedAttackConfig(**{field: value})
    assert exc.value.field == field
