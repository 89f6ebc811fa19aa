"""The matching-setting attack: a one-to-one assignment of website 2's traces to website 1's
users (Carey et al. §3, the matching setting; docs/theory.md §5).

In the matching setting the attacker holds *every* user's website-2 trace, in an unknown
order, next to website 1's table. Lemma 5's reduction applies the random-user rule to each
trace on its own: several traces may then name the same user. An adversary holding both whole
tables also knows that the traces belong to *distinct* users, so it looks for the one-to-one
assignment of traces to users with the largest total score — a maximum-weight bipartite
matching. For a match-set attack whose score is a log-likelihood up to a constant per trace
(the asymmetric attack under Theorem 1's model, Lemma 11; the Hamming attack for a symmetric
channel), that matching is the most likely permutation (the MAP estimate): the constant of a
trace is paid once by every assignment, since each trace is assigned exactly once.

Objectives (``objective``):

* ``"loglik"`` — maximise Σ score (the MAP permutation under the attack's model);
* ``"posterior"`` — maximise Σ P(u | o) with P(u | o) = exp(score(u, o)) / Σ_v exp(score(v, o)),
  the random-user posterior of each trace under a uniform prior (its normaliser is exact: it
  is a sum over match sets of their counts, from the exact engine). The sum of the true
  matching posteriors P(π(i) = u | all traces) would make this the assignment with the most
  expected correct pairs (Bayes-optimal among one-to-one guesses; checked by brute force in
  tests/attacks/test_matching.py), but those marginals are permanents (#P-hard): the per-trace
  posterior is their tractable stand-in.

How (sizes to 1M users):

1. *candidates* — from the exact engine's match-set counts (``engine.MatchSetCounter``), each
   trace keeps its top ``candidates`` users (default 32): everyone scoring above the cutoff
   score and a uniformly random subset of those at it (a hypergeometric split over the match
   sets of the cutoff level, then the lowest random priorities within each). The members of a
   match set M are found by a sort of website 1 on its projection on M; only the sets the plan
   asks for are sorted, one at a time.
2. *graph* — a sparse bipartite graph (traces × users) of those edges, plus one private
   *dummy* user per trace (see ``_solve_batch`` on why that does not bias the result), so a
   full matching always exists.
3. *solve* — on each connected component, small components batched block-diagonally, with
   ``solver="cost-scaling"``: OR-Tools' ``SimpleMinCostFlow`` (Goldberg's cost-scaling
   push-relabel; optional dependency, ``pip install 'topicslab[matching]'``) on the weights
   rounded to a grid of ``COST_STEP`` (``_integer_costs``), or ``solver="lapjv"``:
   ``scipy.sparse.csgraph.min_weight_full_bipartite_matching`` (LAPJVsp, Jonker & Volgenant
   1987) on the float weights, the default; ``"auto"`` is cost-scaling when OR-Tools is
   installed, else LAPJVsp. Measured (benchmarks/RESULTS.md), the time of either depends on
   the graph more than on its size; on the Hamming attack's 300K-user graph (r = 4)
   cost-scaling took 181 s against LAPJVsp's 739 s, and it solved the 1M-user graphs in 382 s
   (asymmetric) and 1,029 s (Hamming); below 300K neither is consistently faster, so the
   default is unchanged.
4. *complete* — traces left on their dummy are matched uniformly at random to the users no
   trace took (the attacker has no score-based preference left among them).

Ties are honest: website 1's users and the traces are relabelled by a fresh random permutation
before anything is chosen, so the candidates at a cutoff score, the solver's choice among equal
optimal matchings and the completion are all independent of who the true user is (the
cost-scaling solver's rounding of the weights sees scores only, so it cannot favour true pairs
either). The success
rate is therefore one draw of a randomly tie-broken attacker (like ``TargetOutcomes.sample``);
no expectation over the tied optima is claimed (counting optimal matchings is #P-hard).

Exactness of the restriction: with ``candidates >= n`` the graph is complete and the result is
the exact maximum-weight assignment (tested against ``scipy.optimize.linear_sum_assignment``);
with fewer, it is the best assignment of the relaxation in which every user outside a trace's
list is worth the list's cutoff score (``cutoff_dummies``), and the benchmark reports how the
rate moves with ``candidates``.

Public names:
    OBJECTIVES, MATCHINGS, SOLVERS, DEFAULT_CANDIDATES, COST_STEP
    MatchingOptions(matching, candidates, objective, solver)  checked options
    MatchingOutcome                                          one attack, one trial
    candidate_edges(site1, queries, gains, *, candidates, objective, rng) -> CandidateEdges
    solve_assignment(n_rows, n_cols, rows, cols, weights, *, dummy, batch_edges, solver)
                                     -> (int64[n_rows] column per row or -1, component sizes)
    cutoff_dummies(n_rows, rows, weights)   each row's value of staying off the graph
    matching_attack(site1, queries, true_rows, attacks, *, candidates, objective, seed,
                    progress, solver) -> list[MatchingOutcome]
    resolve_solver(solver) -> str    the solver that runs (InputError: cost-scaling missing)
    has_cost_scaling() -> bool       whether OR-Tools' min-cost flow is importable
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from numba import njit, prange

from topicslab._checks import (
    MAX_COUNT,
    choice,
    flag,
    integer,
    integer_array,
    refuse,
    refuse_complex,
)
from topicslab._progress import task
from topicslab.attacks.attack import MatchSetAttack
from topicslab.attacks.engine import _TOP, MatchSetCounter, _zval
from topicslab.attacks.join import count_chunks
from topicslab.attacks.outcomes import outcomes_from_counts
from topicslab.attacks.scoring import match_masks, subset_scores
from topicslab.errors import InputError

#: ``loglik``: maximise the total score; ``posterior``: maximise the total per-trace posterior.
OBJECTIVES = ("loglik", "posterior")
#: ``per-item``: Lemma 5's random-user rule on every trace (the default of ``reid --setting
#: matching``); ``assignment``: this module's one-to-one attack, reported next to it.
MATCHINGS = ("per-item", "assignment")
#: ``lapjv`` (the default): scipy's LAPJVsp; ``cost-scaling``: OR-Tools' cost-scaling min-cost
#: flow on integer costs (``pip install 'topicslab[matching]'``); ``auto``: ``cost-scaling``
#: when OR-Tools is installed, else ``lapjv``.
SOLVERS: tuple[str, ...] = ("auto", "lapjv", "cost-scaling")
#: Resolution of the cost-scaling solver's integer costs: weights are rounded to multiples of
#: 2^-20 (≈ 9.5e-7), so the chosen assignment's total weight is within ``n_rows * COST_STEP``
#: of the optimum (``_integer_costs``).
COST_STEP = 2.0 ** -20
#: How to install the cost-scaling solver (the error when it is asked for and missing).
_INSTALL = ("solver 'cost-scaling' needs OR-Tools: pip install 'topicslab[matching]' "
            "(or pip install 'ortools>=9.15'), or use solver 'lapjv'")
#: Candidates kept per trace (benchmarks/bench_matching.py --candidates compares others).
DEFAULT_CANDIDATES = 32
#: Edges (plus rows) per solver call when batching small components (a giant component is
#: solved alone whatever its size).
BATCH_EDGES = 1 << 22


@dataclass(frozen=True)
class MatchingOptions:
    """Options of the matching setting, checked once (``ParameterError`` naming the field,
    the ``reid`` option of the same name).

    Attributes:
        matching: ``"per-item"`` (Lemma 5: the random-user rule per trace) or
            ``"assignment"`` (the one-to-one attack of this module, next to per-item).
        candidates: users kept per trace in the sparse graph (at least 1).
        objective: ``"loglik"`` or ``"posterior"`` (module docstring).
        solver: ``"lapjv"`` (default), ``"cost-scaling"`` or ``"auto"`` (``SOLVERS``; an explicit
            ``"cost-scaling"`` without OR-Tools installed is an ``InputError`` saying how to
            install it).
    """

    matching: str = "per-item"
    candidates: int = DEFAULT_CANDIDATES
    objective: str = "loglik"
    solver: str = "lapjv"

    def __post_init__(self) -> None:
        choice(self.matching, "matching", MATCHINGS)
        object.__setattr__(self, "candidates", integer(
            self.candidates, "candidates", at_least=1,
            why="every trace needs a candidate user"))
        choice(self.objective, "objective", OBJECTIVES)
        resolve_solver(self.solver)  # the choice, and cost-scaling's dependency

    def to_dict(self) -> dict[str, Any]:
        return {"matching": self.matching, "candidates": self.candidates,
                "objective": self.objective, "solver": self.solver}


@dataclass
class CandidateEdges:
    """The sparse candidate graph: edge ``e`` joins trace ``rows[e]`` and user ``cols[e]``
    with ``weights[e]`` (the objective's value: score or posterior); every trace has
    ``min(candidates, n)`` edges."""

    rows: npt.NDArray[np.int64]
    cols: npt.NDArray[np.int64]
    weights: npt.NDArray[np.float64]


@dataclass
class MatchingOutcome:
    """One attack's matching-setting outcome on one trial.

    Attributes:
        name: the attack.
        assignment: ``int64[Q]`` website-1 row assigned to each trace (a permutation when
            there are as many traces as users).
        correct: ``bool[Q]`` whether that row is the trace's true user.
        in_graph: traces matched inside the candidate graph (the rest were completed at
            random among the users left over).
        edges, components, largest_component: the candidate graph's size.
        random_user_rate: the randomly tie-broken random-user rule on the same traces (Lemma
            5's per-item attack), and ``random_user_expected`` its exact expectation
            (``1/|argmax|``), from the same counts.
        seconds: ``{"candidates": .., "solve": ..}``.
        solver: the solver that ran (``"lapjv"`` or ``"cost-scaling"``).
    """

    name: str
    assignment: npt.NDArray[np.int64]
    correct: npt.NDArray[np.bool_]
    in_graph: int
    edges: int
    components: int
    largest_component: int
    random_user_rate: float
    random_user_expected: float
    candidates: int
    objective: str
    seconds: dict[str, float]
    solver: str = "lapjv"

    @property
    def rate(self) -> float:
        """Share of traces assigned to their true user."""
        return float(self.correct.mean()) if self.correct.size else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"rate": self.rate, "correct": int(self.correct.sum()),
                "traces": int(self.correct.size), "in_graph": self.in_graph,
                "completed_at_random": int(self.correct.size - self.in_graph),
                "edges": self.edges, "components": self.components,
                "largest_component": self.largest_component,
                "random_user_rate": self.random_user_rate,
                "random_user_expected": self.random_user_expected,
                "candidates": self.candidates, "objective": self.objective,
                "solver": self.solver, "seconds": self.seconds}


# ---------------------------------------------------------------- candidates


@njit(cache=True, parallel=True)
def _projection_keys(rows: np.ndarray, t: np.int64, out: np.ndarray) -> None:
    """Key of each row projected on the weeks of ``t`` (the engine's tabulation hash; 0 when a
    week of ``t`` is missing: such a row agrees with nobody on ``t``)."""
    n, r = rows.shape
    for i in prange(n):
        h = np.uint64(0)
        ok = True
        for w in range(r):
            if (t >> w) & 1:
                v = np.int64(rows[i, w])
                if v < 0:
                    ok = False
                    break
                h ^= _zval(w, v)
        out[i] = (h | _TOP) if ok else np.uint64(0)


@njit(cache=True, parallel=True)
def _members(site1: np.ndarray, queries: np.ndarray, t: np.int64, skeys: np.ndarray,
             order: np.ndarray, req_q: np.ndarray, req_key: np.ndarray, req_limit: np.ndarray,
             req_off: np.ndarray, out_u: np.ndarray, found: np.ndarray) -> None:
    """For each request (trace q, at most ``limit`` users), the first users in ``order`` (the
    random priority) whose match set with q is exactly ``t``. Users are looked up by their
    projection key on ``t``; the exact match set is then checked, so a hash collision is only
    a wasted comparison. ``t == 0`` scans every user in priority order."""
    n, r = site1.shape
    for j in prange(req_q.shape[0]):
        q = req_q[j]
        lim = req_limit[j]
        o = req_off[j]
        got = 0
        if t == 0:
            i = 0
        else:
            i = np.searchsorted(skeys, req_key[j])
        while got < lim and i < n:
            if t != 0 and skeys[i] != req_key[j]:
                break
            u = order[i]
            mask = 0
            for w in range(r):
                if queries[q, w] >= 0 and queries[q, w] == site1[u, w]:
                    mask |= 1 << w
            if mask == t:
                out_u[o + got] = u
                got += 1
            i += 1
        found[j] = got


def _plan(counts: npt.NDArray[np.int64], scores: npt.NDArray[np.float64], keep: int,
          rng: np.random.Generator
          ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64],
                     npt.NDArray[np.float64]]:
    """Which users each trace keeps, as requests ``(trace, match set, how many, score)``.

    Every user scoring above the trace's cutoff (the score of its ``keep``-th best user) is
    kept; at the cutoff, the number taken from each match set of that score level is a
    sequential hypergeometric draw, so the kept users of the level are a uniformly random
    subset of it (then the lowest random priorities within each set).
    """
    n_q, n_sets = counts.shape
    present = counts > 0
    key = np.where(present, scores, -np.inf)
    order = np.argsort(-key, axis=1, kind="stable")
    ss = np.take_along_axis(key, order, axis=1)
    cc = np.take_along_axis(counts, order, axis=1)
    cum = np.cumsum(cc, axis=1)
    pos = (cum < keep).sum(axis=1)  # first column where the kept count is reached
    cut = ss[np.arange(n_q), pos]
    above = ss > cut[:, None]
    level = (ss == cut[:, None]) & (cc > 0)
    need = keep - np.where(above, cc, 0).sum(axis=1)
    remaining = np.where(level, cc, 0).sum(axis=1)
    take = np.where(above, cc, 0)
    for j in range(n_sets):
        active = level[:, j] & (need > 0)
        if not active.any():
            continue
        good = cc[active, j]
        bad = remaining[active] - good
        x = rng.hypergeometric(good, bad, need[active])
        take[active, j] = x
        need[active] -= x
        remaining[active] -= good
    qi, col = np.nonzero(take)
    return (qi.astype(np.int64), order[qi, col].astype(np.int64), take[qi, col],
            ss[qi, col])


def _log_partition(counts: npt.NDArray[np.int64], scores: npt.NDArray[np.float64]
                   ) -> npt.NDArray[np.float64]:
    """``log Σ_u exp(score(u, o))`` per trace, exactly from the match-set counts."""
    with np.errstate(divide="ignore"):
        terms = np.where(counts > 0, np.log(np.maximum(counts, 1)) + scores, -np.inf)
    top = terms.max(axis=1)
    return top + np.log(np.exp(terms - top[:, None]).sum(axis=1))


def _edges_of_requests(site1: npt.NDArray[np.integer], queries: npt.NDArray[np.integer],
                       req_q: npt.NDArray[np.int64], req_set: npt.NDArray[np.int64],
                       req_limit: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The users of every request (``req_limit`` each, concatenated in request order)."""
    n = site1.shape[0]
    off = np.zeros(req_q.size + 1, dtype=np.int64)
    np.cumsum(req_limit, out=off[1:])
    users = np.full(int(off[-1]), -1, dtype=np.int64)
    found = np.zeros(req_q.size, dtype=np.int64)
    by_set = np.argsort(req_set, kind="stable")
    sets_sorted = req_set[by_set]
    bounds = np.flatnonzero(np.diff(sets_sorted)) + 1
    starts = np.concatenate([[0], bounds])
    ends = np.concatenate([bounds, [sets_sorted.size]])
    keys = np.empty(n, dtype=np.uint64)
    for lo, hi in zip(starts.tolist(), ends.tolist(), strict=True):
        if lo == hi:
            continue
        t = int(sets_sorted[lo])
        idx = by_set[lo:hi]
        if t == 0:
            skeys = np.zeros(0, dtype=np.uint64)
            order = np.arange(n, dtype=np.int64)
            qkeys = np.zeros(idx.size, dtype=np.uint64)
        else:
            # one sort of website 1 on its projection on t; stable, so equal keys keep the
            # (random) priority order of the relabelled users
            _projection_keys(site1, np.int64(t), keys)
            order = np.argsort(keys, kind="stable").astype(np.int64)
            skeys = keys[order]
            qkeys = np.empty(idx.size, dtype=np.uint64)
            _projection_keys(np.ascontiguousarray(queries[req_q[idx]]), np.int64(t), qkeys)
        sub_found = np.zeros(idx.size, dtype=np.int64)
        _members(site1, queries, np.int64(t), skeys, order, req_q[idx], qkeys,
                 req_limit[idx], off[idx], users, sub_found)
        found[idx] = sub_found
    if not np.array_equal(found, req_limit):  # the counts promised these users
        raise RuntimeError("candidate lookup found fewer users than the match-set counts")
    return users


def candidate_edges(
    site1: npt.NDArray[np.integer],
    queries: npt.NDArray[np.integer],
    gains: npt.NDArray[np.float64],
    *,
    candidates: int = DEFAULT_CANDIDATES,
    objective: str = "loglik",
    rng: np.random.Generator,
    counter: MatchSetCounter | None = None,
) -> CandidateEdges:
    """The top ``candidates`` users of every trace (ties at the cutoff uniformly at random;
    among users of equal score, lower row index = higher priority, so pass website 1 in a
    random order) with the objective's weights.

    Args:
        site1: ``[n, r]`` website-1 table.
        queries: ``[Q, r]`` website-2 traces.
        gains: ``float64[Q, r]`` the attack's per-week gains of each trace.
    """
    opts = MatchingOptions("assignment", candidates, objective)
    counter = counter or MatchSetCounter(site1)
    n = site1.shape[0]
    keep = min(opts.candidates, n)
    plans: list[tuple[Any, ...]] = []
    for lo in range(0, queries.shape[0], counter.chunk):
        hi = min(queries.shape[0], lo + counter.chunk)
        counts = counter.counts(queries[lo:hi])
        plans.append(_chunk_plan(counts, subset_scores(gains[lo:hi]), lo, keep,
                                 opts.objective, rng))
    return _resolve(site1, queries, [plans])[0]


def _chunk_plan(counts: npt.NDArray[np.int64], scores: npt.NDArray[np.float64], lo: int,
                keep: int, objective: str, rng: np.random.Generator) -> tuple[Any, ...]:
    """One chunk's requests ``(trace, match set, how many, weight of each member)``."""
    rq, rset, rlim, rscore = _plan(counts, scores, keep, rng)
    w = rscore
    if objective == "posterior":
        w = np.exp(rscore - _log_partition(counts, scores)[rq])
    return rq + lo, rset, rlim, w


def _resolve(site1: npt.NDArray[np.integer], queries: npt.NDArray[np.integer],
             plans: list[list[tuple[Any, ...]]]) -> list[CandidateEdges]:
    """The edges of every attack's requests (``plans[attack]`` = its chunks' requests).

    All requests of all attacks and chunks are looked up together, so website 1 is sorted
    once per needed match set (at most 2^r − 1 sorts), not once per chunk and attack.
    """
    chunks = [(i, p) for i, pl in enumerate(plans) for p in pl]

    def cat(j: int, dtype: type) -> npt.NDArray[Any]:
        return np.concatenate([np.zeros(0, dtype=dtype)]
                              + [np.asarray(p[j], dtype=dtype) for _, p in chunks])

    rq, rset, rlim, w = cat(0, np.int64), cat(1, np.int64), cat(2, np.int64), cat(3, np.float64)
    tag = np.concatenate([np.zeros(0, dtype=np.int64)]
                         + [np.full(p[0].size, i, dtype=np.int64) for i, p in chunks])
    users = _edges_of_requests(site1, queries, rq, rset, rlim)
    edge_tag = np.repeat(tag, rlim)
    rows = np.repeat(rq, rlim)
    weights = np.repeat(w, rlim)
    out = []
    for i in range(len(plans)):
        mine = edge_tag == i
        out.append(CandidateEdges(rows[mine], users[mine], weights[mine]))
    return out


# ---------------------------------------------------------------- solving


def _solve_batch(n_rows: int, n_cols: int, rows: npt.NDArray[np.int64],
                 cols: npt.NDArray[np.int64], weights: npt.NDArray[np.float64],
                 dummy: npt.NDArray[np.float64] | None) -> npt.NDArray[np.int64]:
    """Maximum-weight matching of one block of rows (local indices): column per row, -1 when
    the row ended on its dummy.

    Feasibility: every row gets a private dummy column, so a full matching (every row matched)
    always exists and the solver never raises. The dummy stands for "a user outside this
    row's candidate list, found later" and is worth ``dummy[row]``; with ``dummy=None`` it
    costs more than the total real cost of any matching of the block (a last resort: the
    solver first matches as many rows as the graph allows). Neither biases the result: a
    dummy is never a user, so never the true pair, and its value depends on the row's scores
    only, never on who the true user is; rows left on a dummy are completed uniformly at
    random afterwards.

    Costs: each row's weights, its dummy's included, are shifted by the row's own best value
    (every row is matched exactly once, so a per-row constant moves every full matching's
    total by the same amount) and by 1, so costs are >= 1: scipy takes a stored zero for a
    missing edge.
    """
    if dummy is None:
        # worth less than the lowest weight by more than the span of any matching's total
        low = float(weights.min(initial=0.0))
        span = float(weights.max(initial=0.0)) - low
        dummy = np.full(n_rows, low - float(n_rows + 1) * (span + 1.0))
    best = np.full(n_rows, -np.inf)
    np.maximum.at(best, rows, weights)
    best = np.maximum(best, dummy)
    cost = best[rows] - weights + 1.0
    dummy_cost = best - dummy + 1.0
    from scipy.sparse import coo_array
    from scipy.sparse.csgraph import min_weight_full_bipartite_matching

    own = np.arange(n_rows, dtype=np.int64)
    graph = coo_array((np.concatenate([cost, dummy_cost]),
                       (np.concatenate([rows, own]), np.concatenate([cols, n_cols + own]))),
                      shape=(n_rows, n_cols + n_rows)).tocsr()
    r_ind, c_ind = min_weight_full_bipartite_matching(graph)
    out = np.full(n_rows, -1, dtype=np.int64)
    out[r_ind] = np.where(c_ind < n_cols, c_ind, -1)
    return out


def has_cost_scaling() -> bool:
    """Whether OR-Tools' min-cost flow solver (the ``matching`` extra) can be imported."""
    try:
        from ortools.graph.python import min_cost_flow  # noqa: F401
    except ImportError:
        return False
    return True


def resolve_solver(solver: str) -> str:
    """The solver ``solve_assignment`` runs for ``solver`` (``SOLVERS``): ``"auto"`` is
    ``"cost-scaling"`` when OR-Tools is installed, else ``"lapjv"`` (silently); an explicit
    ``"cost-scaling"`` without OR-Tools is a one-line ``InputError`` saying how to install it.
    """
    choice(solver, "solver", SOLVERS)
    if solver == "lapjv":
        return "lapjv"
    if has_cost_scaling():
        return "cost-scaling"
    if solver == "auto":
        return "lapjv"
    raise InputError(_INSTALL, field="solver")


def _integer_costs(n_rows: int, rows: npt.NDArray[np.int64], weights: npt.NDArray[np.float64],
                   dummy: npt.NDArray[np.float64] | None, step: float
                   ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Non-negative integer costs of the edges and of each row's dummy, for a minimum-cost
    solver: the weights rounded to the grid ``step`` (``wq = rint(w / step)``), then shifted
    per row by the row's best value (a per-row constant moves every full matching's total by
    the same amount).

    Rounding moves each weight by at most ``step / 2``, so the assignment that is optimal for
    the grid weights is within ``2 · n_rows · step / 2 = n_rows · step`` of the true optimum
    in total weight (each of the two totals compared moves by at most ``n_rows · step / 2``).
    Equal weights stay equal and the order of weights more than a step apart is kept. The
    rounding is applied to scores, which do not know who the true user is, so it cannot favour
    true pairs.

    The dummy is rounded alike, but kept strictly below every edge of its row whose weight is
    above it (``cutoff_dummies``' margin is far below a step: a free listed user of the cutoff
    score must still be taken before the dummy). ``dummy=None``: below the row's lowest grid
    weight by more than the span of any matching's total (the last-resort dummy).
    """
    wq = np.rint(weights / step).astype(np.int64)
    if dummy is None:
        low = int(wq.min(initial=0))
        span = int(wq.max(initial=0)) - low
        dq = np.full(n_rows, low - (n_rows + 1) * (span + 1), dtype=np.int64)
    else:
        dq = np.rint(dummy / step).astype(np.int64)
        above = weights > dummy[rows]
        cap = np.full(n_rows, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(cap, rows[above], wq[above] - 1)
        dq = np.minimum(dq, cap)
    best = dq.copy()
    np.maximum.at(best, rows, wq)
    return best[rows] - wq, best - dq


def _solve_batch_cost_scaling(n_rows: int, n_cols: int, rows: npt.NDArray[np.int64],
                              cols: npt.NDArray[np.int64], weights: npt.NDArray[np.float64],
                              dummy: npt.NDArray[np.float64] | None,
                              step: float = COST_STEP) -> npt.NDArray[np.int64] | None:
    """``_solve_batch`` with OR-Tools' ``SimpleMinCostFlow`` (Goldberg's cost-scaling
    push-relabel) on ``_integer_costs``; ``None`` when OR-Tools reports that the integer costs
    could overflow (the caller then solves the block with LAPJVsp).

    Network: a source sends one unit to each row; row i sends it to one of its candidate
    columns (unit capacity, the edge's cost) or straight to the sink (its dummy, the dummy's
    cost); each column passes at most one unit to the sink. Every row is matched exactly once
    (to a column or its dummy), so a minimum-cost flow is a maximum-weight matching of the
    rows with their dummies, ``_solve_batch``'s problem. (OR-Tools' ``SimpleLinearSumAssignment``
    solves the same problem but needs a balanced graph with a perfect matching, which costs
    twice the arcs here and was 4–7 times slower than LAPJVsp on the attack's graphs:
    benchmarks/bench_assignment.py.)
    """
    from ortools.graph.python.min_cost_flow import SimpleMinCostFlow

    cost, dummy_cost = _integer_costs(n_rows, rows, weights, dummy, step)
    nodes = n_rows + n_cols + 2
    if (max(int(cost.max(initial=0)), int(dummy_cost.max(initial=0))) + 1) * (nodes + 1) \
            >= 1 << 62:
        return None
    # nodes: source 0, rows 1..n_rows, columns n_rows+1..n_rows+n_cols, sink nodes-1
    sink = nodes - 1
    row_node = 1 + np.arange(n_rows, dtype=np.int64)
    col_node = 1 + n_rows + np.arange(n_cols, dtype=np.int64)
    tails = np.concatenate([np.zeros(n_rows, dtype=np.int64), 1 + rows, row_node, col_node])
    heads = np.concatenate([row_node, 1 + n_rows + cols, np.full(n_rows + n_cols, sink)])
    costs = np.concatenate([np.zeros(n_rows, dtype=np.int64), cost, dummy_cost,
                            np.zeros(n_cols, dtype=np.int64)])
    flow = SimpleMinCostFlow()
    flow.add_arcs_with_capacity_and_unit_cost(tails.astype(np.int32), heads.astype(np.int32),
                                              np.ones(tails.size, dtype=np.int64), costs)
    del tails, heads, costs
    flow.set_nodes_supplies(np.array([0, sink], dtype=np.int32),
                            np.array([n_rows, -n_rows], dtype=np.int64))
    status = flow.solve()
    if status == flow.BAD_COST_RANGE:
        return None
    if status != flow.OPTIMAL:  # pragma: no cover - the dummies make it always feasible
        raise RuntimeError(f"the min-cost flow solver failed: {status}")
    used = np.asarray(flow.flows(n_rows + np.arange(rows.size, dtype=np.int32))) > 0
    out = np.full(n_rows, -1, dtype=np.int64)
    out[rows[used]] = cols[used]
    return out

def cutoff_dummies(n_rows: int, rows: npt.NDArray[np.int64], weights: npt.NDArray[np.float64]
                   ) -> npt.NDArray[np.float64]:
    """Each row's dummy value for ``solve_assignment``: its lowest candidate weight (the
    cutoff: no user outside the list scores more) less a margin far below any score gap, so
    a free listed user of the cutoff score is taken before the dummy, but no better pair is
    displaced to make room for one. This is the relaxation in which every non-candidate edge
    of a row is replaced by one edge of the cutoff's value, and it keeps the solver's
    augmenting paths short (a row can settle on its dummy): at 100K users, r = 4, the
    asymmetric attack solved in 96 s against 624 s with last-resort dummies."""
    # (a fractional row was truncated, a NaN weight made every dummy NaN; ParameterError is a
    # ValueError, as before)
    n_rows = integer(n_rows, "n_rows", at_least=0)
    rows = np.asarray(integer_array(rows, "rows"), dtype=np.int64)
    try:
        weights = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError):
        raise refuse("weights must be numbers", "weights") from None
    if rows.shape != weights.shape or rows.ndim != 1:
        raise refuse(f"rows and weights must be 1-d of one length, got {rows.shape} and "
                     f"{weights.shape}", "weights")
    if rows.size and (int(rows.min()) < 0 or int(rows.max()) >= n_rows):
        raise refuse(f"rows must lie in 0..{n_rows - 1}", "rows")
    if not np.isfinite(weights).all():
        raise refuse("weights must be finite", "weights")
    low = np.full(n_rows, np.inf)
    np.minimum.at(low, rows, weights)
    low = np.where(np.isfinite(low), low, 0.0)
    scale = 1.0 + float(np.abs(weights).max(initial=0.0))
    return low - 1e-9 * scale


#: the most rows (or columns) of an assignment: the solvers index them in 32 bits
MAX_SIDE = 2**31 - 1


def _real_values(value: object, field: str) -> npt.NDArray[np.float64]:
    """``value`` as float64 values, or a ``ParameterError`` naming ``field``."""
    refuse_complex(value, field)
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise refuse(f"{field} must be real numbers", field) from None


def solve_assignment(n_rows: int, n_cols: int, rows: npt.ArrayLike, cols: npt.ArrayLike,
                     weights: npt.ArrayLike, *, dummy: npt.ArrayLike | None = None,
                     batch_edges: int = BATCH_EDGES, solver: str = "lapjv"
                     ) -> tuple[npt.NDArray[np.int64], dict[str, int]]:
    """Maximum-weight one-to-one assignment of ``n_rows`` rows to ``n_cols`` columns over the
    given edges.

    ``dummy``: per row, the value of leaving it unmatched (``cutoff_dummies``); ``None``:
    unmatched only as a last resort (as many rows matched as the edges allow, then the best
    weight).

    Connected components are independent sub-problems: each is solved on its own, small ones
    stacked block-diagonally into one solver call of at most ``batch_edges`` edges (the
    optimum of a block-diagonal problem is the union of the blocks' optima).

    ``solver`` (``resolve_solver``): ``"cost-scaling"`` solves on weights rounded to
    ``COST_STEP`` (total weight within ``n_rows * COST_STEP`` of the optimum; a block whose
    integer costs could overflow goes to LAPJVsp), ``"lapjv"`` on the float weights.

    Returns:
        (``int64[n_rows]`` column of each row, -1 where the edges left it unmatched;
        ``{"components", "largest_component"}`` in rows).
    """
    # (0 or -1 edges a block was accepted; a fractional count compared as it came)
    # (past an int64, 2**64 - 1 was "OverflowError: Python int too large to convert to C long"
    # batching the components)
    batch_edges = integer(batch_edges, "batch_edges", at_least=1, at_most=MAX_COUNT)
    # (NaN or 1.5 rows were NumPy's "expected a sequence of integers", text a UFuncTypeError,
    # None a comparison's TypeError, 2**70 "Maximum allowed dimension exceeded" or an
    # OverflowError)
    n_rows = integer(n_rows, "n_rows", at_least=0, at_most=MAX_SIDE,
                     why="the rows and columns the solvers index")
    n_cols = integer(n_cols, "n_cols", at_least=0, at_most=MAX_SIDE,
                     why="the rows and columns the solvers index")
    # (a fractional endpoint was truncated to a row or column)
    r = np.asarray(integer_array(rows, "rows"), dtype=np.int64)
    c = np.asarray(integer_array(cols, "cols"), dtype=np.int64)
    # (plain ValueErrors naming no argument, and a date among the weights float()'s
    # TypeError)
    w = _real_values(weights, "weights")
    if not (r.shape == c.shape == w.shape) or r.ndim != 1:
        raise refuse(f"rows, cols and weights must be 1-D arrays of one length, got shapes "
                     f"{r.shape}, {c.shape} and {w.shape}", "weights")
    if r.size and (r.min() < 0 or r.max() >= n_rows or c.min() < 0 or c.max() >= n_cols):
        raise refuse("edge endpoints out of range", "rows" if (
            r.min() < 0 or r.max() >= n_rows) else "cols")
    if not np.isfinite(w).all():
        raise refuse("weights must be finite", "weights")
    dm = None if dummy is None else _real_values(dummy, "dummy")
    if dm is not None and (dm.shape != (n_rows,) or not np.isfinite(dm).all()):
        raise refuse(f"dummy needs one finite value per row ({n_rows}), got shape {dm.shape}",
                     "dummy")
    how = resolve_solver(solver)
    out = np.full(n_rows, -1, dtype=np.int64)
    if r.size == 0:
        return out, {"components": 0, "largest_component": 0}
    from scipy.sparse import coo_array
    from scipy.sparse.csgraph import connected_components

    adj = coo_array((np.ones(r.size, dtype=np.int8), (r, n_rows + c)),
                    shape=(n_rows + n_cols, n_rows + n_cols))
    _, labels = connected_components(adj, directed=False)
    row_lab = labels[:n_rows]
    has_edge = np.zeros(n_rows, dtype=bool)
    has_edge[r] = True
    comp_rows = np.bincount(row_lab[has_edge], minlength=labels.max() + 1)
    comp_edges = np.bincount(row_lab[r], minlength=labels.max() + 1)
    size = comp_edges + comp_rows
    # consecutive components share a batch until it holds batch_edges (a giant one alone)
    batch_of = (np.cumsum(size) - size) // max(1, batch_edges)
    edge_batch = batch_of[row_lab[r]]
    order = np.argsort(edge_batch, kind="stable")
    bounds = np.flatnonzero(np.diff(edge_batch[order])) + 1
    local_row = np.full(n_rows, -1, dtype=np.int64)
    local_col = np.full(n_cols, -1, dtype=np.int64)
    for idx in np.split(order, bounds):
        er, ec, ew = r[idx], c[idx], w[idx]
        ur = np.unique(er)
        uc = np.unique(ec)
        local_row[ur] = np.arange(ur.size)
        local_col[uc] = np.arange(uc.size)
        args = (ur.size, uc.size, local_row[er], local_col[ec], ew,
                None if dm is None else dm[ur])
        fast = _solve_batch_cost_scaling(*args) if how == "cost-scaling" else None
        got = fast if fast is not None else _solve_batch(*args)
        out[ur] = np.where(got >= 0, uc[np.maximum(got, 0)], -1)
        local_row[ur] = -1
        local_col[uc] = -1
    used = comp_rows > 0
    return out, {"components": int(used.sum()), "largest_component": int(comp_rows.max())}


# ---------------------------------------------------------------- the attack


def matching_attack(
    site1: npt.ArrayLike,
    queries: npt.ArrayLike,
    true_rows: npt.ArrayLike,
    attacks: Sequence[MatchSetAttack],
    *,
    candidates: int = DEFAULT_CANDIDATES,
    objective: str = "loglik",
    seed: int | Sequence[int] = 0,
    progress: bool = False,
    solver: str = "lapjv",
) -> list[MatchingOutcome]:
    """The one-to-one matching attack of each (fitted) attack, with the random-user rule of the
    same attack on the same traces beside it.

    Args:
        site1: ``[n, r]`` website-1 table.
        queries: ``[Q, r]`` website-2 traces (in the matching setting every user's, Q = n, in
            any order).
        true_rows: ``int64[Q]`` row of each trace's user in ``site1`` (for scoring only; the
            attack never sees it).
        attacks: attacks already fitted on ``site1``.
        candidates: users kept per trace (``MatchingOptions``).
        objective: ``"loglik"`` or ``"posterior"``.
        seed: the relabelling, the tie-breaks and the completion.
        solver: ``"lapjv"`` (default), ``"cost-scaling"`` or ``"auto"`` (``solve_assignment``).
    """
    progress = flag(progress, "progress")
    opts = MatchingOptions("assignment", candidates, objective, solver)
    how = resolve_solver(opts.solver)
    s1 = np.asarray(site1)
    qs = np.asarray(queries)
    truth = np.asarray(true_rows, dtype=np.int64)
    if s1.ndim != 2 or qs.ndim != 2 or s1.shape[1] != qs.shape[1]:
        raise ValueError("site1 and queries must be [rows, weeks] with the same weeks")
    if truth.shape != (qs.shape[0],):
        raise ValueError("true_rows needs one row per query")
    n, n_q = s1.shape[0], qs.shape[0]
    if truth.size and (int(truth.min()) < -1 or int(truth.max()) >= n):
        raise ValueError(f"true_rows must be rows of site1 (0..{n - 1}) or -1 (not there)")
    rng = np.random.default_rng(seed)
    # fresh random labels for users and traces: every later tie-break (candidate priority,
    # the solver's order among equal optima, the completion) is blind to the truth
    user_perm = rng.permutation(n)
    query_perm = rng.permutation(n_q)
    s1p = np.ascontiguousarray(s1[user_perm])
    qsp = np.ascontiguousarray(qs[query_perm])
    inverse = np.empty(n, dtype=np.int64)
    inverse[user_perm] = np.arange(n)
    truth_p = np.where(truth[query_perm] >= 0, inverse[np.maximum(truth[query_perm], 0)], -1)
    safe = np.maximum(truth_p, 0)
    true_masks = np.where(truth_p >= 0, match_masks(s1p[safe], qsp), -1)
    gains = [np.asarray(a.gains(qsp), dtype=np.float64) for a in attacks]
    keep = min(opts.candidates, n)
    plans: list[list[tuple[Any, ...]]] = [[] for _ in attacks]
    sampled: list[list[npt.NDArray[np.bool_]]] = [[] for _ in attacks]
    expected = [0.0 for _ in attacks]
    t0 = time.perf_counter()
    # every user is a query: one join, not a scan of website 1 per chunk (join.py)
    chunks = count_chunks(s1p, qsp, progress=progress)
    with task("matching candidates", n_q, enabled=progress) as advance:
        for lo, hi, counts in chunks:
            for i, g in enumerate(gains):
                scores = subset_scores(g[lo:hi])
                outc = outcomes_from_counts(counts, scores, true_masks[lo:hi])
                sampled[i].append(outc.sample(rng))
                expected[i] += float(outc.expected().sum())
                plans[i].append(_chunk_plan(counts, scores, lo, keep, opts.objective, rng))
            advance(hi - lo)
    all_edges = _resolve(s1p, qsp, plans)
    del plans
    t_cand = time.perf_counter() - t0
    results = []
    for i, a in enumerate(attacks):
        t1 = time.perf_counter()
        edges = all_edges[i]
        assign, info = solve_assignment(
            n_q, n, edges.rows, edges.cols, edges.weights,
            dummy=cutoff_dummies(n_q, edges.rows, edges.weights), solver=how)
        in_graph = int((assign >= 0).sum())
        # completion: traces the graph could not place take the users nobody took, at random
        free_users = np.ones(n, dtype=bool)
        free_users[assign[assign >= 0]] = False
        left = np.flatnonzero(assign < 0)
        pool = rng.permutation(np.flatnonzero(free_users))
        assign[left[: pool.size]] = pool[: left.size]
        correct_p = (assign >= 0) & (assign == truth_p)
        # back to the caller's labels
        assignment = np.full(n_q, -1, dtype=np.int64)
        assignment[query_perm] = np.where(assign >= 0, user_perm[np.maximum(assign, 0)], -1)
        correct = np.zeros(n_q, dtype=bool)
        correct[query_perm] = correct_p
        draws = np.concatenate(sampled[i]) if sampled[i] else np.zeros(0, dtype=bool)
        results.append(MatchingOutcome(
            a.name, assignment, correct, in_graph, int(edges.rows.size), info["components"],
            info["largest_component"],
            float(draws.mean()) if n_q else 0.0, expected[i] / n_q if n_q else 0.0,
            opts.candidates, opts.objective,
            {"candidates": t_cand, "solve": time.perf_counter() - t1}, how))
        all_edges[i] = CandidateEdges(edges.rows[:0], edges.cols[:0], edges.weights[:0])
    return results


__all__ = [
    "BATCH_EDGES",
    "COST_STEP",
    "DEFAULT_CANDIDATES",
    "MATCHINGS",
    "OBJECTIVES",
    "SOLVERS",
    "CandidateEdges",
    "MatchingOptions",
    "MatchingOutcome",
    "candidate_edges",
    "cutoff_dummies",
    "has_cost_scaling",
    "matching_attack",
    "resolve_solver",
    "solve_assignment",
]
