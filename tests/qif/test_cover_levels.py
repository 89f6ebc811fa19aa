"""Corollary 1 between certified bounds by cover levels (``qif.cover_levels``): the box-union
walk against brute force, the level brackets and the interval against every trace enumerated,
exactness where the module says so, and the ``reid --bounds --certify`` path."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from topicslab.qif.box_unions import box_sums
from topicslab.qif.cover_levels import corollary1_interval, cover_levels
from topicslab.qif.errors import QIFError


def _population(rng: np.random.Generator, n: int, r: int, m: int, k: int) -> np.ndarray:
    """k distinct topics per user-week; half the users copy one of three base profiles, so
    boxes overlap at every level (the hard case for the brackets)."""
    def one() -> np.ndarray:
        return np.stack([rng.choice(m, k, replace=False) for _ in range(r)])

    bases = [one() for _ in range(3)]
    return np.stack([bases[rng.integers(3)].copy() if rng.random() < 0.5 else one()
                     for _ in range(n)]).astype(np.int32)


def _brute_levels(p: np.ndarray, m: int) -> list[int]:
    """|U_c| = #{o : some user covers ≥ c weeks of o}, c = 1..r, every trace enumerated."""
    n, r, _ = p.shape
    held = np.zeros((n, r, m), dtype=bool)
    for u, s in itertools.product(range(n), range(r)):
        held[u, s, p[u, s]] = True
    hist = np.zeros(r + 1, dtype=np.int64)
    for o in itertools.product(range(m), repeat=r):
        cover = sum(held[:, s, o[s]].astype(int) for s in range(r))
        hist[int(cover.max())] += 1
    return [int(hist[c:].sum()) for c in range(1, r + 1)]


def _brute_c1(p: np.ndarray, m: int, q_in: float, q_out: float) -> float:
    n, r, _ = p.shape
    held = np.zeros((n, r, m), dtype=bool)
    for u, s in itertools.product(range(n), range(r)):
        held[u, s, p[u, s]] = True
    total = 0.0
    for o in itertools.product(range(m), repeat=r):
        best = int(sum(held[:, s, o[s]].astype(int) for s in range(r)).max())
        total += q_in**best * q_out ** (r - best)
    return total / n


def _brute_box_sum(p: np.ndarray, m: int, weeks: list[int], spec: list[tuple[int, ...]]) -> int:
    n = p.shape[0]
    total = 0
    for z in itertools.product(range(m), repeat=len(weeks)):
        holders = [u for u in range(n) if all(z[i] in p[u, w] for i, w in enumerate(weeks))]
        if not holders:
            continue
        value = 1
        for g in spec:
            if len(g) == 1:
                value *= len({int(t) for u in holders for t in p[u, g[0]]})
            elif len(g) == 2:
                value *= len({(int(x), int(y)) for u in holders for x in p[u, g[0]]
                              for y in p[u, g[1]]})
            else:
                a, b, c = g
                ab = {(int(x), int(y)) for u in holders for x in p[u, a] for y in p[u, b]}
                ac = {(int(x), int(y)) for u in holders for x in p[u, a] for y in p[u, c]}
                bc = {(int(x), int(y)) for u in holders for x in p[u, b] for y in p[u, c]}
                value *= sum((x, y) in ab and (x, z2) in ac and (y, z2) in bc
                             for x, y, z2 in itertools.product(range(m), repeat=3))
        total += value
    return total


@pytest.mark.parametrize("seed", range(12))
def test_box_sums_equal_brute_force(seed):
    rng = np.random.default_rng(seed)
    r = int(rng.integers(2, 6))
    m = int(rng.integers(3, 6))
    k = int(rng.integers(1, min(3, m) + 1))
    p = _population(rng, int(rng.integers(1, 30)), r, m, k)
    weeks = [int(w) for w in rng.permutation(r)]
    nz = int(rng.integers(0, r))  # the empty tuple (every user) included
    z, rest = weeks[:nz], weeks[nz:]
    spec: list[tuple[int, ...]] = []
    while rest:
        size = int(rng.integers(1, min(3, len(rest)) + 1))
        spec.append(tuple(rest[:size]))
        rest = rest[size:]
    got = box_sums(p, m, z, [(), spec])
    assert got == [_brute_box_sum(p, m, z, []), _brute_box_sum(p, m, z, spec)]


@pytest.mark.parametrize("seed", range(24))
def test_small_nodes_value_pairs_and_triples_as_brute_force(seed):
    """Few users (nodes of 2-4 users everywhere, valued from their topics' membership sets)
    with a triple and a pair group beside the tuple weeks."""
    rng = np.random.default_rng(500 + seed)
    m = int(rng.integers(3, 6))
    k = int(rng.integers(1, min(3, m) + 1))
    p = _population(rng, int(rng.integers(2, 9)), 5 + int(rng.integers(0, 2)), m, k)
    r = p.shape[1]
    weeks = [int(w) for w in rng.permutation(r)]
    z, triple, pair = weeks[:r - 5], tuple(weeks[r - 5:r - 2]), tuple(weeks[r - 2:])
    specs = [(), [triple], [pair], [triple, pair], [(triple[0],), (pair[1],)]]
    got = box_sums(p, m, z, specs)
    assert got == [_brute_box_sum(p, m, z, list(spec)) for spec in specs]


@pytest.mark.parametrize("seed", range(40))
def test_levels_bracket_the_brute_force_counts(seed):
    rng = np.random.default_rng(100 + seed)
    r = int(rng.integers(1, 7))
    m = int(rng.integers(2, 7 if r <= 5 else 5))
    k = int(rng.integers(1, min(m, 3) + 1))
    p = _population(rng, int(rng.integers(1, 25)), r, m, k)
    levels = cover_levels(p, m)
    exact = _brute_levels(p, m)
    assert all(lo <= x <= hi for lo, x, hi in zip(levels.lower, exact, levels.upper,
                                                  strict=True))
    # the top level (one union of boxes) and level 1 (a trace outside it holds no held
    # topic) are exact; three weeks or fewer, every level (Bonferroni is exact for f ≤ 3)
    assert levels.lower[-1] == exact[-1] and levels.lower[0] == exact[0]
    if r <= 3:
        assert list(levels.lower) == exact == list(levels.upper)
    q_in, q_out = (1 - 0.05) / k + 0.05 / m, 0.05 / m
    lo, hi = levels.corollary1(q_in, q_out)
    c1 = _brute_c1(p, m, q_in, q_out)
    assert lo <= c1 * (1 + 1e-12) and c1 <= hi * (1 + 1e-12)
    if r <= 3:
        assert lo == pytest.approx(c1, rel=1e-12) and hi == pytest.approx(c1, rel=1e-12)
    assert sum(levels.widths(q_in, q_out)) == pytest.approx(hi - lo, rel=1e-9, abs=1e-15)


def test_no_noise_counts_the_traces_covered_in_every_week():
    """p = 0 (q_out = 0): only fully covered traces have mass, and |U_r| is exact."""
    p = np.array([[[0, 1]] * 5, [[0, 1]] * 5, [[2, 3]] * 5], dtype=np.int32)
    lo, hi = corollary1_interval(p, 6, 0.5, 0.0)
    assert lo == pytest.approx(0.5**5 * 2 * 2**5 / 3, rel=1e-15)
    assert hi == pytest.approx(lo, rel=1e-15)


def test_one_user_is_exact_up_to_three_weeks_and_bracketed_beyond():
    """A single user: Corollary 1 is Σ_o P[u, o] = 1 whatever r (one row sums to 1)."""
    p = np.array([[[0, 1, 2]] * 6], dtype=np.int32)
    m, k = 9, 3
    q_in, q_out = (1 - 0.3) / k + 0.3 / m, 0.3 / m
    for r in range(1, 7):
        lo, hi = corollary1_interval(p[:, :r], m, q_in, q_out)
        assert lo <= 1.0 + 1e-12 and hi >= 1.0 - 1e-12
        if r <= 3:
            assert lo == pytest.approx(1.0, rel=1e-12) and hi == pytest.approx(1.0, rel=1e-12)


def test_agrees_with_the_exact_engines_on_a_reference_population():
    """Three weeks: the interval closes on the product channel's exact sum; four weeks: it
    contains the exact best-cover value (``qif.coverage``)."""
    from topicslab.api import Mechanism
    from topicslab.population import generate
    from topicslab.qif.coverage import corollary1_four_weeks
    from topicslab.qif.product_channel import topics_channel

    sets = generate(3000, 4, seed=5)
    mech = Mechanism()
    m = sets.taxonomy.size
    three = sets.sets[:, 1:]
    exact3 = topics_channel(three, m, mech.q_in, mech.q_out).max_sum(np.full(3000, 1 / 3000))
    lo, hi = corollary1_interval(three, m, mech.q_in, mech.q_out)
    assert lo == pytest.approx(exact3, rel=1e-9) and hi == pytest.approx(exact3, rel=1e-9)
    exact4 = corollary1_four_weeks(sets.sets, m, mech.q_in, mech.q_out)
    lo, hi = corollary1_interval(sets.sets, m, mech.q_in, mech.q_out)
    assert lo <= exact4 <= hi
    assert hi - lo < 0.02  # measured 0.3 points here: a regression of the brackets shows


@pytest.mark.parametrize(("profiles", "m", "message"), [
    (np.array([[[0, -1]]]), 4, "outside"),
    (np.array([[[0, 4]]]), 4, "outside"),
    (np.array([[[1, 1]]]), 4, "twice"),
    (np.zeros((0, 2, 2), dtype=int), 4, "non-empty"),
    (np.zeros((2, 2), dtype=int), 4, "non-empty"),
])
def test_refuses_what_it_cannot_bound(profiles, m, message):
    with pytest.raises(QIFError, match=message):
        cover_levels(profiles, m)


def test_box_sums_refuses_bad_weeks():
    p = np.zeros((2, 3, 1), dtype=np.int32)
    with pytest.raises(QIFError, match="distinct"):
        box_sums(p, 2, [0, 0])
    with pytest.raises(QIFError, match="one of the tuple weeks"):
        box_sums(p, 2, [0], [[(0,)]])
    with pytest.raises(QIFError, match="1 to 3"):
        box_sums(p, 2, [0], [[(1, 2, 0, 1)]])


def test_reid_bounds_certify_and_the_cli(tmp_path):
    """Five weeks of the full taxonomy: no exact Corollary 1, so ``certify`` brackets it;
    the sampled Bayes attacker on every user lies inside up to its own interval."""
    from typer.testing import CliRunner

    from topicslab import io as tio
    from topicslab.attacks.bayes import bayes_risk
    from topicslab.attacks.bounds import reid_bounds
    from topicslab.cli import app
    from topicslab.population import generate

    sets = generate(1500, 5, seed=2)
    plain = reid_bounds(sets, weeks=5)
    assert plain.full_information_bound is None and plain.full_information_interval is None
    b = reid_bounds(sets, weeks=5, certify=True)
    lo, hi = b.full_information_interval
    assert 0 < lo <= hi <= 1
    bay = bayes_risk(sets, weeks=5, targets=None, seed=1)
    assert bay.ci95[0] <= hi and lo <= bay.ci95[1]
    # where Corollary 1 is exact, certify adds nothing
    assert reid_bounds(sets, weeks=3, certify=True).full_information_interval is None

    pop = tmp_path / "pop.parquet"
    tio.write_sets(pop, sets)
    out, fig = tmp_path / "b.json", tmp_path / "b.png"
    res = CliRunner().invoke(app, ["reid", "--sets", str(pop), "--weeks", "4..5", "--targets",
                                   "200", "--bounds", "--certify", "--json", str(out),
                                   "--figure", str(fig), "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "C1 certified" in res.output
    data = json.loads(out.read_text())
    assert data["bounds"][0]["full_information_interval"] is None  # r = 4: exact
    assert data["bounds"][1]["full_information_interval"] == pytest.approx([lo, hi])
    assert data["theory"][1]["bayes_interval"] == pytest.approx([lo, hi])
    assert fig.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    res = CliRunner().invoke(app, ["reid", "--sets", str(pop), "--weeks", "5", "--certify",
                                   "--no-progress"])
    assert res.exit_code == 2
    assert "--certify" in res.output and "add --bounds" in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_moment_bounds_bracket_and_pin_down():
    """The LP over the count's distribution: the true N inside, exact when f ≤ 3 and all
    three binomial moments are known."""
    from math import comb

    from topicslab.qif.cover_levels import _moment_bounds

    rng = np.random.default_rng(7)
    for _ in range(30):
        largest = int(rng.integers(1, 8))
        x = rng.integers(0, 20, size=largest)
        moments = [sum(comb(f, j) * int(x[f - 1]) for f in range(1, largest + 1))
                   for j in (1, 2, 3)]
        if moments[0] == 0:
            continue
        lo, hi = _moment_bounds(moments, largest)
        assert lo <= int(x.sum()) <= hi
        if largest <= 3:
            assert lo == hi == int(x.sum())


def test_brackets_respect_the_nesting_of_the_levels():
    """U_{c+1} ⊆ U_c: both ends are non-increasing in c (50 identical users at five weeks had
    an upper bound of level 2 above the exact level 1)."""
    p = np.array([[[0, 1, 2, 3, 4]] * 5] * 50, dtype=np.int32)
    levels = cover_levels(p, 12)
    assert list(levels.upper) == sorted(levels.upper, reverse=True)
    assert list(levels.lower) == sorted(levels.lower, reverse=True)
    assert levels.upper[1] <= levels.lower[0] == levels.upper[0]


def test_the_counts_do_not_depend_on_how_many_threads_share_the_walks():
    """The first-week topics are dealt out to the threads in turn (load balance): every
    count is the same on one thread and on all of them, for the walk and the four-week
    coverage count (m = 13: the threads get unequal shares of the topics)."""
    import numba

    from topicslab.qif.coverage import corollary1_four_weeks

    rng = np.random.default_rng(11)
    p = _population(rng, 300, 5, 13, 3)
    specs = [(), ((0,),), ((0, 1),), ((0, 1, 2),), ((0,), (1, 2))]
    assert box_sums(p, 13, [3, 4], specs) == [_brute_box_sum(p, 13, [3, 4], list(spec))
                                              for spec in specs]
    most = numba.config.NUMBA_NUM_THREADS
    if most < 2:
        pytest.skip("one thread only: nothing to share")
    found = []
    before = numba.get_num_threads()
    try:
        for threads in (1, 2, most):
            numba.set_num_threads(threads)
            found.append((box_sums(p, 13, [3, 4], specs),
                          corollary1_four_weeks(p[:, :4], 13, 0.2, 0.04)))
    finally:
        numba.set_num_threads(before)
    assert found[0] == found[1] == found[2]


def _fast_brute_box_sum(p: np.ndarray, weeks: list[int], spec: list[tuple[int, ...]],
                        m: int) -> int:
    """``_brute_box_sum`` over the covered tuples only (found from the users' boxes) and the
    triples from their pairs: for m in the hundreds."""
    covered: dict[tuple[int, ...], list[int]] = {}
    for u in range(p.shape[0]):
        for z in itertools.product(*(p[u, w].tolist() for w in weeks)):
            covered.setdefault(z, []).append(u)
    total = 0
    for holders in covered.values():
        value = 1
        for g in spec:
            boxes = [set(itertools.product(*(p[u, w].tolist() for w in g[:2])))
                     for u in holders]
            if len(g) == 1:
                value *= len({t for u in holders for t in p[u, g[0]].tolist()})
            elif len(g) == 2:
                value *= len(set().union(*boxes))
            else:
                a, b, c = g
                ab = set().union(*boxes)
                ac = {(x, y) for u in holders for x in p[u, a].tolist() for y in p[u, c].tolist()}
                bc = {(x, y) for u in holders for x in p[u, b].tolist() for y in p[u, c].tolist()}
                value *= sum((x, z2) in ac and (y, z2) in bc for x, y in ab for z2 in range(m))
        total += value
    return total


@pytest.mark.parametrize("seed", range(3))
def test_leaves_of_many_users_holding_over_64_topics_a_week(seed):
    """A leaf's rows (and those of a node one tuple week above the leaves) are bitsets over
    its users' own topics of a week: past 64 of them a row takes several words (m = 300; 40
    users alike in the tuple weeks, apart in the others)."""
    rng = np.random.default_rng(900 + seed)
    m, k, n = 300, 5, 60
    p = np.stack([np.stack([rng.choice(m, k, replace=False) for _ in range(5)])
                  for _ in range(n)]).astype(np.int32)
    p[:40, 3:] = p[0, 3:]  # one covered tuple of the weeks 3, 4 held by 40 users
    mixed = [(), ((0,), (2,)), ((0, 1),), ((1, 2), (0,)), ((0, 1, 2),)]
    singles = [(), ((0,),), ((0,), (2,)), ((0,), (1,), (2,))]  # valued a node above the leaves
    for weeks, specs in (([3, 4], mixed), ([3, 4], singles), ([4, 3], singles), ([], mixed)):
        got = box_sums(p, m, weeks, specs)
        assert got == [_fast_brute_box_sum(p, weeks, list(spec), m) for spec in specs]
