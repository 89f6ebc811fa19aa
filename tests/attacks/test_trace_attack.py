"""The protocol's extension point for whole-trace scorers (``TraceAttack``; issue 17): such an
attack runs in the same trials, on the same targets and tie-break streams, as the match-set
attacks, which keep the exact engine; the learned attack is one."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from topicslab.api import Mechanism
from topicslab.attacks import TraceAttack, measure_risk, measure_risk_traces, risk_curve
from topicslab.attacks.learned import LearnedAttackConfig, LearnedTraceAttack, _new_attack
from topicslab.attacks.matching import MatchingOptions
from topicslab.attacks.outcomes import TargetOutcomes
from topicslab.datamodel import TopicSets
from topicslab.errors import InputError


class SharedTopics(TraceAttack):
    """Scores a website-1 trace by how many distinct topics it shares with the query, in any
    week: a whole-sequence score no per-week match gain expresses."""

    name = "shared"

    def fit(self, site1: npt.NDArray[np.integer], mechanism: Mechanism | None = None) -> None:
        self.site1 = np.asarray(site1)
        self.calls = 0

    def outcomes(self, queries: npt.NDArray[np.integer],
                 true_rows: npt.NDArray[np.int64]) -> TargetOutcomes:
        self.calls += 1
        score = _shared(self.site1, queries)
        best = score.max(axis=1)
        top = score == best[:, None]
        rows = np.asarray(true_rows)
        inside = np.where(rows >= 0, top[np.arange(len(rows)), np.maximum(rows, 0)], False)
        return TargetOutcomes(top.sum(axis=1).astype(np.int64), inside, best.astype(float))

    def describe(self) -> dict[str, object]:
        return {"name": self.name, "calls": self.calls}


def _shared(site1: np.ndarray, queries: np.ndarray) -> np.ndarray:
    out = np.zeros((len(queries), len(site1)), dtype=np.int64)
    for q, o in enumerate(queries):
        topics = set(o[o >= 0].tolist())
        for u, x in enumerate(site1):
            out[q, u] = len(topics & set(x[x >= 0].tolist()))
    return out


def _population(n: int = 150, weeks: int = 4, seed: int = 0) -> TopicSets:
    rng = np.random.default_rng(seed)
    return TopicSets(np.sort(np.stack([np.stack([rng.choice(30, 5, replace=False)
                                                 for _ in range(weeks)])
                                       for _ in range(n)]), axis=-1).astype(np.int16), "v2")


def test_a_whole_trace_attack_runs_beside_the_engine() -> None:
    """Its expected risk is its own argmax sets' 1/|argmax| averaged over the same targets;
    the hand-made attacks' figures do not change when it is added."""
    rng = np.random.default_rng(3)
    site1 = rng.integers(-1, 12, size=(80, 3))
    site2 = np.where(rng.random((80, 3)) < 0.7, site1, rng.integers(0, 12, size=(80, 3)))
    alone = measure_risk_traces(site1, site2, attacks=["hamming"], targets="all", trials=2,
                                progress=False)
    both = measure_risk_traces(site1, site2, attacks=["hamming", SharedTopics()],
                               targets="all", trials=2, progress=False)
    assert both.attacks["hamming"].expected == alone.attacks["hamming"].expected
    score = _shared(site1, site2)
    best = score.max(axis=1)
    top = score == best[:, None]
    want = np.where(top[np.arange(80), np.arange(80)], 1.0 / top.sum(axis=1), 0.0).mean()
    got = both.attacks["shared"]
    assert got.expected == pytest.approx([want, want], abs=1e-12)
    assert got.description == {"name": "shared", "calls": 2}


def test_untrained_learned_attack_is_the_asymmetric_attack_in_measure_risk() -> None:
    """The learned attack as a protocol attack: untrained, it equals the asymmetric attack
    target by target in every trial (same traces and targets; its tie-breaks are its own)."""
    sets = _population()
    att = _new_attack(469, "v2", 4, 1, LearnedAttackConfig(), "cpu")
    res = measure_risk(sets, attacks=["asymmetric", LearnedTraceAttack(att)], weeks=4,
                       targets=100, trials=3, seed=5, progress=False)
    a, learned = res.attacks["asymmetric"], res.attacks["learned"]
    assert learned.expected == a.expected and learned.expected_sumsq == a.expected_sumsq
    assert len(learned.description["candidate_recall"]) == 3
    assert set(res.per_trial[0]["attack_seconds"]) == {"match-set attacks", "learned"}


def test_whole_trace_attacks_refuse_what_they_cannot_do() -> None:
    sets = _population()
    att = _new_attack(469, "v2", 4, 1, LearnedAttackConfig(), "cpu")
    with pytest.raises(InputError, match="trained on r = 4") as e:  # one model, one r
        risk_curve(sets, weeks=[2, 4], attacks=[LearnedTraceAttack(att)], targets=50,
                   trials=1, progress=False)
    assert e.value.field == "weeks"
    with pytest.raises(InputError, match="per-week match gains") as e:
        measure_risk(sets, attacks=["hamming", SharedTopics()], weeks=4, setting="matching",
                     matching=MatchingOptions("assignment"), trials=1, progress=False)
    assert e.value.field == "matching"
    with pytest.raises(InputError, match="not an attack"):
        measure_risk(sets, attacks=[object()], weeks=4, progress=False)  # type: ignore[list-item]
