"""The matching attack's solve step (issue 19): scipy's LAPJVsp against other assignment
solvers on the attack's own candidate graph.

    python benchmarks/bench_assignment.py [--users 30000 100000] [--weeks 4]
        [--attacks hamming asymmetric] [--solvers lapjv ortools-assignment ortools-flow lapmod]
        [--step-bits 20] [--seed 0]

For each size: the reference population (``population.generate``, seed 1), both websites'
traces (``api.observe``), the attack fitted on website 1 and, as ``matching_attack`` builds it
(users and traces relabelled at random, loglik objective, C = 32), the candidate graph
(``candidate_edges``) with its cutoff dummies (``cutoff_dummies``). Then the maximum-weight
assignment of that graph by each solver, its time and total weight (chosen edges plus the
dummies of rows left on theirs):

* ``lapjv`` — ``matching.solve_assignment`` (scipy's LAPJVsp per component; the library's);
* ``ortools-assignment`` — OR-Tools' ``SimpleLinearSumAssignment`` (Goldberg–Kennedy cost
  scaling), on the balanced graph below with integer costs;
* ``ortools-flow`` — OR-Tools' ``SimpleMinCostFlow`` (cost scaling) on source → traces →
  users / dummies → sink, integer costs, no doubling;
* ``lapmod`` — ``lap.lapmod`` (the ``lap`` package's sparse LAPJV) on the balanced graph.

Integer costs: weights rounded to multiples of 2^-step_bits, each row's costs shifted by its
best value (so costs are >= 0 and bounded by the row's span / step); a row's dummy is kept
strictly below the row's candidates (``cutoff_dummies``' margin is below a step). The
assignment optimal for the rounded weights is within n × step of the true optimum (each
weight moves by at most step / 2, and two totals of n terms are compared); the script prints
each solver's total minus LAPJVsp's next to that bound.

Balanced graph (OR-Tools' assignment and LAPMOD need as many left as right nodes and a perfect
matching): left = traces + one slack per user, right = users + one dummy per trace; trace i
reaches its candidates and its dummy, user j's slack reaches user j and, for every edge
(i, j), trace i's dummy, both at cost 0. Its perfect matchings are the trace matchings plus
zero-cost slack arcs, so its optimum is the trace problem's.

The OR-Tools and ``lap`` packages are not dependencies of topicslab: install them apart
(``pip install --target DIR ortools lap``; ``PYTHONPATH=src:DIR``); a solver whose package is
missing is skipped with a note.
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np
import numpy.typing as npt

from topicslab.api import Mechanism, observe
from topicslab.attacks import make_attack
from topicslab.attacks.engine import MatchSetCounter
from topicslab.attacks.matching import (
    _integer_costs,
    candidate_edges,
    cutoff_dummies,
    solve_assignment,
)
from topicslab.population import generate

Arr = npt.NDArray[np.int64]


def balanced(n: int, rows: Arr, cols: Arr, cost: Arr, dcost: Arr
             ) -> tuple[Arr, Arr, Arr]:
    own = np.arange(n, dtype=np.int64)
    left = np.concatenate([rows, own, n + cols, n + own])
    right = np.concatenate([cols, n + own, n + rows, own])
    c = np.concatenate([cost, dcost, np.zeros(rows.size + n, dtype=np.int64)])
    return left, right, c


def ortools_assignment(n: int, rows: Arr, cols: Arr, cost: Arr, dcost: Arr) -> Arr:
    from ortools.graph.python.linear_sum_assignment import SimpleLinearSumAssignment

    left, right, c = balanced(n, rows, cols, cost, dcost)
    lsa = SimpleLinearSumAssignment()
    lsa.add_arcs_with_cost(left.astype(np.int32), right.astype(np.int32), c)
    if lsa.solve() != lsa.OPTIMAL:
        raise RuntimeError("OR-Tools assignment: not optimal")
    mate = np.fromiter((lsa.right_mate(i) for i in range(n)), dtype=np.int64, count=n)
    return np.where(mate < n, mate, -1)


def ortools_flow(n: int, rows: Arr, cols: Arr, cost: Arr, dcost: Arr) -> Arr:
    from ortools.graph.python.min_cost_flow import SimpleMinCostFlow

    # nodes: source 0, traces 1..n, users n+1..2n, sink 2n+1 (a trace's dummy: trace -> sink)
    src, sink = 0, 2 * n + 1
    tr = 1 + np.arange(n, dtype=np.int64)
    tails = np.concatenate([np.zeros(n, np.int64), 1 + rows, tr, n + tr])
    heads = np.concatenate([tr, n + 1 + cols, np.full(n, sink), np.full(n, sink)])
    costs = np.concatenate([np.zeros(n, np.int64), cost, dcost, np.zeros(n, np.int64)])
    f = SimpleMinCostFlow()
    f.add_arcs_with_capacity_and_unit_cost(tails.astype(np.int32), heads.astype(np.int32),
                                           np.ones(tails.size, np.int64), costs)
    f.set_nodes_supplies(np.array([src, sink], np.int32), np.array([n, -n], np.int64))
    if f.solve() != f.OPTIMAL:
        raise RuntimeError("OR-Tools min-cost flow: not optimal")
    edge_arcs = n + np.arange(rows.size, dtype=np.int32)
    used = np.asarray(f.flows(edge_arcs)) > 0
    out = np.full(n, -1, dtype=np.int64)
    out[rows[used]] = cols[used]
    return out


def lapmod(n: int, rows: Arr, cols: Arr, cost: Arr, dcost: Arr, step: float) -> Arr:
    import lap

    left, right, c = balanced(n, rows, cols, cost, dcost)
    o = np.lexsort((right, left))
    first = np.searchsorted(left[o], np.arange(2 * n + 1))
    # lap.lapmod takes float costs below 1e6: back to weight units
    _, x, _ = lap.lapmod(2 * n, c[o].astype(np.float64) * step, first, right[o])
    mate = np.asarray(x[:n], dtype=np.int64)
    return np.where(mate < n, mate, -1)


def solve(solver: str, n: int, rows: Arr, cols: Arr, w: npt.NDArray[np.float64],
          d: npt.NDArray[np.float64], cost: Arr, dcost: Arr, step: float) -> Arr:
    """Column of each row (-1: its dummy) by ``solver``."""
    if solver == "lapjv":
        return solve_assignment(n, n, rows, cols, w, dummy=d)[0]
    if solver == "ortools-assignment":
        return ortools_assignment(n, rows, cols, cost, dcost)
    if solver == "ortools-flow":
        return ortools_flow(n, rows, cols, cost, dcost)
    if solver == "lapmod":
        return lapmod(n, rows, cols, cost, dcost, step)
    raise SystemExit(f"unknown solver {solver!r}")


def total(assign: Arr, rows: Arr, cols: Arr, w: npt.NDArray[np.float64],
          dummy: npt.NDArray[np.float64]) -> float:
    """Total weight: each row's chosen edge, or its dummy."""
    val = np.where(assign < 0, dummy, np.nan)
    sel = assign[rows] == cols
    val[rows[sel]] = w[sel]
    if np.isnan(val).any():
        raise RuntimeError("a row is matched to a column that is not among its edges")
    if np.unique(assign[assign >= 0]).size != int((assign >= 0).sum()):
        raise RuntimeError("a column is taken twice")
    return float(val.sum())


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, nargs="+", default=[30_000, 100_000])
    ap.add_argument("--weeks", type=int, default=4)
    ap.add_argument("--attacks", nargs="+", default=["hamming", "asymmetric"])
    ap.add_argument("--solvers", nargs="+",
                    default=["lapjv", "ortools-assignment", "ortools-flow", "lapmod"])
    ap.add_argument("--step-bits", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    step = 2.0 ** -args.step_bits
    r = args.weeks
    for n in args.users:
        sets = generate(n, r, seed=1)
        mech = Mechanism(k=sets.k, taxonomy=sets.taxonomy)
        tr = observe(sets.sets, [0, 1], weeks=r, seed=args.seed + 7, mechanism=mech,
                     user_ids=sets.user_ids)
        site1, site2 = tr[0], tr[1]
        del sets, tr
        rng = np.random.default_rng([args.seed, r, n])
        s1p = np.ascontiguousarray(site1[rng.permutation(n)])
        qsp = np.ascontiguousarray(site2[rng.permutation(n)])
        counter = MatchSetCounter(s1p)
        for name in args.attacks:
            a = make_attack(name)
            a.fit(site1, mech)
            e = candidate_edges(s1p, qsp, np.asarray(a.gains(qsp), dtype=np.float64),
                                candidates=32, objective="loglik", rng=rng, counter=counter)
            rows, cols, w = e.rows, e.cols, e.weights
            d = cutoff_dummies(n, rows, w)
            cost, dcost = _integer_costs(n, rows, w, d, step)  # the library's own rounding
            ref = None
            for s in args.solvers:
                t0 = time.perf_counter()
                try:
                    got = solve(s, n, rows, cols, w, d, cost, dcost, step)
                except ImportError as exc:
                    print(f"  {s}: skipped ({exc})", flush=True)
                    continue
                sec = time.perf_counter() - t0
                tot = total(got, rows, cols, w, d)
                ref = tot if ref is None else ref
                print(f"n={n:,} r={r} {name:10s} edges {rows.size:,} {s:18s} {sec:8.2f} s"
                      f"  total {tot:.6f}  minus first {tot - ref:+.2e} (bound "
                      f"{n * step:.2e})  on dummy {(got < 0).sum():,}", flush=True)
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6:.2f} GB")


if __name__ == "__main__":
    main()
