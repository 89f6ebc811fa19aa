"""Populations drawn chunk by chunk (``ChunkedSets``) give the attacks and the fidelity
table exactly what the whole table gives (answers are a function of the user id)."""

from __future__ import annotations

import numpy as np
import pytest

from topicslab import population
from topicslab.attacks import measure_risk, risk_curve
from topicslab.datamodel import ChunkedSets, TopicSets
from topicslab.errors import InputError
from topicslab.validate import fidelity


@pytest.fixture(scope="module")
def pops() -> tuple[TopicSets, TopicSets]:
    return (population.generate(1500, 4, seed=0, progress=False),
            population.generate(1300, 4, seed=1, progress=False))


def _chunked(sets: TopicSets, chunk: int) -> ChunkedSets:
    def draw(lo: int, n: int) -> TopicSets:
        return sets.subset(users=slice(lo, lo + n))

    return ChunkedSets(draw, sets.n_users, sets.n_weeks, sets.k, sets.taxonomy,
                       chunk_users=chunk)


def _numbers(result: object) -> dict[str, object]:
    d = result.to_dict()  # type: ignore[attr-defined]
    return {name: {k: v for k, v in a.items() if "seconds" not in k}
            for name, a in d["attacks"].items()}


@pytest.mark.parametrize("targets", [200, "all"])
def test_a_chunked_population_gives_the_same_risks(pops, targets) -> None:
    pop, syn = pops
    kw = {"weeks": 3, "targets": targets, "trials": 2, "seed": 7, "progress": False}
    whole = measure_risk(pop, populations=lambda t: syn, **kw)
    chunked = measure_risk(pop, populations=lambda t: _chunked(syn, 400), **kw)
    assert _numbers(whole) == _numbers(chunked)
    # a curve over ChunkedSets directly (the fidelity table's path)
    a = risk_curve(syn, weeks=[1, 4], targets=targets, trials=1, seed=3, progress=False)
    b = risk_curve(_chunked(syn, 512), weeks=[1, 4], targets=targets, trials=1, seed=3,
                   progress=False)
    for x, y in zip(a.results, b.results, strict=True):
        assert _numbers(x) == _numbers(y)


def test_the_fidelity_table_of_chunked_synthetic_users_is_the_same(pops) -> None:
    pop, syn = pops
    kw = {"trials": 2, "targets": 300, "seed": 5}
    whole = fidelity(pop, lambda t: syn, **kw)
    chunked = fidelity(pop, lambda t: _chunked(syn, 350), **kw)
    assert [g.to_dict() for g in whole.gaps] == [g.to_dict() for g in chunked.gaps]


def test_chunks_are_checked_and_join_into_the_whole_table(pops) -> None:
    _, syn = pops
    c = _chunked(syn, 500)
    assert [lo for lo, _ in c.chunks()] == [0, 500, 1000]
    back = c.whole()
    assert np.array_equal(back.sets, syn.sets)
    assert np.array_equal(back.user_ids, syn.user_ids)
    short = ChunkedSets(lambda lo, n: syn.subset(users=slice(lo, lo + n - 1)), syn.n_users,
                        syn.n_weeks, syn.k, syn.taxonomy, chunk_users=500)
    with pytest.raises(InputError, match="came back as"):
        list(short.chunks())
    for bad in ({"n_users": -1}, {"chunk_users": 0}, {"k": 2.5}, {"n_weeks": True}):
        args = {"n_users": syn.n_users, "n_weeks": syn.n_weeks, "k": syn.k,
                "chunk_users": 10, **bad}
        with pytest.raises(InputError):
            ChunkedSets(lambda lo, n: syn, taxonomy=syn.taxonomy, **args)  # type: ignore[arg-type]
