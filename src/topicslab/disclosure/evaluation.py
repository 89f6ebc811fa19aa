"""Evaluation of the detection rules on labelled sessions (Mac Aonghusa & Leith §6.1-6.5).

Given M̂ of every probe of every test session and each session's true category:

* **Sensitive vs non-sensitive** (Table 6.1): a session is predicted sensitive when a probe among
  its first ``session_probes`` rejects band(other); rows are the expected class, each row sums to
  100%.
* **Per topic, one vs rest** (Table 3): for sensitive topic c, a session is a *True Detect* when
  it is on c and c is learned at one of its first ``session_probes`` probes, a *False Other* when
  it is on c and c is not learned, a *False Detect* when it is not on c and c is learned, a
  *True Other* otherwise: TD + FO = 100% and TO + FD = 100%. The same rates per probe are given
  too, as is the rate at which each true category gets each topic detected (topic confusion) and
  the mean M̂ per true category (Figure 3).
* **Timing** (§6.5): a probe is *misclassified* when its session is on c ∈ C and c is not learned
  there, or the session is on ``other`` and some sensitive topic is learned there. X = length of
  a maximal run of consecutive misclassified probes, P(X = x) = share of runs of length x, E[X];
  Y = 1-based index of a session's first misclassified probe, P(Y = y) over sessions with one;
  adaptation ≈ E[X] × queries between probes. Recall excluding the first k probes: the share of
  probes (of index > k) of sessions on c where c is learned (true positive) and of ``other``
  sessions where some topic is learned (false positive).
* **Time to detection**: for sessions on a sensitive topic, the first probe (1-based, over all
  the probes given, not only the session's first few) rejecting band(other).

Public names:
    evaluate(m_hat, truth, detector, ...) -> Evaluation
    Evaluation, TopicRates, RunLengths
    wilson_interval(successes, n, z)          binomial noise bounds used in reports
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from topicslab._checks import integer, integer_array, number, refuse_complex
from topicslab.disclosure.detection import Detector
from topicslab.errors import InputError


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (``(0, 1)`` when ``n = 0``)."""
    # (a fractional count was taken as a proportion, a negative n as none)
    n = integer(n, "n", at_least=0)
    if n == 0:
        return (0.0, 1.0)
    successes = integer(successes, "successes", at_least=0, at_most=n)
    z = number(z, "z", lo=0.0, lo_open=True, why="a normal quantile")
    p = successes / n
    den = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (max(0.0, centre - half), min(1.0, centre + half))


def _rate(num: int, den: int) -> float | None:
    return num / den if den else None


@dataclass(frozen=True)
class TopicRates:
    """One-vs-rest rates of one sensitive topic (Table 3 of the paper)."""

    category: str
    positives: int  # sessions (or probes) on the topic
    negatives: int  # sessions (or probes) on any other category
    detected_positives: int
    detected_negatives: int

    @property
    def true_detect(self) -> float | None:
        return _rate(self.detected_positives, self.positives)

    @property
    def false_other(self) -> float | None:
        return _rate(self.positives - self.detected_positives, self.positives)

    @property
    def false_detect(self) -> float | None:
        return _rate(self.detected_negatives, self.negatives)

    @property
    def true_other(self) -> float | None:
        return _rate(self.negatives - self.detected_negatives, self.negatives)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "true_detect": self.true_detect, "false_other": self.false_other,
                "false_detect": self.false_detect, "true_other": self.true_other}


@dataclass(frozen=True)
class RunLengths:
    """Run-length statistics of misclassifications (§6.5)."""

    p_x: dict[int, float]
    expected_x: float | None
    p_y: dict[int, float]
    n_runs: int
    n_sessions_with_error: int
    queries_between_probes: float
    adaptation: float | None  # E[X] x queries between probes

    def to_dict(self) -> dict[str, Any]:
        return {"p_x": {str(k): v for k, v in self.p_x.items()}, "expected_x": self.expected_x,
                "p_y": {str(k): v for k, v in self.p_y.items()}, "n_runs": self.n_runs,
                "n_sessions_with_error": self.n_sessions_with_error,
                "queries_between_probes": self.queries_between_probes,
                "adaptation": self.adaptation}


@dataclass(frozen=True)
class Evaluation:
    """Everything §6 reports, for one set of test sessions."""

    categories: tuple[str, ...]
    other: str
    session_probes: int
    n_sessions: int
    n_probes: int
    confusion: dict[str, dict[str, int]]  # expected -> predicted -> sessions
    per_topic: tuple[TopicRates, ...]  # session level
    per_topic_probe: tuple[TopicRates, ...]  # probe level
    topic_confusion: list[list[float | None]]  # [true category][detected topic] session rate
    mean_m_hat: list[list[float | None]]  # [true category][column c] (Figure 3)
    runs: RunLengths
    recall: tuple[dict[str, Any], ...]
    time_to_detection: dict[str, Any] = field(default_factory=dict)

    @property
    def detection_rate(self) -> float | None:
        """P(predicted sensitive | sensitive session)."""
        row = self.confusion["sensitive"]
        return _rate(row["sensitive"], row["sensitive"] + row["non_sensitive"])

    @property
    def false_positive_rate(self) -> float | None:
        """P(predicted sensitive | non-sensitive session)."""
        row = self.confusion["non_sensitive"]
        return _rate(row["sensitive"], row["sensitive"] + row["non_sensitive"])

    def confusion_rates(self) -> dict[str, dict[str, float | None]]:
        """Rows of the confusion matrix as shares (Table 6.1)."""
        out = {}
        for exp, row in self.confusion.items():
            total = sum(row.values())
            out[exp] = {pred: _rate(v, total) for pred, v in row.items()}
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "categories": list(self.categories), "other": self.other,
            "session_probes": self.session_probes, "n_sessions": self.n_sessions,
            "n_probes": self.n_probes,
            "confusion": self.confusion, "confusion_rates": self.confusion_rates(),
            "detection_rate": self.detection_rate,
            "false_positive_rate": self.false_positive_rate,
            "per_topic": [t.to_dict() for t in self.per_topic],
            "per_topic_probe": [t.to_dict() for t in self.per_topic_probe],
            "topic_confusion": self.topic_confusion, "mean_m_hat": self.mean_m_hat,
            "runs": self.runs.to_dict(), "recall": [dict(r) for r in self.recall],
            "time_to_detection": self.time_to_detection,
        }


def _runs(mis: npt.NDArray[np.bool_]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Lengths of maximal True runs of each row, and the row of each run (vectorised)."""
    n, p = mis.shape
    padded = np.zeros((n, p + 2), dtype=np.int8)
    padded[:, 1:-1] = mis
    d = np.diff(padded, axis=1)
    srow, scol = np.nonzero(d == 1)
    _, ecol = np.nonzero(d == -1)  # row-major order pairs each start with its end
    return (ecol - scol).astype(np.int64), srow.astype(np.int64)


def evaluate(
    m_hat: npt.ArrayLike,
    truth: npt.ArrayLike,
    detector: Detector,
    *,
    queries_between_probes: float = 4.0,
    exclude: Sequence[int] = (0, 1, 2, 3),
) -> Evaluation:
    """Evaluate the detector on test sessions.

    Args:
        m_hat: ``float[n_sessions, n_probes, C]`` M̂ of every probe.
        truth: ``int[n_sessions]`` column index of each session's true category.
        detector: bands and rules.
        queries_between_probes: user queries between two probes (4 in the paper's test data; 1
            epoch for Topics probes) for the adaptation estimate.
        exclude: the k of "recall excluding the first k probes".
    """
    # (a fractional truth was truncated to a category, a NaN M̂ was "inside no band" and a
    # NaN queries_between_probes gave NaN timings, silently; exclude=(0.5,) was a TypeError)
    if not isinstance(detector, Detector):
        raise TypeError(f"detector takes a Detector, got {type(detector).__name__}")
    refuse_complex(m_hat, "m_hat")  # (the real part was taken, with a warning at most)
    try:
        arr = np.asarray(m_hat, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError("M̂ must be numbers", field="m_hat") from None
    if not np.isfinite(arr).all():
        raise InputError("M̂ must be finite", field="m_hat")
    tr = np.asarray(integer_array(truth, "truth"), dtype=np.int64)
    queries_between_probes = number(queries_between_probes, "queries_between_probes", lo=0.0,
                                    lo_open=True)
    exclude = [integer(k, "exclude", at_least=0) for k in exclude]
    cats = detector.categories
    c = len(cats)
    if arr.ndim != 3 or arr.shape[2] != c:
        raise InputError(f"M̂ must be [sessions, probes, {c}], got {arr.shape}", field="m_hat")
    if tr.shape != (arr.shape[0],):
        raise InputError("truth must have one entry per session", field="truth")
    if tr.size and (tr.min() < 0 or tr.max() >= c):
        raise InputError(f"truth must hold category indices in 0..{c - 1}", field="truth")
    if queries_between_probes <= 0:
        raise InputError("queries_between_probes must be positive",
                         field="queries_between_probes")
    o = detector.other_index
    n_s, n_p = arr.shape[0], arr.shape[1]
    sp = min(detector.session_probes, n_p)
    sess = arr[:, :sp]
    is_sens = tr != o

    # Table 6.1: sensitive vs non-sensitive sessions
    pred = detector.session(sess)
    confusion = {
        "sensitive": {"sensitive": int((pred & is_sens).sum()),
                      "non_sensitive": int((~pred & is_sens).sum())},
        "non_sensitive": {"sensitive": int((pred & ~is_sens).sum()),
                          "non_sensitive": int((~pred & ~is_sens).sum())},
    }

    # Table 3: per topic, one vs rest, per session and per probe
    learned = detector.learned(sess)  # [S, sp, C]
    sess_topics = np.asarray(learned.any(axis=1))  # [S, C]
    per_topic, per_probe = [], []
    for j, name in enumerate(cats):
        if j == o:
            continue
        pos = tr == j
        per_topic.append(TopicRates(name, int(pos.sum()), int((~pos).sum()),
                                    int(sess_topics[pos, j].sum()),
                                    int(sess_topics[~pos, j].sum())))
        per_probe.append(TopicRates(name, int(pos.sum()) * sp, int((~pos).sum()) * sp,
                                    int(learned[pos, :, j].sum()),
                                    int(learned[~pos, :, j].sum())))
    topic_conf: list[list[float | None]] = []
    mean_m: list[list[float | None]] = []
    for i in range(c):
        rows = tr == i
        n_i = int(rows.sum())
        topic_conf.append([None if n_i == 0 or j == o else float(sess_topics[rows, j].mean())
                           for j in range(c)])
        mean_m.append([float(sess[rows, :, j].mean()) if n_i else None for j in range(c)])

    # §6.5: misclassification runs and first misclassification
    anyl = np.asarray(learned.any(axis=2))  # some topic learned, [S, sp]
    own = np.take_along_axis(learned, np.where(is_sens, tr, 0)[:, None, None], axis=2)[..., 0]
    mis = np.where(is_sens[:, None], ~own, anyl)  # [S, sp]
    lengths, _ = _runs(mis)
    n_runs = int(lengths.size)
    p_x = {x: float((lengths == x).sum() / n_runs) for x in range(1, sp + 1)} if n_runs else {}
    e_x = float(lengths.mean()) if n_runs else None
    has = mis.any(axis=1)
    first = mis.argmax(axis=1)[has] + 1
    p_y = ({y: float((first == y).mean()) for y in range(1, sp + 1)} if first.size else {})
    runs = RunLengths(p_x, e_x, p_y, n_runs, int(has.sum()), float(queries_between_probes),
                      None if e_x is None else e_x * queries_between_probes)

    recall = []
    for k in exclude:
        if not 0 <= k < sp:
            continue
        tp = own[is_sens, k:]
        fp = anyl[~is_sens, k:]
        recall.append({"exclude_first": int(k),
                       "true_positive": float(tp.mean()) if tp.size else None,
                       "false_positive": float(fp.mean()) if fp.size else None})

    # time to detection over all probes (1-based), sensitive sessions only
    first_det = detector.first_detection(arr)[is_sens]
    detected = first_det[first_det > 0]
    ttd: dict[str, Any] = {
        "sessions": int(is_sens.sum()),
        "detected": int(detected.size),
        "mean": float(detected.mean()) if detected.size else None,
        "median": float(np.median(detected)) if detected.size else None,
        "cumulative": [float(((first_det > 0) & (first_det <= p)).mean())
                       if first_det.size else None for p in range(1, n_p + 1)],
    }
    return Evaluation(cats, detector.other, sp, n_s, n_p, confusion, tuple(per_topic),
                      tuple(per_probe), topic_conf, mean_m, runs, tuple(recall), ttd)


__all__ = ["Evaluation", "RunLengths", "TopicRates", "evaluate", "wilson_interval"]
