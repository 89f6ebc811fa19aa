"""The matching-setting attack (topicslab.attacks.matching): the theory of the matching setting
against brute force over every permutation, the sparse solver against
``scipy.optimize.linear_sum_assignment``, the candidate graph against dense scores, honest
ties, and ``reid --setting matching --matching assignment``."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment
from typer.testing import CliRunner

from topicslab.attacks import (
    AsymmetricAttack,
    HammingAttack,
    MatchingOptions,
    candidate_edges,
    cutoff_dummies,
    full_information_bound,
    matching_attack,
    matching_bound,
    measure_risk_traces,
    optimal_matching_accuracy,
    solve_assignment,
)
from topicslab.attacks import matching as matching_mod
from topicslab.attacks.matching import COST_STEP, resolve_solver
from topicslab.errors import InputError, ParameterError

# ---------------------------------------------------------------- brute force over permutations


def _perms(n):
    return np.array(list(itertools.permutations(range(n))), dtype=np.int64)


def _posterior_marginals(p, obs, perms):
    """``M[i, j] = P(π(i) = j | O)`` and ``P(O)`` under a uniform permutation, by enumerating
    every permutation (item i's trace ``obs[i]`` is user ``π(i)``'s)."""
    n = p.shape[0]
    like = p[perms, obs[None, :]].prod(axis=1)  # P(O | π)
    joint = np.zeros((n, n))
    for k in range(perms.shape[0]):
        joint[np.arange(n), perms[k]] += like[k]
    total = like.sum()
    return joint / max(total, 1e-300), total / perms.shape[0]


def _dense(weights):
    rows, cols = np.nonzero(np.ones_like(weights, dtype=bool))
    return rows, cols, weights[rows, cols]


def _assignment_value(weights, solver="lapjv"):
    got, _ = solve_assignment(*weights.shape, *_dense(weights), solver=solver)
    assert (got >= 0).all() and np.unique(got).size == got.size
    return weights[np.arange(weights.shape[0]), got].sum(), got


def _one_to_one_accuracy(p):
    """Expected share of correct pairs of the best one-to-one guess, every observation
    enumerated (the guess maximises Σ_i P(π(i) = σ(i) | O) over permutations σ)."""
    n, m = p.shape
    perms = _perms(n)
    total = 0.0
    for obs in itertools.product(range(m), repeat=n):
        marg, prob = _posterior_marginals(p, np.asarray(obs), perms)
        if prob == 0:
            continue
        total += prob * marg[np.arange(n)[None, :], perms].sum(axis=1).max()
    return total / n


def _random_p(rng, n, m, conc):
    return rng.dirichlet(np.full(m, conc), size=n)


@pytest.mark.parametrize("n", [3, 5, 7])
def test_bayes_optimal_one_to_one_matching_is_the_assignment_of_posterior_marginals(n):
    # the expected number of correct pairs of a one-to-one guess σ is Σ_i P(π(i) = σ(i) | O):
    # the maximum-weight assignment on the posterior marginals is the best one-to-one guess
    rng = np.random.default_rng(n)
    perms = _perms(n)
    for _ in range(3):
        p = _random_p(rng, n, 3, 0.5)
        obs = rng.integers(0, 3, n)
        marg, _ = _posterior_marginals(p, obs, perms)
        value, got = _assignment_value(marg)
        brute = marg[np.arange(n)[None, :], perms].sum(axis=1)
        assert value == pytest.approx(brute.max(), rel=1e-12)
        assert np.isclose(marg[np.arange(n), got].sum(), brute.max())


@pytest.mark.parametrize("n", [4, 7])
def test_loglik_assignment_is_the_most_likely_permutation(n):
    # Σ_i log P[σ(i), o_i] is the log-likelihood of σ: its assignment is the MAP permutation;
    # a constant per trace (an attack's C(o), Theorem 1) does not move it
    rng = np.random.default_rng(10 + n)
    perms = _perms(n)
    for _ in range(3):
        p = _random_p(rng, n, 4, 1.0)
        obs = rng.integers(0, 4, n)
        loglik = np.log(p[:, obs]).T  # [item, user]
        shifted = loglik + rng.normal(size=(n, 1)) * 5
        like = p[perms, obs[None, :]].prod(axis=1)
        for w in (loglik, shifted):
            _, got = _assignment_value(w)
            assert p[got, obs].prod() == pytest.approx(like.max(), rel=1e-12)


def test_matching_setting_relations_exact():
    # per observation the best one-to-one guess is a per-item guess, so its accuracy is at
    # most the per-item optimum; that optimum is at least the random-user Bayes accuracy
    # (Lemma 5: the per-item random-user rule reaches it) and at most Lemma 4's bound
    rng = np.random.default_rng(3)
    for n, m in [(2, 3), (3, 2), (3, 3), (4, 2), (4, 3)]:
        for conc in (0.3, 1.0, 3.0):
            p = _random_p(rng, n, m, conc)
            one = _one_to_one_accuracy(p)
            per_item = optimal_matching_accuracy(p)
            assert one <= per_item + 1e-12
            assert full_information_bound(p) <= per_item + 1e-12
            assert per_item <= matching_bound(p) + 1e-12


def test_one_to_one_can_fall_below_the_random_user_bayes_accuracy():
    # the one-to-one constraint does not help a Bayes-optimal attacker: with n = 3 users and
    # 2 representations the best one-to-one guess is below Corollary 1, while the per-item
    # rule (Lemma 5) reaches it; with n = 2 a one-to-one guess loses nothing
    p = np.array([[0.9, 0.1], [0.5, 0.5], [0.2, 0.8]])
    one = _one_to_one_accuracy(p)
    assert one < full_information_bound(p) - 0.01
    assert optimal_matching_accuracy(p) >= full_information_bound(p) - 1e-12
    q = np.array([[0.7, 0.3], [0.4, 0.6]])
    assert _one_to_one_accuracy(q) == pytest.approx(optimal_matching_accuracy(q), abs=1e-12)


def test_k_anonymous_representation_caps_matching_at_one_over_k():
    # one-hot rows, every representation shared by exactly k users: items of one
    # representation are exchangeable, any guess among them gets one of them right in
    # expectation, so the accuracy is (number of representations)/n = 1/k
    k = 3
    p = np.zeros((6, 2))
    p[:3, 0] = 1
    p[3:, 1] = 1
    assert _one_to_one_accuracy(p) == pytest.approx(1 / k, abs=1e-12)
    assert optimal_matching_accuracy(p) == pytest.approx(1 / k, abs=1e-12)


# ---------------------------------------------------------------- the sparse solver


@pytest.fixture(params=["lapjv", "cost-scaling"])
def solver(request):
    """Each solver of ``solve_assignment`` (cost-scaling skipped without OR-Tools)."""
    if request.param == "cost-scaling":
        pytest.importorskip("ortools.graph.python.min_cost_flow")
    return request.param


def _tol(solver, n_rows):
    """How far the solver's total weight may be from the optimum: the cost-scaling solver
    optimises weights rounded to COST_STEP (n_rows · COST_STEP in all)."""
    return n_rows * COST_STEP + 1e-9 if solver == "cost-scaling" else 1e-9


@pytest.mark.parametrize("shape,levels", [((30, 30), None), ((25, 40), None), ((40, 40), 3),
                                          ((12, 12), 1)])
def test_solver_equals_linear_sum_assignment_dense(shape, levels, solver):
    rng = np.random.default_rng(sum(shape))
    for _ in range(3):
        if levels is None:
            w = rng.normal(size=shape)
        else:  # many ties: few distinct integer weights (levels = 1: every weight equal)
            w = rng.integers(0, levels, size=shape).astype(float)
        value, _ = _assignment_value(w, solver)
        r, c = linear_sum_assignment(w, maximize=True)
        assert value == pytest.approx(w[r, c].sum(), abs=_tol(solver, shape[0]))
        if levels is not None:  # integer weights are on the grid: exact
            assert value == w[r, c].sum()


@pytest.mark.parametrize("density", [0.05, 0.2, 0.5])
def test_solver_equals_linear_sum_assignment_sparse(density, solver):
    # random sparse graphs (rows with one edge or none, several components), with and
    # without dummies: the same total weight as the dense optimum where missing edges (and
    # each row's dummy, as an extra private column) are worth far less / their value
    rng = np.random.default_rng(int(density * 100))
    for trial in range(4):
        n_rows, n_cols = rng.integers(5, 40), rng.integers(5, 40)
        mask = rng.random((n_rows, n_cols)) < density
        mask[0] = False
        mask[0, rng.integers(n_cols)] = True  # a row with a single edge
        if trial % 2:
            w = rng.normal(size=(n_rows, n_cols))
        else:
            w = rng.integers(-2, 2, size=(n_rows, n_cols)).astype(float)  # equal weights
        rows, cols = np.nonzero(mask)
        dummy = rng.normal(size=n_rows) - 1.0
        for dm in (None, dummy, cutoff_dummies(n_rows, rows, w[rows, cols])):
            got, _ = solve_assignment(n_rows, n_cols, rows, cols, w[rows, cols], dummy=dm,
                                      solver=solver)
            taken = got[got >= 0]
            assert np.unique(taken).size == taken.size
            assert mask[np.flatnonzero(got >= 0), taken].all()
            # dense reference: columns + one private dummy column per row
            off = -1e6 if dm is None else -1e9
            full = np.full((n_rows, n_cols + n_rows), off)
            full[rows, cols] = w[rows, cols]
            if dm is None:
                # last resort: as many rows matched as possible first
                full[rows, cols] += 1e4
                np.fill_diagonal(full[:, n_cols:], 0.0)
            else:
                np.fill_diagonal(full[:, n_cols:], dm)
            r, c = linear_sum_assignment(full, maximize=True)
            best = full[r, c].sum()
            mine = np.where(got >= 0, full[np.arange(n_rows), np.maximum(got, 0)],
                            full[np.arange(n_rows), n_cols + np.arange(n_rows)]).sum()
            assert mine == pytest.approx(best, abs=_tol(solver, n_rows) + 1e-6)


def test_solver_components_and_batches(solver):
    # block-diagonal problem: components solved apart and batched give the dense optimum
    rng = np.random.default_rng(5)
    sizes = [1, 7, 3, 12, 2, 9]
    n = sum(sizes)
    w = np.full((n, n), -1e6)
    lo = 0
    for s in sizes:
        w[lo:lo + s, lo:lo + s] = rng.normal(size=(s, s))
        lo += s
    rows, cols = np.nonzero(w > -1e6)
    r, c = linear_sum_assignment(w, maximize=True)
    for batch in (1, 40, 1 << 20):
        got, info = solve_assignment(n, n, rows, cols, w[rows, cols], batch_edges=batch,
                                     solver=solver)
        assert info == {"components": len(sizes), "largest_component": max(sizes)}
        assert w[np.arange(n), got].sum() == pytest.approx(w[r, c].sum(),
                                                            abs=_tol(solver, n))


def test_solver_infeasible_graph_leaves_rows_unmatched(solver):
    # rows 0-2 all want column 0 only: no full matching exists; the dummies keep it solvable
    rows = np.array([0, 1, 2, 3, 3])
    cols = np.array([0, 0, 0, 1, 2])
    w = np.array([3.0, 2.0, 1.0, 1.0, 2.0])
    got, _ = solve_assignment(4, 3, rows, cols, w, solver=solver)
    assert got[0] == 0 and got[1] == -1 and got[2] == -1 and got[3] == 2
    # a dummy worth more than an edge is taken instead of it
    got, _ = solve_assignment(4, 3, rows, cols, w, dummy=np.array([0.0, 0.0, 0.0, 1.5]),
                              solver=solver)
    assert got.tolist() == [0, -1, -1, 2]
    got, _ = solve_assignment(4, 3, rows, cols, w, dummy=np.array([5.0, 0.0, 0.0, 0.0]),
                              solver=solver)
    assert got[0] == -1 and got[1] == 0
    # the cutoff dummies' margin is far below the integer grid: a free listed user of the
    # cutoff score is still taken before the dummy (rows 0-2 each lose only the margin on
    # their dummy, so which one takes column 0 is a tie)
    got, _ = solve_assignment(4, 3, rows, cols, w, dummy=cutoff_dummies(4, rows, w),
                              solver=solver)
    assert sorted(got[:3].tolist()) == [-1, -1, 0] and got[3] == 2
    one = np.array([0, 1])
    got, _ = solve_assignment(2, 2, one, one, np.array([1.0, 1.0]),
                              dummy=cutoff_dummies(2, one, np.array([1.0, 1.0])), solver=solver)
    assert got.tolist() == [0, 1]
    empty, info = solve_assignment(3, 3, [], [], [], solver=solver)
    assert (empty == -1).all() and info["components"] == 0
    with pytest.raises(ValueError):
        solve_assignment(2, 2, [0], [5], [1.0], solver=solver)
    with pytest.raises(ValueError):
        solve_assignment(2, 2, [0], [1], [np.nan], solver=solver)


def test_missing_cost_scaling_solver(monkeypatch):
    monkeypatch.setattr(matching_mod, "has_cost_scaling", lambda: False)
    assert resolve_solver("auto") == "lapjv"
    assert MatchingOptions("assignment", solver="auto").solver == "auto"
    with pytest.raises(InputError) as exc:
        MatchingOptions("assignment", solver="cost-scaling")
    assert "pip install" in str(exc.value) and "\n" not in str(exc.value)
    with pytest.raises(InputError):
        solve_assignment(2, 2, [0], [1], [1.0], solver="cost-scaling")
    got, _ = solve_assignment(2, 2, [0, 1], [1, 0], [1.0, 2.0], solver="auto")
    assert got.tolist() == [1, 0]
    with pytest.raises(ParameterError) as perr:
        MatchingOptions("assignment", solver="hungarian")
    assert perr.value.field == "solver"


def test_cost_scaling_is_the_auto_solver_when_installed():
    pytest.importorskip("ortools.graph.python.min_cost_flow")
    assert resolve_solver("auto") == "cost-scaling"


def test_cutoff_dummies_keep_the_complete_graph_exact(solver):
    # a complete graph: the dummies (just below each row's cutoff) are never worth taking
    rng = np.random.default_rng(2)
    w = rng.integers(0, 4, size=(20, 20)).astype(float)
    rows, cols, ww = _dense(w)
    got, _ = solve_assignment(20, 20, rows, cols, ww, dummy=cutoff_dummies(20, rows, ww),
                              solver=solver)
    r, c = linear_sum_assignment(w, maximize=True)
    assert (got >= 0).all()
    assert w[np.arange(20), got].sum() == pytest.approx(w[r, c].sum())


# ---------------------------------------------------------------- candidates and the attack


def _traces(rng, n, r, cats, keep=0.6):
    s1 = rng.integers(0, cats, (n, r)).astype(np.int16)
    s2 = np.where(rng.random((n, r)) < keep, s1, rng.integers(0, cats, (n, r))).astype(np.int16)
    s2[rng.random((n, r)) < 0.05] = -1
    return s1, s2


def _dense_scores(s1, s2, gains):
    agree = (s1[None, :, :] == s2[:, None, :]) & (s2[:, None, :] >= 0)
    return (agree * gains[:, None, :]).sum(axis=2)


@pytest.mark.parametrize("attack", ["hamming", "asymmetric"])
def test_candidates_are_the_top_scores(attack):
    rng = np.random.default_rng(4)
    n, r = 80, 4
    s1, s2 = _traces(rng, n, r, 5)
    a = HammingAttack() if attack == "hamming" else AsymmetricAttack(popularity=np.full(469, 0.01))
    a.fit(s1)
    g = a.gains(s2)
    dense = _dense_scores(s1, s2, g)
    for keep in (1, 6, 200):
        e = candidate_edges(s1, s2, g, candidates=keep, rng=rng)
        assert np.allclose(dense[e.rows, e.cols], e.weights)
        want = min(keep, n)
        assert np.bincount(e.rows, minlength=n).tolist() == [want] * n
        for q in range(n):
            users = e.cols[e.rows == q]
            assert np.unique(users).size == want
            assert set(np.flatnonzero(dense[q] > dense[q, users].min())) <= set(users.tolist())
    post = candidate_edges(s1, s2, g, candidates=n, objective="posterior", rng=rng)
    soft = np.exp(dense - dense.max(axis=1, keepdims=True))
    soft /= soft.sum(axis=1, keepdims=True)
    assert np.allclose(post.weights, soft[post.rows, post.cols])


def test_attack_with_every_candidate_is_the_exact_assignment():
    rng = np.random.default_rng(6)
    n = 60
    s1, s2 = _traces(rng, n, 4, 4)
    a = HammingAttack()
    a.fit(s1)
    truth = rng.permutation(n)
    qs = s2[truth]  # trace i is user truth[i]'s
    dense = _dense_scores(s1, qs, a.gains(qs))
    r, c = linear_sum_assignment(dense, maximize=True)
    (out,) = matching_attack(s1, qs, truth, [a], candidates=n, seed=1)
    assert out.in_graph == n and np.unique(out.assignment).size == n
    assert dense[np.arange(n), out.assignment].sum() == pytest.approx(dense[r, c].sum())
    assert out.correct.tolist() == (out.assignment == truth).tolist()


def test_ties_are_blind_to_the_truth():
    # every user identical on both sites: every assignment is optimal, so an honest attacker
    # gets about one pair right (the fixed points of a random permutation), never n
    n = 300
    s1 = np.zeros((n, 3), dtype=np.int16)
    a = HammingAttack()
    a.fit(s1)
    hits = [matching_attack(s1, s1, np.arange(n), [a], candidates=8, seed=s)[0].correct.sum()
            for s in range(5)]
    assert sum(hits) < 25
    assert all(o.random_user_rate < 0.05 for o in matching_attack(
        s1, s1, np.arange(n), [a], candidates=8, seed=9))


def test_unique_traces_are_all_matched():
    # distinct traces copied to website 2: the one-to-one attack names everyone
    n = 200
    s1 = np.stack([np.arange(n) % 20, np.arange(n) // 20], axis=1).astype(np.int16)
    a = HammingAttack()
    a.fit(s1)
    perm = np.random.default_rng(0).permutation(n)
    (out,) = matching_attack(s1, s1[perm], perm, [a], candidates=4, seed=2)
    assert out.rate == 1.0 and out.random_user_rate == 1.0


def test_options_are_checked():
    assert MatchingOptions().matching == "per-item"
    for bad in (dict(matching="greedy"), dict(candidates=0), dict(objective="map")):
        with pytest.raises(ParameterError) as exc:
            MatchingOptions(**bad)
        assert exc.value.field == next(iter(bad))


def test_protocol_runs_the_assignment_in_the_matching_setting():
    rng = np.random.default_rng(7)
    s1, s2 = _traces(rng, 150, 3, 6)
    res = measure_risk_traces(s1, s2, attacks=["hamming"], setting="matching",
                              matching=MatchingOptions("assignment", 8), progress=False)
    d = res.to_dict()["attacks"]["hamming"]["matching"]
    assert d["traces"] == 150 and d["candidates"] == 8
    # the random-user figure beside it is the per-item rule on the same traces
    assert d["random_user_expected_mean"] == pytest.approx(
        res.attacks["hamming"].expected_risk_mean)
    plain = measure_risk_traces(s1, s2, attacks=["hamming"], setting="matching",
                                progress=False).to_dict()["attacks"]["hamming"]
    assert "matching" not in plain
    with pytest.raises(InputError):
        measure_risk_traces(s1, s2, attacks=["hamming"], targets=10,
                            matching=MatchingOptions("assignment"), progress=False)


# ---------------------------------------------------------------- the command line


@pytest.fixture(scope="module")
def pop(tmp_path_factory):
    from topicslab import io as tio
    from topicslab.population import generate

    d = tmp_path_factory.mktemp("matching")
    path = d / "pop.parquet"
    tio.write_sets(path, generate(800, 3, seed=4))
    return path, d


def test_cli_matching_assignment(pop):
    from topicslab.cli import app

    path, d = pop
    out = d / "m.json"
    res = CliRunner().invoke(app, [
        "reid", "--sets", str(path), "--weeks", "3", "--trials", "1", "--setting", "matching",
        "--matching", "assignment", "--candidates", "8", "--objective", "posterior",
        "--json", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "1-to-1" in res.output
    data = json.loads(out.read_text())
    for name in ("hamming", "asymmetric"):
        m = data["attacks"][name]["matching"]
        assert m["traces"] == 800 and m["objective"] == "posterior"
        assert 0.0 <= m["rate_mean"] <= 1.0


@pytest.mark.parametrize("solver", ["cost-scaling", "auto"])
def test_cli_matching_solver(pop, solver, monkeypatch):
    """--solver reaches the assignment: both solvers give a one-to-one rate (the same total
    weight; rates may differ among tied optima), and cost-scaling without OR-Tools is a
    one-line refusal naming --solver."""
    from topicslab.attacks import matching
    from topicslab.cli import app

    path, d = pop
    args = ["reid", "--sets", str(path), "--weeks", "3", "--trials", "1", "--setting",
            "matching", "--matching", "assignment", "--candidates", "8", "--no-progress",
            "--attack", "asymmetric", "--solver", solver]
    if matching.has_cost_scaling():
        out = d / f"s-{solver}.json"
        res = CliRunner().invoke(app, [*args, "--json", str(out)])
        assert res.exit_code == 0, res.output
        m = json.loads(out.read_text())["attacks"]["asymmetric"]["matching"]
        assert m["traces"] == 800 and 0.0 <= m["rate_mean"] <= 1.0
    monkeypatch.setattr(matching, "has_cost_scaling", lambda: False)
    res = CliRunner().invoke(app, args)
    if solver == "auto":  # falls back to LAPJVsp without a word
        assert res.exit_code == 0, res.output
    else:
        assert res.exit_code == 2 and "--solver" in res.output and "pip install" in res.output
        assert "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1


@pytest.mark.parametrize("args,field", [
    (["--setting", "matching", "--matching", "greedy"], "--matching"),
    (["--setting", "matching", "--matching", "assignment", "--candidates", "0"],
     "--candidates"),
    (["--setting", "matching", "--matching", "assignment", "--objective", "map"],
     "--objective"),
    (["--matching", "assignment"], "--matching"),
    (["--setting", "matching", "--candidates", "8"], "--candidates"),
    (["--setting", "matching", "--matching", "assignment", "--solver", "hungarian"],
     "--solver"),
    (["--setting", "matching", "--solver", "auto"], "--solver"),
])
def test_cli_bad_matching_options(pop, args, field):
    from topicslab.cli import app

    path, _ = pop
    res = CliRunner().invoke(app, ["reid", "--sets", str(path), "--weeks", "2",
                                   "--no-progress", *args])
    assert res.exit_code != 0
    assert field in res.output and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) <= 2


# ------------------------------------------- Carey et al. Lemma 6 (Lemma 8: test_bounds.py)


def _lemma6_matrix(pairs: int) -> np.ndarray:
    """Lemma 6's construction: users 2j and 2j+1 each have a private representation (u) and
    share an ambiguous one (a_j), each with probability 1/2; m = 3n/2 representations."""
    n = 2 * pairs
    p = np.zeros((n, 3 * pairs))
    for j in range(pairs):
        p[2 * j, 3 * j] = p[2 * j + 1, 3 * j + 1] = 0.5
        p[2 * j, 3 * j + 2] = p[2 * j + 1, 3 * j + 2] = 0.5
    return p


@pytest.mark.parametrize("pairs", [1, 2])
def test_lemma6_matching_strictly_beats_the_random_user_setting(pairs):
    # every random-user rule is capped at 3/4 (Corollary 1); in the matching setting the
    # best one-to-one guess reaches 7/8: one private answer settles its pair, two ambiguous
    # answers leave a coin flip (3/4 · 1 + 1/4 · 1/2)
    p = _lemma6_matrix(pairs)
    assert full_information_bound(p) == pytest.approx(3 / 4, abs=1e-12)
    assert _one_to_one_accuracy(p) == pytest.approx(7 / 8, abs=1e-12)
    assert optimal_matching_accuracy(p) == pytest.approx(7 / 8, abs=1e-12)
    # the sparse solver on the matching posteriors reaches it observation by observation
    n, m = p.shape
    perms = _perms(n)
    total = 0.0
    for obs in itertools.product(range(m), repeat=n):
        marg, prob = _posterior_marginals(p, np.asarray(obs), perms)
        if prob:
            value, _ = _assignment_value(marg)
            total += prob * value
    assert total / n == pytest.approx(7 / 8, abs=1e-12)
