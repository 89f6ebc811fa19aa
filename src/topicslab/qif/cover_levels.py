"""Corollary 1 (Carey et al.) between certified bounds at any number of weeks, by cover levels.

Under the Topics API a week's answer has one of two values for a user (q_in inside the week's
top-k set, q_out outside), so ``max_u P[u, o] = q_out^r ρ^{M(o)}``, ρ = q_in/q_out, with
``M(o)`` the most weeks of the trace o that one user covers (``qif.coverage``). Writing
``U_c = {o : M(o) ≥ c}`` (the traces some user covers in at least c weeks),

    n · Corollary 1 = Σ_o q_out^r ρ^{M(o)} = q_out^r (|T|^r + Σ_{c=1..r} (ρ^c − ρ^{c−1}) |U_c|),

a sum of the level sizes |U_c| with positive weights. Bounds on each |U_c| are therefore
bounds on Corollary 1, and this module computes them from exact counts of unions of *boxes*
(a user's box over weeks Z is Π_{s∈Z} S_u^s):

* ``|U_r|`` is the size of the union of the n users' r-week boxes: **exact**.
* ``U_{r−1}`` is the union over the missed week s of ``V_s = {o : o_{−s} in some user's
  (r−1)-week box}``. A trace of ``U_r`` lies in all r of them, so on the traces of
  ``U_{r−1} ∖ U_r`` the sums ``S_j' = Σ_{|A|=j} |∩_{s∈A} V_s| − C(r, j)|U_r|`` are the binomial
  moments of f(o) = #{s : o ∈ V_s}, and Bonferroni's inequalities give
  ``S1' − S2' ≤ |U_{r−1} ∖ U_r| ≤ S1' − S2' + S3'``.
* ``U_{r−2}``: the same over the pairs E of missed weeks (``G(o)`` sets instead of f), with
  the traces of ``U_{r−1}`` taken out through their known multiplicities: an upper bound from
  ``S1`` and a Bonferroni lower bound from ``S1 − S2``.
* lower levels: monotonicity (``|U_c| ≥ |U_{c+1}|``, ≥ the largest single box union), the
  multiplicity bound ``Σ_{|W|=c} |P_W| |T|^{r−c} ≥ |U_c| + c|U_{c+1}|`` (P_W: the union of the
  users' boxes over the weeks W), the union bound over users and the trace space |T|^r;
  ``|U_1|`` is exact (a trace is outside it when no week's topic is held by anyone).

Every intersection above is a sum over the covered tuples z of the other weeks of a function
of the users H(z) whose box holds z: a product of unions of their week sets or 2-week boxes,
or the number of triples whose three pairs are each covered by a user of H(z). Those are the
exact box sums of ``qif.box_unions`` (one depth-first walk per set of tuple weeks). The
counts are exact integers; only the final weights are rounded, outward. A walk log
(``qif.walk_log``) keeps each finished walk's sums, so a computation of hours resumes where
it stopped.

The brackets use the counts through exact linear programmes over the distribution of how many
sets of a family hold a trace (level r − 1: solved over its bases in rationals; level r − 2:
solved by HiGHS, its dual checked and repaired in rationals, so the bound is certified
whatever the solver's rounding), Hunter's spanning-tree bound and Dawson–Sankoff's.

What is exact: |U_r| and |U_1|, hence Corollary 1 itself for r ≤ 2; the other levels are
bracketed, so the interval's width says how far the levels are from being pinned down. It is
a certified interval (no sampling), next to which the sampled Bayes attacker
(``attacks.bayes``) gives an unbiased estimate with a confidence interval.

Public names:
    cover_levels(profiles, m, *, progress, log) -> CoverLevels
    corollary1_interval(profiles, m, q_in, q_out, *, progress, log) -> (lower, upper)
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from topicslab._checks import flag, number
from topicslab.qif.box_unions import I32, Group, checked_profiles, walk_sums
from topicslab.qif.errors import QIFError, QIFParameterError
from topicslab.qif.walk_log import WalkLog, opened

__all__ = ["CoverLevels", "corollary1_interval", "cover_levels"]


@dataclass(frozen=True)
class CoverLevels:
    """Certified bounds on the level sizes ``|U_c| = #{o : M(o) ≥ c}``, c = 1..r (index c−1),
    exact integers; ``exact`` marks the levels known exactly."""

    users: int
    weeks: int
    topics: int
    lower: tuple[int, ...]
    upper: tuple[int, ...]
    box_walks: int
    #: of the ``box_walks``, how many were read from a walk log (not part of the result)
    logged: int = field(default=0, compare=False)

    @property
    def exact(self) -> tuple[bool, ...]:
        return tuple(lo == hi for lo, hi in zip(self.lower, self.upper, strict=True))

    def widths(self, q_in: float, q_out: float) -> list[float]:
        """Each level's share of the interval's width (fractions of Corollary 1's scale, in
        level order c = 1..r): where the uncertainty comes from."""
        # (NaN was a ValueError of Fraction: "cannot convert NaN to integer ratio")
        qi, qo = (Fraction(q) for q in _probabilities(q_in, q_out))
        if qo == 0:
            return [0.0] * self.weeks
        rho = qi / qo
        return [float((rho**c - rho ** (c - 1)) * (hi - lo) * qo**self.weeks / self.users)
                for c, (lo, hi) in enumerate(zip(self.lower, self.upper, strict=True), 1)]

    def corollary1(self, q_in: float, q_out: float) -> tuple[float, float]:
        """(lower, upper) on Corollary 1's ``(1/n) Σ_o max_u P[u, o]``, rounded outward."""
        qi, qo = (Fraction(q) for q in _probabilities(q_in, q_out))
        r, t = self.weeks, self.topics
        if qo == 0:
            # only traces some user covers in every week have mass: q_in^r |U_r|
            lo = hi = qi**r * self.lower[r - 1]
        else:
            rho = qi / qo
            base = Fraction(t) ** r
            gains = [rho**c - rho ** (c - 1) for c in range(1, r + 1)]
            lo = qo**r * (base + sum(g * x for g, x in zip(gains, self.lower, strict=True)))
            hi = qo**r * (base + sum(g * x for g, x in zip(gains, self.upper, strict=True)))
        lo_f = math.nextafter(float(lo / self.users), -math.inf)
        hi_f = math.nextafter(float(hi / self.users), math.inf)
        return max(0.0, lo_f), min(1.0, hi_f)


def _heaviest_tree(nodes: Sequence[object], weight: dict[tuple, int]) -> int:
    """The largest total weight of a spanning tree of the complete graph on ``nodes``
    (``weight[(a, b)]``, a before b in ``nodes``; Prim). Hunter's bound:
    |∪ A_i| ≤ Σ |A_i| − Σ_{tree} |A_i ∩ A_j| for any spanning tree."""
    if len(nodes) < 2:
        return 0
    index = {v: i for i, v in enumerate(nodes)}

    def w(a: object, b: object) -> int:
        return weight[(a, b)] if index[a] < index[b] else weight[(b, a)]

    inside = [nodes[0]]
    best = {v: w(nodes[0], v) for v in nodes[1:]}
    total = 0
    while best:
        v = max(best, key=lambda x: best[x])
        total += best.pop(v)
        inside.append(v)
        for x in best:
            best[x] = max(best[x], w(v, x))
    return total


def _ds(kappa: int, g: int) -> Fraction:
    """Dawson and Sankoff's pointwise bound: 1[g ≥ 1] ≥ g (2κ + 1 − g) / (κ (κ + 1))."""
    return Fraction(g * (2 * kappa + 1 - g), kappa * (kappa + 1))


def _moment_bounds(moments: Sequence[int], largest: int) -> tuple[int, int]:
    """The sharpest bounds on ``N = Σ_{f ≥ 1} x_f`` over non-negative x_1..x_largest with
    ``Σ_f C(f, j) x_f = moments[j − 1]`` (the binomial moments S_j of a count f ≥ 1 on N
    traces): the linear programme's optimum lies at a basic solution with at most
    ``len(moments)`` non-zero x, so every choice of that many values of f is solved exactly
    (Boros and Prékopa's bounds). Rounded inward to integers (N is one)."""
    j = len(moments)
    values = range(1, largest + 1)
    lo: Fraction | None = None
    hi: Fraction | None = None
    for support in itertools.combinations(values, min(j, largest)):
        rows = [[Fraction(math.comb(f, i + 1)) for f in support] for i in range(j)]
        x = _solve(rows, [Fraction(v) for v in moments])
        if x is None or any(v < 0 for v in x):
            continue
        total = sum(x, Fraction(0))
        lo = total if lo is None or total < lo else lo
        hi = total if hi is None or total > hi else hi
    if lo is None or hi is None:
        raise QIFError("the binomial moments of a level admit no distribution (a counting "
                       "error)")
    return math.ceil(lo), math.floor(hi)


def _solve(rows: list[list[Fraction]], rhs: list[Fraction]) -> list[Fraction] | None:
    """The exact solution of ``rows · x = rhs`` (rows × columns, columns ≤ rows), or None
    when there is none (inconsistent or singular)."""
    n_rows, n_cols = len(rows), len(rows[0])
    a = [[*row, rhs[i]] for i, row in enumerate(rows)]
    pivot_row = 0
    where = [-1] * n_cols
    for col in range(n_cols):
        sel = next((i for i in range(pivot_row, n_rows) if a[i][col] != 0), None)
        if sel is None:
            return None
        a[pivot_row], a[sel] = a[sel], a[pivot_row]
        for i in range(n_rows):
            if i != pivot_row and a[i][col] != 0:
                factor = a[i][col] / a[pivot_row][col]
                a[i] = [vi - factor * vp for vi, vp in zip(a[i], a[pivot_row], strict=True)]
        where[col] = pivot_row
        pivot_row += 1
    if any(a[i][n_cols] != 0 for i in range(pivot_row, n_rows)):
        return None
    return [a[where[c]][n_cols] / a[where[c]][c] for c in range(n_cols)]


def _pair_level_lp(r: int, f_moments: tuple[int, int, int],
                   g_moments: tuple[int, int]) -> tuple[int, int]:
    """Bounds on #{o : M(o) = r − 2} from a linear programme over how the traces spread on
    G (the pairs E of missed weeks whose V_E holds the trace): x_G for those traces (G ≥ 1)
    and y_{f,G} for the traces of U_{r−1} ∖ U_r (f = #{s : o ∈ V_s}, G ≥ C(r,2) − C(r−f,2)),
    subject to the exact moments Σ C(f, j) y (j = 1..3) and Σ G (x + y), Σ C(G, 2)(x + y)
    (U_r taken out). HiGHS solves it in floats; each bound is a dual solution checked and
    repaired in exact arithmetic (weak duality), so it is certified whatever the solver's
    rounding. Returns (0, huge) when the solver fails."""
    from scipy.optimize import linprog

    kk = math.comb(r, 2)
    cols: list[tuple[int, int]] = [(0, g) for g in range(1, kk + 1)]  # (f = 0: new trace)
    for f in range(1, r + 1):
        cols += [(f, g) for g in range(kk - math.comb(r - f, 2), kk + 1)]
    a = [[Fraction(math.comb(f, j)) for f, _ in cols] for j in (1, 2, 3)]
    a += [[Fraction(g) for _, g in cols], [Fraction(math.comb(g, 2)) for _, g in cols]]
    b = [Fraction(v) for v in (*f_moments, *g_moments)]
    cost = [Fraction(1 if f == 0 else 0) for f, _ in cols]
    scale = float(max(max(abs(v) for v in b), Fraction(1)))
    a_f = np.array([[float(v) for v in row] for row in a])
    b_f = np.array([float(v) / scale for v in b])
    g_row = 3  # every column has G ≥ 1 there: the direction that repairs a dual

    def certified_min(c: list[Fraction]) -> Fraction | None:
        res = linprog(np.array([float(v) for v in c]), A_eq=a_f, b_eq=b_f, bounds=(0, None),
                      method="highs")
        if res.status != 0:
            return None
        y = [Fraction(float(v)) for v in res.eqlin.marginals]
        slack_t = Fraction(0)
        for col in range(len(cols)):
            excess = sum((a[i][col] * y[i] for i in range(len(a))), Fraction(0)) - c[col]
            if excess > 0:
                slack_t = max(slack_t, excess / a[g_row][col])
        y[g_row] -= slack_t  # now Aᵀy ≤ c exactly: b·y ≤ min c·x
        return sum((bi * yi for bi, yi in zip(b, y, strict=True)), Fraction(0))

    lo = certified_min(cost)
    neg = certified_min([-v for v in cost])
    return (0 if lo is None else max(0, math.ceil(lo)),
            2**200 if neg is None else math.floor(-neg))


def _ds_at_least(kappa: int, h: int) -> Fraction:
    """The largest ``_ds(κ, G)`` over integers G ≥ h (the parabola peaks at κ and κ + 1)."""
    return _ds(kappa, max(h, kappa)) if h <= kappa + 1 else _ds(kappa, h)


def _new_level_lower(big_s1: int, big_s2: int, kk: int, u_r: int, r: int, s1: int,
                     n1: tuple[int, int]) -> int:
    """Lower bound on #{o : M(o) = r − 2} from the pair family's S1 = Σ G and S2 = Σ C(G, 2),
    taking out the traces of U_r (G = C(r, 2)) and of U_{r−1} ∖ U_r (G ≥ h(f), f ≥ 1,
    Σ f = s1, their number in ``n1``) through the best Dawson–Sankoff κ."""
    best = Fraction(0)
    for kappa in range(1, kk + 1):
        vals = [_ds_at_least(kappa, kk - math.comb(r - f, 2)) for f in range(1, r + 1)]
        slope = max((Fraction(v - vals[0], f) for f, v in enumerate(vals[1:], start=1)),
                    default=Fraction(0))
        rest_u = max((vals[0] - slope) * x + slope * s1 for x in n1)
        low = (Fraction(2 * big_s1, kappa + 1) - Fraction(2 * big_s2, kappa * (kappa + 1))
               - u_r * _ds(kappa, kk) - rest_u)
        best = max(best, low)
    return math.floor(best)


def cover_levels(profiles: npt.ArrayLike, m: int, *, progress: bool = False,
                 log: str | os.PathLike[str] | None = None) -> CoverLevels:
    """Certified bounds on every level size |U_c| of the profiles' r-week traces (module
    docstring); the counts are exact, the brackets come from the counts' moments (linear
    programmes), Hunter's and Dawson–Sankoff's bounds and the levels' nesting.

    ``log``: a walk log file (``qif.walk_log``): each finished walk is recorded there, and a
    re-run given the same file skips the walks it holds (a computation of hours resumes
    where it stopped; the bracket is the same).
    """
    progress = flag(progress, "progress")
    return _cover_levels(*checked_profiles(profiles, m), progress, log)


def _cover_levels(p: I32, m: int, progress: bool,
                  log: str | os.PathLike[str] | None = None) -> CoverLevels:
    """``cover_levels`` of profiles and m that ``checked_profiles`` passed."""
    n = p.shape[0]
    # users in profile order: a node's users then sit close in memory (the counts do not
    # depend on the order)
    p = np.ascontiguousarray(p[np.lexsort(p.reshape(n, -1).T[::-1])])
    with opened(log, p, m) as record:
        return _bracket(p, m, progress, record)


def _bracket(p: I32, m: int, progress: bool, record: WalkLog | None) -> CoverLevels:
    """The levels' brackets from the walks (each taken from ``record`` where it holds it)."""
    from topicslab._atomic import interrupts_deferred
    from topicslab._progress import task

    n, r, k = p.shape
    weeks = list(range(r))
    total = m**r
    comb = math.comb
    walks = 0

    def rest(*out: int) -> list[int]:
        return [w for w in weeks if w not in out]

    # one walk per tuple-week set; how many walks the levels need, for the bar
    plan = 1 + (r + 1 if r == 2 else 0)
    plan += r + comb(r, 2) + comb(r, 3) + comb(r, 4) if r >= 3 else 0
    lower = [0] * (r + 1)
    upper = [0] * (r + 1)
    with task(f"cover levels, {r} weeks", plan, progress) as advance:

        def walk(z: list[int], specs: Sequence[Sequence[Group]]) -> list[int]:
            nonlocal walks
            walks += 1
            lists = [[list(g) for g in spec] for spec in specs]
            out = None if record is None else record.get(z, lists)
            if out is not None:
                pass
            elif record is None:
                out = walk_sums(p, m, z, lists)
            else:
                # a Ctrl-C waits for the walk anyway (the kernel does not look at signals):
                # held back until its sums are logged, or the walk it waited for was lost
                with interrupts_deferred():
                    out = walk_sums(p, m, z, lists)
                    record.add(z, lists, out)
            advance(1)
            return out

        (u_r,) = walk(weeks, [()])
        lower[r] = upper[r] = u_r
        held = [len(np.unique(p[:, s])) for s in weeks]
        u_1 = total - math.prod(m - d for d in held)
        if r >= 2:
            # level r − 1: f(o) = #{s : o ∈ V_s} on U_{r−1} ∖ U_r (U_r lies in every V_s)
            v1 = {s: m * walk(rest(s), [()])[0] for s in weeks}
            v2: dict[tuple[int, int], int] = {}  # |V_s ∩ V_s'|
            pair_plain: dict[tuple[int, int], int] = {}
            if r >= 3:
                for a, b in itertools.combinations(weeks, 2):
                    plain, v2[(a, b)] = walk(rest(a, b), [(), ((a,), (b,))])
                    pair_plain[(a, b)] = plain
            else:
                (v2[(0, 1)],) = walk([], [((0,), (1,))])
            s1 = sum(v1.values()) - r * u_r
            s2 = sum(v2.values()) - comb(r, 2) * u_r
            s3 = 0
            triple_sums: dict[tuple[int, int, int], list[int]] = {}
            if r >= 3:
                for a, b, c in itertools.combinations(weeks, 3):
                    specs = [((a, b, c),), ((a,), (b,)), ((a,), (c,)), ((b,), (c,))]
                    triple_sums[(a, b, c)] = walk(rest(a, b, c), specs)
                    s3 += triple_sums[(a, b, c)][0]
                s3 -= comb(r, 3) * u_r
            # the sharpest bounds S1'..S3' allow (exact for f ≤ 3: three weeks are exact; the
            # Bonferroni and Dawson–Sankoff bounds hold for every distribution it ranges over,
            # so they never do better); Hunter's spanning-tree bound uses more than moments
            moments = [s1, s2, s3] if r >= 3 else [s1, s2]
            new1_lo, new1_hi = _moment_bounds(moments, r) if s1 > 0 else (0, 0)
            new1_hi = min(new1_hi, sum(v1.values()) - _heaviest_tree(weeks, v2) - u_r)
            lower[r - 1] = u_r + new1_lo
            upper[r - 1] = u_r + new1_hi
        if r >= 4:
            # level r − 2: G(o) = #{E, |E| = 2 : o_{−E} in a user's (r−2)-week box}
            kk = comb(r, 2)
            pairs = list(itertools.combinations(weeks, 2))
            vv1 = {e: m * m * v for e, v in pair_plain.items()}
            # |V_E ∩ V_E'| keyed (E, E') with E before E' (pairs of weeks a < b < c < d)
            vv2: dict[tuple[tuple[int, int], tuple[int, int]], int] = {}
            for (a, b, c), sums in triple_sums.items():  # pairs E, E' sharing one week
                vv2[((a, c), (b, c))] = m * sums[1]  # share c: the free weeks a and b
                vv2[((a, b), (b, c))] = m * sums[2]  # share b: a and c
                vv2[((a, b), (a, c))] = m * sums[3]  # share a: b and c
            for quad in itertools.combinations(weeks, 4):  # disjoint pairs
                a, b, c, d = quad
                pairings = [((a, b), (c, d)), ((a, c), (b, d)), ((a, d), (b, c))]
                for (e1, e2), v in zip(pairings, walk(rest(*quad), pairings), strict=True):
                    vv2[(e1, e2)] = v
            big_s1, big_s2 = sum(vv1.values()), sum(vv2.values())
            # on U_{r−1} ∖ U_r, G ≥ h(f) = C(r, 2) − C(r − f, 2) (the pairs meeting F);
            # Σ G ≥ (r−1)·S1' − S2' exactly (h is that quadratic in f)
            new2_hi = big_s1 - kk * u_r - ((r - 1) * s1 - s2)
            hunter = big_s1 - _heaviest_tree(pairs, vv2)  # ≥ |U_{r−2}| (Hunter)
            new2_lo = max(0, _new_level_lower(big_s1, big_s2, kk, u_r, r, s1,
                                              (new1_lo, new1_hi)))
            lp_lo, lp_hi = _pair_level_lp(r, (s1, s2, s3),
                                          (big_s1 - kk * u_r, big_s2 - comb(kk, 2) * u_r))
            new2_lo, new2_hi = max(new2_lo, lp_lo), min(new2_hi, lp_hi)
            lower[r - 2] = lower[r - 1] + new2_lo
            upper[r - 2] = min(total, hunter, upper[r - 1] + max(new2_hi, 0))
        for c in range(r - 3, 1, -1):
            # the users' boxes, at most n·C(r, c)·k^c·(m − k)^{r−c} traces of exact level c
            upper[c] = min(total, upper[c + 1] + n * comb(r, c) * k**c * (m - k) ** (r - c))
            lower[c] = lower[c + 1]
        if r >= 1:
            lower[1] = upper[1] = u_1
        # levels are nested, U_{c+1} ⊆ U_c: lower bounds pass down, upper bounds up (level 1
        # is exact, so a loose upper bound of level 2 gave way to it)
        for c in range(r - 1, 0, -1):
            lower[c] = max(lower[c], lower[c + 1])
        for c in range(1, r + 1):
            upper[c] = min(upper[c], total, upper[c - 1] if c > 1 else total)
    return CoverLevels(n, r, m, tuple(lower[1:]), tuple(upper[1:]), walks,
                       0 if record is None else record.reused)


def corollary1_interval(profiles: npt.ArrayLike, m: int, q_in: float, q_out: float, *,
                        progress: bool = False,
                        log: str | os.PathLike[str] | None = None) -> tuple[float, float]:
    """Certified (lower, upper) on Corollary 1's ``(1/n) Σ_o max_u P[u, o]`` over all |T|^r
    traces, for any r (module docstring; exact when the levels are).

    Args:
        profiles: ``int[n, r, k]`` topic indices in ``0..m-1``, k distinct topics every week.
        m: taxonomy size |T|.
        q_in, q_out: the answer's probability for a topic in / outside the week's set.
        log: a walk log file that makes the computation resumable (``cover_levels``).
    """
    progress = flag(progress, "progress")
    q_in, q_out = _probabilities(q_in, q_out)
    p, m = checked_profiles(profiles, m)
    k = p.shape[2]
    # q_in = 0.5, q_out = 0.01 over k = 3 of m = 12 topics (1.59 a week) gave (9.5, 1.0): a
    # lower bound above the upper one, the sum clipped to 1 on one side only
    if not math.isclose(k * q_in + (m - k) * q_out, 1.0, rel_tol=1e-9, abs_tol=1e-12):
        raise QIFParameterError(
            f"q_in and q_out must be one week's answer distribution over {m:,} topics with "
            f"{k} in the set (k q_in + (m - k) q_out = 1), got {k * q_in + (m - k) * q_out:.6g}",
            field="q_out")
    return _cover_levels(p, m, progress, log).corollary1(q_in, q_out)


def _probabilities(q_in: object, q_out: object) -> tuple[float, float]:
    q_in = number(q_in, "q_in", lo=0, hi=1, error=QIFParameterError)
    q_out = number(q_out, "q_out", lo=0, hi=1, error=QIFParameterError)
    if not q_in >= q_out >= 0:
        raise QIFError(f"need q_in >= q_out >= 0, got q_in {q_in}, q_out {q_out}")
    return q_in, q_out
