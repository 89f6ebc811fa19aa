"""The stress family: every knob gives a valid Topics population and moves the structure it
names (binomial bounds with fixed seeds)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from typer.testing import CliRunner

from topicslab.cli import app
from topicslab.errors import InputError
from topicslab.io import read_sets
from topicslab.population import (
    STRESS_FAMILY,
    Stress,
    clique_partition,
    empirical_statistics,
    generate,
    load_reference,
)
from topicslab.taxonomy import load

N = 20_000


def _valid(sets: np.ndarray, m: int) -> None:
    """k distinct topics per week, sorted (the mechanism pads short weeks)."""
    assert (sets >= 0).all() and (sets < m).all()
    assert (np.diff(sets, axis=-1) > 0).all()


def _repeated(sets: np.ndarray) -> np.ndarray:
    return (sets[:, 1:] == sets[:, :-1]).all(axis=-1)


def test_fully_stable_profiles_repeat_every_week() -> None:
    s = generate(N, 4, seed=3, params=Stress(persistence=1.0, routine=1.0).apply())
    _valid(s.sets, s.taxonomy.size)
    assert _repeated(s.sets).all()


def test_routine_repeats_weeks_at_its_rate() -> None:
    s = generate(N, 4, seed=3, params=Stress(routine=0.5).apply())
    _valid(s.sets, s.taxonomy.size)
    rep = _repeated(s.sets)
    n = rep.size
    # a routine week repeats for sure; otherwise the week's own top-k equals last week's
    # with the calibrated population's small chance (measured on the same users)
    base = _repeated(generate(N, 4, seed=3).sets).mean()
    expect = 0.5 + 0.5 * base
    assert abs(rep.mean() - expect) <= 4 * math.sqrt(expect * (1 - expect) / n)


def test_persistence_raises_week_to_week_overlap() -> None:
    def overlap(sets: np.ndarray) -> float:
        _, _, qa = empirical_statistics(sets, m=469)
        return float(np.trace(qa))

    calibrated = generate(N, 3, seed=4)
    stable = generate(N, 3, seed=4, params=Stress(persistence=1.0).apply())
    _valid(stable.sets, 469)
    assert overlap(stable.sets) > overlap(calibrated.sets) + 0.3
    assert not _repeated(stable.sets).all()  # interests fixed, profiles still weekly


def test_cliques_partition_the_taxonomy_and_co_occur() -> None:
    tax = load("v2")
    cliques = clique_partition(tax)
    members = sorted(i for c in cliques for i in c)
    assert members == sorted(int(i) for i in tax.ids)
    assert all(3 <= len(c) <= 5 for c in cliques)
    assert clique_partition(tax) == cliques  # fixed
    s = generate(N, 2, seed=5, params=Stress(groups=0.8).apply())
    base = generate(N, 2, seed=5)
    _valid(s.sets, tax.size)
    pairs = [(int(tax.index(a)), int(tax.index(b))) for c in cliques for a in c for b in c
             if a < b]
    rows, cols = np.array(pairs).T
    _, qw, _ = empirical_statistics(s)
    _, bw, _ = empirical_statistics(base)
    assert qw[rows, cols].sum() > 3 * bw[rows, cols].sum()


def test_interests_change_concentration() -> None:
    def distinct(sets: np.ndarray) -> float:
        flat = np.sort(sets.reshape(sets.shape[0], -1), axis=1)
        return float((np.diff(flat, axis=1) != 0).sum(axis=1).mean() + 1)

    few = generate(N, 4, seed=6, params=Stress(interests=0.5).apply())
    many = generate(N, 4, seed=6, params=Stress(interests=8.0).apply())
    _valid(few.sets, 469)
    _valid(many.sets, 469)
    assert few.metadata["padded_share"] > many.metadata["padded_share"]
    assert distinct(few.sets) != pytest.approx(distinct(many.sets), abs=0.05)


def test_v1_population_from_the_v2_parameters() -> None:
    p = load_reference("v1")
    assert p.taxonomy == "v1"
    tax = load("v1")
    assert set(p.popularity) == {int(i) for i in tax.ids}
    assert all(v > 0 for v in p.popularity.values())
    s = generate(5_000, 2, seed=7, taxonomy="v1")
    _valid(s.sets, tax.size)
    qs, _, _ = empirical_statistics(s)
    news = int(tax.index(tax.find("/News")))
    assert qs[news] > 0.1  # the most popular v2 topic stays popular


def test_family_variants_are_valid_and_distinct() -> None:
    seen = set()
    for name, (stress, taxonomy) in STRESS_FAMILY.items():
        p = stress.apply(taxonomy=taxonomy)
        seen.add(p.fingerprint())
        s = generate(2_000, 2, seed=8, params=p, taxonomy=taxonomy)
        _valid(s.sets, s.taxonomy.size)
        assert name
    assert len(seen) == len(STRESS_FAMILY)


@pytest.mark.parametrize("kw", [dict(persistence=1.5), dict(routine=-0.1),
                                dict(groups=float("nan")), dict(interests=-1.0)])
def test_bad_knobs_are_refused(kw) -> None:
    with pytest.raises(InputError):
        Stress(**kw)


def test_cli_population_with_knobs(tmp_path) -> None:
    out = tmp_path / "p.parquet"
    res = CliRunner().invoke(app, ["population", "--users", "3000", "--weeks", "3",
                                   "--persistence", "1", "--routine", "1", "--taxonomy", "v1",
                                   "--out", str(out)])
    assert res.exit_code == 0, res.output
    s = read_sets(out)
    assert s.taxonomy.version == "v1"
    assert _repeated(s.sets).all()
    bad = CliRunner().invoke(app, ["population", "--users", "10", "--routine", "2",
                                   "--out", str(tmp_path / "q.parquet")])
    assert bad.exit_code == 2
