"""Stationarity check (paper Appendix C): are the statistics the same every week?

Public names:
    weekly_statistics(source) -> (q_single[W, m], q_within[W, m, m], q_across[W-1, m, m])
    stationarity(source) -> Stationarity     Pearson correlations between weeks (single,
                                             within) and between week transitions (across)
    Stationarity                             tables and minima; ``to_dict()``

``source`` is topic-set sequences (empirical frequencies over users, exact) or a
``TypeMixture`` (its closed forms per fitted week and consecutive week pair). The paper finds
every correlation ≥ 0.997 on real data (single 0.99857–0.99987, pairs 0.99726–0.99968,
transitions 0.99826–0.99938), which supports imposing the same targets on every week.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from topicslab.datamodel import TopicSets
from topicslab.errors import InputError
from topicslab.model import TypeMixture

__all__ = ["Stationarity", "stationarity", "weekly_statistics"]

Stats = tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]


def _presence(sets: npt.NDArray[np.int16], m: int) -> sp.csr_matrix:
    """Sparse 0/1 matrix ``[n, m]`` of one week's sets (duplicates counted once)."""
    n, k = sets.shape
    rows = np.repeat(np.arange(n, dtype=np.int64), k)
    cols = sets.reshape(-1).astype(np.int64)
    keep = cols >= 0
    x = sp.csr_matrix((np.ones(int(keep.sum()), dtype=np.float64), (rows[keep], cols[keep])),
                      shape=(n, m))
    x.sum_duplicates()
    x.data[:] = 1.0
    return x


def weekly_statistics(source: TopicSets | TypeMixture) -> Stats:
    """Per-week q_single and q_within (zero diagonal), per-transition q_across."""
    if isinstance(source, TypeMixture):
        qs, qw, _ = source.statistics()
        qa = source.q_across([(i, i + 1) for i in range(source.weeks - 1)])
        return qs, qw, qa
    if not isinstance(source, TopicSets):
        raise InputError(f"expected TopicSets or a TypeMixture, got {type(source).__name__}")
    n, W, m = source.n_users, source.n_weeks, source.taxonomy.size
    if n == 0:
        raise InputError("no users", field="sets")
    if W == 0:  # (NumPy's "need at least one array to stack")
        raise InputError("the sets hold no week (shape "
                         f"{tuple(source.sets.shape)}); give sets of at least one week",
                         field="sets")
    if n >= 50_000:
        # large inputs: the population package's parallel numba pair counter, one call per
        # week (and its transition to the next); the sparse products below are
        # single-threaded and take minutes at 10M users
        from topicslab.population import weekly_empirical_statistics

        return weekly_empirical_statistics(source.sets, m)
    xs = [_presence(source.sets[:, w, :], m) for w in range(W)]
    qs = np.stack([np.asarray(x.sum(axis=0)).ravel() / n for x in xs])
    qw = np.stack([(x.T @ x).toarray() / n for x in xs])
    idx = np.arange(m)
    qw[:, idx, idx] = 0.0
    qa = (np.stack([(xs[w].T @ xs[w + 1]).toarray() / n for w in range(W - 1)])
          if W > 1 else np.zeros((0, m, m)))
    return qs, qw, qa


def _pearson(a: npt.NDArray[np.float64], b: npt.NDArray[np.float64]) -> float:
    if a.std() == 0 or b.std() == 0:
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])


@dataclass
class Stationarity:
    """Pearson correlations of each statistic between weeks (Appendix C, Fig. 8).

    ``single`` and ``within``: rows ``(week i, week j, r)`` for i < j; ``across``: rows
    ``(transition a, transition b, r)`` where transition a is weeks (a, a+1).
    """

    single: list[tuple[int, int, float]]
    within: list[tuple[int, int, float]]
    across: list[tuple[int, int, float]]

    def minimum(self) -> dict[str, float]:
        return {name: min((r for _, _, r in rows), default=float("nan"))
                for name, rows in (("single", self.single), ("within", self.within),
                                   ("across", self.across))}

    def to_dict(self) -> dict[str, Any]:
        def rows(tab: list[tuple[int, int, float]], what: str) -> list[dict[str, Any]]:
            if what == "transition":
                return [{"a": [i, i + 1], "b": [j, j + 1], "pearson": r} for i, j, r in tab]
            return [{"a": i, "b": j, "pearson": r} for i, j, r in tab]

        return {"single": rows(self.single, "week"), "within": rows(self.within, "week"),
                "across": rows(self.across, "transition"), "minimum": self.minimum()}


def stationarity(source: TopicSets | TypeMixture | Stats) -> Stationarity:
    """Correlations between every two weeks (q_single, q_within over o1 < o2) and every two
    week transitions (q_across over all ordered pairs)."""
    qs, qw, qa = source if isinstance(source, tuple) else weekly_statistics(source)
    m = qs.shape[1]
    iu = np.triu_indices(m, 1)
    single = [(i, j, _pearson(qs[i], qs[j])) for i, j in combinations(range(qs.shape[0]), 2)]
    within = [(i, j, _pearson(qw[i][iu], qw[j][iu]))
              for i, j in combinations(range(qw.shape[0]), 2)]
    across = [(i, j, _pearson(qa[i].ravel(), qa[j].ravel()))
              for i, j in combinations(range(qa.shape[0]), 2)]
    return Stationarity(single, within, across)
