"""Bands, the detection rules and the §6 evaluation on hand-made M̂ values."""

from __future__ import annotations

import numpy as np
import pytest

from topicslab.disclosure import Detector, evaluate, learn_bands, wilson_interval
from topicslab.errors import InputError

CATS = ("c1", "c2", "other")


def _bands(**kw):
    # training probes: c1 probes have M̂(c1) in {1, 3}; c2: M̂(c2) in {2, 2}; other: {4, 6}
    m_hat = np.array([[1.0, 0, 0], [3.0, 0, 0], [0, 2.0, 0], [0, 2.0, 0], [0, 0, 4.0],
                      [0, 0, 6.0]])
    return learn_bands(m_hat, [0, 0, 1, 1, 2, 2], CATS, **kw)


def test_learn_bands() -> None:
    b = _bands(n_sigma=1.0)
    sd = np.sqrt(2.0)  # sample std of {1, 3} and {4, 6}
    assert b["c1"].mean == 2.0 and b["c1"].std == pytest.approx(sd)
    assert (b["c1"].lower, b["c1"].upper) == pytest.approx((2 - sd, 2 + sd))
    assert (b["c2"].lower, b["c2"].upper) == (2.0, 2.0)  # zero spread: a point
    assert b["other"].n == 2 and b.categories == CATS
    lower = _bands(n_sigma=3.0, sides="lower", clip=True)
    assert lower["c1"].lower == 0.0 and lower["c1"].upper == np.inf  # clipped at 0
    upper = _bands(n_sigma=1.0, sides="upper")
    assert upper["other"].lower == -np.inf and upper["other"].upper == pytest.approx(5 + sd)
    assert b.inside([[2.0, 2.0, 5.0]]).tolist() == [[True, True, True]]
    assert b.inside([[0.0, 2.1, 3.0]]).tolist() == [[False, False, False]]
    assert b["c1"].outside([0.0, 2.0]).tolist() == [True, False]
    assert lower.to_dict()["bands"][0]["upper"] == "inf"


def test_bad_bands() -> None:
    with pytest.raises(InputError, match="labelled 'c2'"):
        learn_bands(np.zeros((2, 3)), [0, 2], CATS)
    with pytest.raises(InputError, match="sides"):
        _bands(sides="left")
    with pytest.raises(InputError, match="n_sigma"):
        _bands(n_sigma=-1.0)
    with pytest.raises(InputError):
        learn_bands(np.zeros((2, 2)), [0, 1], CATS)
    with pytest.raises(InputError):
        learn_bands(np.zeros((2, 3)), [0, 3], CATS)
    with pytest.raises(InputError, match="finite"):
        learn_bands(np.full((2, 3), np.nan), [0, 1], CATS)


def test_rules() -> None:
    det = Detector(_bands(n_sigma=1.0), "other", session_probes=2)
    inside_other = [0.0, 0.0, 5.0]
    c1_learned = [2.0, 0.0, 0.0]  # M̂(c1) in band, M̂(other) out of band
    both = [2.0, 2.0, 0.0]
    assert det.sensitive([inside_other, c1_learned]).tolist() == [False, True]
    assert det.learned([inside_other, c1_learned, both]).tolist() == [
        [False, False, False], [True, False, False], [True, True, False]]
    # a session looks at its first two probes only
    sessions = np.array([[inside_other, inside_other, c1_learned],
                         [inside_other, c1_learned, inside_other]])
    assert det.session(sessions).tolist() == [False, True]
    assert det.session_topics(sessions).tolist() == [[False, False, False],
                                                     [True, False, False]]
    assert det.first_detection(sessions).tolist() == [3, 2]
    with pytest.raises(InputError):
        Detector(_bands(), "nope")
    with pytest.raises(InputError):
        Detector(_bands(), session_probes=0)


def test_evaluate() -> None:
    det = Detector(_bands(n_sigma=1.0), "other", session_probes=4)
    o, a, b = [0.0, 0.0, 5.0], [2.0, 0.0, 0.0], [0.0, 2.0, 0.0]  # other / c1 / c2 learned
    m_hat = np.array([
        [o, o, a, a, a],  # session on c1: misclassified at probes 1-2 (run of 2), Y = 1
        [a, o, a, o, o],  # session on c1: runs of 1 at probes 2 and 4, Y = 2
        [b, b, b, b, b],  # session on c2: never wrong
        [o, o, o, o, a],  # other: right within the session; probe 5 is outside it
        [o, b, o, o, o],  # other: c2 falsely detected at probe 2 (run of 1), Y = 2
    ])
    ev = evaluate(m_hat, [0, 0, 1, 2, 2], det, queries_between_probes=4.0, exclude=(0, 1, 9))
    assert ev.confusion == {"sensitive": {"sensitive": 3, "non_sensitive": 0},
                            "non_sensitive": {"sensitive": 1, "non_sensitive": 1}}
    assert ev.detection_rate == 1.0 and ev.false_positive_rate == 0.5
    t1, t2 = ev.per_topic
    assert (t1.category, t1.true_detect, t1.false_detect) == ("c1", 1.0, 0.0)
    assert (t2.true_detect, t2.false_other, t2.false_detect, t2.true_other) == (
        1.0, 0.0, 0.25, 0.75)
    for t in (*ev.per_topic, *ev.per_topic_probe):
        td, fo, fd, to = t.true_detect, t.false_other, t.false_detect, t.true_other
        assert td is not None and fo is not None and fd is not None and to is not None
        assert td + fo == pytest.approx(1.0)
        assert to + fd == pytest.approx(1.0)
    assert ev.per_topic_probe[0].detected_positives == 4  # c1 learned at 2 + 2 probes
    # runs: lengths 2, 1, 1, 1 -> P(X=1) = 3/4, P(X=2) = 1/4, E[X] = 1.25
    assert ev.runs.p_x == {1: 0.75, 2: 0.25, 3: 0.0, 4: 0.0}
    assert ev.runs.expected_x == pytest.approx(1.25)
    assert ev.runs.adaptation == pytest.approx(5.0)
    assert ev.runs.p_y == pytest.approx({1: 1 / 3, 2: 2 / 3, 3: 0.0, 4: 0.0})
    assert ev.runs.n_sessions_with_error == 3
    rec = {r["exclude_first"]: r for r in ev.recall}
    assert set(rec) == {0, 1}  # k = 9 is past the session
    assert rec[0]["true_positive"] == pytest.approx(8 / 12)
    assert rec[0]["false_positive"] == pytest.approx(1 / 8)
    assert rec[1]["true_positive"] == pytest.approx(6 / 9)
    assert ev.topic_confusion[2][1] == 0.5 and ev.topic_confusion[0][2] is None
    assert ev.mean_m_hat[1][1] == pytest.approx(2.0)
    ttd = ev.time_to_detection  # first band(other) rejection over all five probes
    assert ttd["detected"] == 3 and ttd["mean"] == pytest.approx((3 + 1 + 1) / 3)
    assert ttd["cumulative"] == pytest.approx([2 / 3, 2 / 3, 1.0, 1.0, 1.0])
    d = ev.to_dict()
    assert d["confusion_rates"]["non_sensitive"]["sensitive"] == 0.5
    assert d["runs"]["p_x"]["1"] == 0.75
    with pytest.raises(InputError):
        evaluate(m_hat, [0, 0, 1], det)
    with pytest.raises(InputError):
        evaluate(m_hat[..., :2], [0, 0, 1, 2, 2], det)
    with pytest.raises(InputError):
        evaluate(m_hat, [0, 0, 1, 2, 5], det)


def test_wilson_interval() -> None:
    lo, hi = wilson_interval(5, 10)
    assert (lo, hi) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.2775, abs=1e-4)
    assert wilson_interval(0, 0) == (0.0, 1.0)
