"""The learned re-identification attack (Carey et al. Appendix E.1.3; issue 17): the scorer
learns a planted signal, retrieval recall and tie-aware outcomes are computed right, model
files round-trip, bad model directories give one-line errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from topicslab.api import Mechanism, observe
from topicslab.attacks import measure_risk
from topicslab.attacks.learned import (
    LearnedAttackConfig,
    attack_outcomes,
    load_attack,
    measure_risk_learned,
    save_attack,
    train_attack,
)
from topicslab.cli import app
from topicslab.datamodel import TopicSets
from topicslab.errors import InputError

TINY = dict(topic_dim=4, bag_dim=4, hidden=8, batch_users=256)
M = 469  # topics of taxonomy v2


def persistent_sets(n: int, weeks: int = 4, seed: int = 0) -> TopicSets:
    """Every user keeps one random 5-topic profile every week: a site-2 answer is often a
    topic website 1 showed in *another* week (the planted signal)."""
    rng = np.random.default_rng(seed)
    prof = np.sort(np.argsort(rng.random((n, M)), axis=1)[:, :5], axis=1)
    return TopicSets(np.repeat(prof[:, None, :], weeks, axis=1).astype(np.int16), "v2")


def auc(pos: np.ndarray, neg: np.ndarray) -> float:
    """P(positive score > negative score) + half the ties."""
    both = np.concatenate([pos, neg])
    ranks = np.argsort(np.argsort(both, kind="stable"), kind="stable").astype(np.float64)
    # average ranks of ties
    _, inv, cnt = np.unique(both, return_inverse=True, return_counts=True)
    sums = np.bincount(inv, weights=ranks)
    ranks = (sums / cnt)[inv] + 1.0
    return float((ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2)
                 / (len(pos) * len(neg)))


@torch.no_grad()
def pair_auc(att, sets: TopicSets, seed: int) -> float:
    tr = observe(sets.sets, [0, 1], weeks=att.weeks, seed=seed)
    s1 = torch.from_numpy(tr[0].astype(np.int64))
    s2 = torch.from_numpy(tr[1].astype(np.int64))
    other = torch.from_numpy((np.arange(sets.n_users) + 7) % sets.n_users)
    e1, e2 = att.encoder(s1), att.encoder(s2)
    pos = att.scorer(e1, s1, e2, s2).numpy()
    neg = att.scorer(e1[other], s1[other], e2, s2).numpy()
    return auc(pos, neg)


def test_scorer_learns_planted_signal() -> None:
    train = persistent_sets(600, seed=1)
    test = persistent_sets(500, seed=2)
    cfg = LearnedAttackConfig(epochs=1, init_asymmetric=False, lr=1e-2, **TINY)
    untrained = train_attack(train, weeks=4, config=cfg, seed=3)  # one epoch as a baseline
    trained = train_attack(train, weeks=4, config=LearnedAttackConfig(
        epochs=6, init_asymmetric=False, lr=1e-2, **TINY), seed=3)
    hist = trained.metadata["history"]
    assert hist[-1]["bce"] < hist[0]["bce"]
    a0, a1 = pair_auc(untrained, test, seed=99), pair_auc(trained, test, seed=99)
    assert a1 >= 0.93, (a0, a1)
    assert a1 > a0 + 0.02, (a0, a1)



@pytest.fixture(scope="module")
def small_attack():
    sets = persistent_sets(300, seed=4)
    return sets, train_attack(sets, weeks=4, config=LearnedAttackConfig(epochs=1, **TINY),
                              seed=5)


def brute_outcomes(att, site1, queries, true_rows, k):
    """Reference: embed every row, rank by inner product, score the top k with the scorer,
    argmax set over users (rows), with numpy only where possible."""
    e1, eq = att.embed(site1), att.embed(queries)
    uniq, inv = np.unique(site1, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    eu = att.embed(uniq)
    sims = eq @ eu.T
    top = np.argsort(-sims, axis=1, kind="stable")[:, :k]
    recall = np.array([inv[t] in set(top[i]) for i, t in enumerate(true_rows)])
    sizes, inside = [], []
    with torch.no_grad():
        for i in range(len(queries)):
            t1 = torch.from_numpy(uniq[top[i]].astype(np.int64))
            q = torch.from_numpy(np.repeat(queries[i:i + 1], k, 0).astype(np.int64))
            sc = att.scorer(att.encoder(t1), t1, att.encoder(q), q).double().numpy()
            best = set(top[i][sc == sc.max()])
            sizes.append(int(sum(np.isin(inv, list(best)))))
            inside.append(inv[true_rows[i]] in best)
    del e1
    return recall, np.array(sizes), np.array(inside)


def test_retrieval_recall_and_ties_match_a_reference(small_attack) -> None:
    sets, att = small_attack
    tr = observe(sets.sets, [0, 1], weeks=4, seed=11)
    site1, site2 = tr[0].copy(), tr[1]
    site1[50:60] = site1[45]  # eleven users share one website-1 trace: a tie of 11
    site1[200] = -1  # an all-withheld trace
    rows = np.arange(0, 300, 3, dtype=np.int64)
    rows[5] = 45  # a target inside the tied group
    queries = site2[rows]
    queries[6] = site1[45]  # its query equals the tied trace: scores best among them
    rows[6] = 45
    for k in (5, 40):
        out, got = attack_outcomes(att, site1, queries, rows, top_k=k)
        recall, sizes, inside = brute_outcomes(att, site1, queries, rows, k)
        np.testing.assert_array_equal(got, recall)
        np.testing.assert_array_equal(out.argmax_size, sizes)
        np.testing.assert_array_equal(out.in_argmax, inside)
    assert 0.0 < got.mean() < 1.0
    assert out.argmax_size[6] >= 11 and out.in_argmax[6]
    assert out.expected()[6] == pytest.approx(1.0 / out.argmax_size[6])
    # every distinct trace retrieved: recall is 1, and a target not on site 1 is never found
    rows2 = rows.copy()
    rows2[0] = -1
    out, got = attack_outcomes(att, site1, queries, rows2, top_k=10_000)
    assert got[1:].all() and not got[0] and not out.in_argmax[0]


def test_model_files_round_trip(small_attack, tmp_path) -> None:
    sets, att = small_attack
    d = save_attack(tmp_path / "m", att)
    meta = json.loads((d / "model.json").read_text())
    assert meta["format"] == "topicslab-learned-attack" and meta["weeks"] == 4
    back = load_attack(d)
    tr = observe(sets.sets, [0, 1], weeks=4, seed=12)
    np.testing.assert_array_equal(back.embed(tr[0]), att.embed(tr[0]))
    a = attack_outcomes(att, tr[0], tr[1][:50], np.arange(50), top_k=8)
    b = attack_outcomes(back, tr[0], tr[1][:50], np.arange(50), top_k=8)
    np.testing.assert_array_equal(a[0].best_score, b[0].best_score)
    np.testing.assert_array_equal(a[1], b[1])
    assert back.config == att.config and back.lookback == 1


def _one_line(exc: InputError) -> str:
    text = str(exc)
    assert "\n" not in text
    return text


def test_bad_model_directories(small_attack, tmp_path) -> None:
    _, att = small_attack
    with pytest.raises(InputError, match="not a directory"):
        load_attack(tmp_path / "nothing")
    d = save_attack(tmp_path / "m", att)
    meta = json.loads((d / "model.json").read_text())
    (d / "model.json").write_text("{not json")
    with pytest.raises(InputError, match="invalid JSON") as e:
        load_attack(d)
    assert e.value.file.endswith("model.json") and _one_line(e.value)
    for change, field in ((dict(format="x"), "format"), (dict(weeks=0), "weeks"),
                          (dict(taxonomy="v9"), "taxonomy"),
                          (dict(config={**meta["config"], "topic_dim": 5}),
                           "encoder.topic.weight"),
                          (dict(config={**meta["config"], "hidden": -1}), "config.hidden")):
        (d / "model.json").write_text(json.dumps({**meta, **change}))
        with pytest.raises(InputError) as e:
            load_attack(d)
        assert e.value.field == field, (change, str(e.value))
        _one_line(e.value)
    (d / "model.json").write_text(json.dumps(meta))
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
    assert res.output.strip().count("\n") == 0 and "not a directory" in res.output


def test_cli_train_then_reid(tmp_path) -> None:
    from topicslab.io import write_sets

    pop = tmp_path / "pop.parquet"
    write_sets(pop, persistent_sets(200, seed=7))
    runner = CliRunner()
    res = runner.invoke(app, ["attack-train", "--sets", str(pop), "--weeks", "2", "--epochs",
                              "1", "--batch-users", "64", "--out", str(tmp_path / "att"),
                              "--no-progress"])
    assert res.exit_code == 0, res.output
    js = tmp_path / "r.json"
    res = runner.invoke(app, ["reid", "--sets", str(pop), "--attack", "learned,asymmetric",
                              "--attack-model", str(tmp_path / "att"), "--weeks", "2",
                              "--targets", "50", "--trials", "2", "--top-k", "16",
                              "--json", str(js), "--no-progress"])
    assert res.exit_code == 0, res.output
    data = json.loads(js.read_text())
    rec = data["attacks"]["learned"]["attack"]["retrieval_recall"]
    assert len(rec) == 2 and all(0.0 <= r <= 1.0 for r in rec)
    res = runner.invoke(app, ["reid", "--sets", str(pop), "--attack", "learned",
                              "--attack-model", str(tmp_path / "att"), "--weeks", "3",
                              "--no-progress"])
    assert res.exit_code == 2 and "trained on r = 2" in res.output


def test_hand_made_figures_equal_measure_risk(small_attack) -> None:
    sets, att = small_attack
    mech = Mechanism()
    res = measure_risk_learned(sets, att, targets=60, trials=2, seed=3, mechanism=mech,
                               progress=False, top_k=16)
    ref = measure_risk(sets, weeks=4, targets=60, trials=2, seed=3, mechanism=mech,
                       progress=False)
    for name in ("hamming", "asymmetric"):
        assert res.attacks[name].expected == ref.attacks[name].expected
        assert res.attacks[name].risk == ref.attacks[name].risk
    assert 0.0 <= res.attacks["learned"].expected_risk_mean <= 1.0
    assert len(res.attacks["learned"].description["retrieval_recall"]) == 2


def test_cli_cuda_refused_without_gpu(tmp_path) -> None:
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    res = CliRunner().invoke(app, ["attack-train", "--sets", str(tmp_path / "none.parquet"),
                                   "--out", str(tmp_path / "att"), "--device", "cuda"])
    assert res.exit_code == 2 and "--device" in res.output
    assert res.output.strip().count("\n") == 0


@pytest.mark.parametrize(("field", "value"), [("negatives", 1001), ("negatives", 0),
                                              ("epochs", 0), ("hard_fraction", 1.5)])
def test_config_refuses_out_of_range(field: str, value: object) -> None:
    with pytest.raises(InputError) as exc:
        LearnedAttackConfig(**{field: value})
    assert exc.value.field == field
