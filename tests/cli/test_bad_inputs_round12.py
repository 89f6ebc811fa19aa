"""Bad input, the twelfth independent round (issue 15): the persistence statistic
(``stats``/``run --overlap-lags``, ``q_overlap.json``, ``fit --persistence``) and the ledger
that accounts for it. A q_overlap.json of more or fewer lags than the ledger's query, or in
a release that never paid for it, was fitted as it came; a ledger σ given as text was a
ValueError (exit 1), a negative one used as it came; ``--persistence`` was ignored without a
word on a release without the statistic or with ``--model paper``, and a huge one overflowed
with the wrong option named and a checkpoint left; ``run --overlap-lags --model paper`` spent
budget on a statistic nothing fits; ``stats --k 300 --overlap-lags`` overflowed int8 (exit
1); the fit's memory estimate left the persistence term out; and from Python a legacy
release lost its q_overlap.json, and a table of the wrong shape was saved as it came.

The same contract as ``test_bad_inputs.py``: exit code 2, one line ``error: ...`` naming the
offending file, row or field, no traceback, and nothing written (the test's directory, also
the current directory, is unchanged, and so are the inputs).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from refusal import invoke, invoke_refused, population_and_stats, random_profiles

from topicslab import dp
from topicslab.datamodel import TopicSets
from topicslab.errors import InputError

Edit = Callable[[Any], Any]


def _edited(src: Path, dst: Path, name: str, edit: Edit) -> None:
    shutil.copytree(src, dst)
    path = dst / name
    path.write_text(json.dumps(edit(json.loads(path.read_text()))))


def _overlap_query(edit: Callable[[dict[str, Any]], dict[str, Any]]) -> Edit:
    def apply(ledger: dict[str, Any]) -> dict[str, Any]:
        ledger["mechanisms"][-1] = edit(dict(ledger["mechanisms"][-1]))
        return ledger
    return apply


def _first_query(edit: Callable[[dict[str, Any]], dict[str, Any]]) -> Edit:
    def apply(ledger: dict[str, Any]) -> dict[str, Any]:
        ledger["mechanisms"][0] = edit(dict(ledger["mechanisms"][0]))
        return ledger
    return apply


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 users (v2, 4 weeks) with the paper's release (``stats``) and one with the
    persistence statistic of 3 lags (``ostats``), and copies of the latter edited by hand."""
    d = tmp_path_factory.mktemp("round12")
    data, _ = population_and_stats(d)
    o = d / "ostats"
    dp.save_statistics(o, dp.compute_statistics(data, epsilon=1e3, delta=1e-6, seed=0,
                                                overlap_lags=3))
    lag_one = [r for r in json.loads((o / "q_overlap.json").read_text()) if r["lag"] == 1]
    _edited(o, d / "more-lags", "q_overlap.json",
            lambda rows: rows + [dict(r, lag=4) for r in lag_one])
    _edited(o, d / "fewer-lags", "q_overlap.json", lambda rows: lag_one)
    shutil.copytree(d / "stats", d / "unpaid")
    shutil.copy(o / "q_overlap.json", d / "unpaid" / "q_overlap.json")
    _edited(o, d / "query-twice", "privacy_ledger.json",
            lambda led: {**led, "mechanisms": led["mechanisms"] + led["mechanisms"][-1:]})
    _edited(o, d / "weeks-edited", "privacy_ledger.json", lambda led: {
        **led, "contribution_bounding": {**led["contribution_bounding"], "overlap_weeks": [1]}})
    _edited(o, d / "sigma-text", "privacy_ledger.json",
            _first_query(lambda q: {**q, "sigma": "x", "sigma_sampled": "x"}))
    _edited(o, d / "sigma-null", "privacy_ledger.json",
            _overlap_query(lambda q: {**q, "sigma_sampled": None}))
    _edited(o, d / "sigma-negative", "privacy_ledger.json",
            _overlap_query(lambda q: {**q, "sigma": -1.0, "sigma_sampled": -1.0}))
    _edited(d / "stats", d / "name-number", "privacy_ledger.json",
            _first_query(lambda q: {**q, "name": 5}))
    # 9 weeks, 8 lags: the term's sampled users outweigh a 2-type model
    long = TopicSets(random_profiles(300, 9, seed=2), "v2", np.arange(300, dtype=np.int64))
    dp.save_statistics(d / "lags8", dp.compute_statistics(long, epsilon=1e3, delta=1e-6,
                                                          seed=0, overlap_lags=8))
    return d


S, OS = "{in}/stats", "{in}/ostats"
FIT = ["fit", "--out", "{out}", "--types", "2", "--modes", "1", "--steps", "1",
       "--no-progress", "--stats"]
VAL = ["validate", "--model", "{in}/model", "--json", "{out}.json", "--stats"]

CASES: list[tuple[str, list[str], str]] = [
    # a q_overlap.json of more (or fewer) lags than the ledger's persistence query released:
    # fitted as it came
    ("fit-q-overlap-more-lags-than-the-ledger", [*FIT, "{in}/more-lags"],
     "more-lags/q_overlap.json, field '--stats': holds 4 lag(s), but the ledger's "
     "persistence query released 3 lag(s)"),
    ("fit-q-overlap-fewer-lags-than-the-ledger", [*FIT, "{in}/fewer-lags"],
     "fewer-lags/q_overlap.json, field '--stats': holds 1 lag(s)"),
    # ... copied into a release whose ledger has no persistence query: fitted, its privacy
    # cost accounted nowhere
    ("fit-q-overlap-the-release-never-paid-for", [*FIT, "{in}/unpaid"],
     "unpaid/q_overlap.json, field '--stats': the ledger lists no persistence "
     "query"),
    # the ledger edited: the query twice, or its weeks
    ("fit-ledger-lists-the-query-twice", [*FIT, "{in}/query-twice"],
     "query-twice/privacy_ledger.json, field 'mechanisms': lists the persistence query"),
    ("fit-ledger-overlap-weeks-edited", [*FIT, "{in}/weeks-edited"],
     "privacy_ledger.json, field 'contribution_bounding.overlap_weeks'"),
    # a mechanism's sigma as text or null: ValueError / TypeError, exit code 1; negative:
    # used as it came; a name that is not text: the query left out of the noise floor
    ("fit-ledger-sigma-as-text", [*FIT, "{in}/sigma-text"],
     "sigma-text/privacy_ledger.json, field 'mechanisms': entry 1: within_w0's sigma"),
    ("validate-ledger-sigma-null", [*VAL, "{in}/sigma-null"],
     "sigma-null/privacy_ledger.json, field 'mechanisms': entry 4: overlap's sigma_sampled"),
    ("fit-ledger-sigma-negative", [*FIT, "{in}/sigma-negative"],
     "field 'mechanisms': entry 4: overlap's sigma must be a finite number > 0"),
    ("fit-ledger-mechanism-name-a-number", [*FIT, "{in}/name-number"],
     "field 'mechanisms': entry 1: name must be text"),
    # --persistence where nothing reads it: ignored without a word
    ("fit-persistence-without-the-statistic", [*FIT, S, "--persistence", "0.5"],
     "stats, field '--persistence': --persistence weighs the release's persistence statistic"),
    ("fit-persistence-0-without-the-statistic", [*FIT, S, "--persistence", "0"],
     "field '--persistence'"),
    ("fit-persistence-with-the-paper-model",
     ["fit", "--out", "{out}", "--types", "2", "--steps", "1", "--no-progress", "--stats", OS,
      "--model", "paper", "--persistence", "0.5"],
     "field '--persistence': --persistence weighs the persistence statistic for persistent "
     "types"),
    # a weight past its range: 'theta has non-finite logits' (or '--lr' blamed), with
    # OUT/checkpoints/checkpoint.pt left behind
    ("fit-persistence-1e308", [*FIT, OS, "--persistence", "1e308"],
     "field '--persistence': persistence must be a number in [0, 1e+06]"),
    # the statistic released for a model that does not fit it: 5% of the budget for nothing
    ("run-overlap-lags-with-the-paper-model",
     ["run", "--preset", "smoke", "--users", "2000", "--quiet", "--model", "paper",
      "--overlap-lags", "2", "--out", "{out}"],
     "field '--overlap-lags': --overlap-lags adds a statistic that only persistent types fit"),
    # representatives of the new surface that were already refused
    ("stats-overlap-lags-past-the-weeks",
     ["stats", "--sets", "{in}/pop.parquet", "--out", "{out}", "--overlap-lags", "4"],
     "pop.parquet, field '--overlap-lags': overlap_lags 4 needs weeks 0..4"),
    ("run-overlap-lags-with-stats",
     ["run", "--preset", "smoke", "--quiet", "--stats", OS, "--overlap-lags", "0", "--out",
      "{out}"], "field '--overlap-lags'"),
]


@pytest.fixture(scope="module")
def model(inputs: Path) -> Path:
    from refusal import fit_small_model

    fit_small_model(invoke, inputs)
    return inputs / "model"


@pytest.mark.parametrize(("name", "args", "named"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_refused(inputs: Path, model: Path, work: Path, name: str,
                              args: list[str], named: str) -> None:
    invoke_refused(invoke, args, inputs, work, named)


def test_the_fit_memory_estimate_counts_the_persistence_term(
        inputs: Path, model: Path, work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The term's closed form holds L copies of the slot parameters and its sampled users
    L + 1 weeks: a release of hundreds of lags needed tens of GB the estimate left out. With
    the weight 0 the term does not run, and the same fit fits."""
    from topicslab import _resources

    monkeypatch.setattr(_resources, "available_memory", lambda: 40 * 2**20)
    args = ["fit", "--stats", "{in}/lags8", "--out", "{out}", "--types", "2", "--modes", "1",
            "--steps", "1", "--no-progress"]
    invoke_refused(invoke, args, inputs, work,
                   "field '--persistence': fitting 2 types over 4 weeks and 8 lags of "
                   "persistence needs about")
    res = invoke([a.format(**{"in": inputs, "out": work / "out"}) for a in args]
                 + ["--persistence", "0"])
    assert res.exit_code == 0, res.output


def test_a_persistence_term_that_is_not_finite_is_refused_before_the_step(
        inputs: Path, model: Path, work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Checked before Adam's step: a non-finite term made every logit NaN and the error
    blamed the learning rate (or came at the end, with the checkpoint written)."""
    import torch

    from topicslab.model import persistence

    monkeypatch.setattr(persistence.PersistenceTerm, "sse",
                        lambda self, *a, **k: torch.tensor(float("inf")))
    invoke_refused(invoke, [*FIT, OS], inputs, work,
                   "field '--persistence': the persistence term is not finite at step 0")


def test_stats_of_more_than_127_topics_a_week_with_the_persistence_statistic(
        inputs: Path, work: Path) -> None:
    """The shared-topic counts were int8: from 128 shared topics they wrapped negative and
    numpy refused them (ValueError, exit code 1). k = 300 of 469 topics shares at least 131."""
    res = invoke(["stats", "--sets", str(inputs / "pop.parquet"), "--out", "s", "--k", "300",
                  "--overlap-lags", "1", "--epsilon", "1000", "--delta", "1e-6", "--seed", "0"])
    assert res.exit_code == 0, res.output
    q = dp.load_statistics(work / "s").q_overlap
    assert q is not None and q.shape == (1, 301)
    assert q[0, :131].sum() < 0.05  # (only noise below the 131 topics every user shares)


def test_python_a_legacy_release_keeps_its_persistence_statistic(inputs: Path,
                                                                 work: Path) -> None:
    """``save_statistics(schema="legacy")`` writes q_overlap.json beside the legacy files;
    ``load_statistics`` read it in the current schema only, so the statistic was lost."""
    st = dp.load_statistics(inputs / "ostats")
    dp.save_statistics(work / "legacy", st, schema="legacy")
    back = dp.load_statistics(work / "legacy")
    assert back.q_overlap is not None and st.q_overlap is not None
    np.testing.assert_allclose(back.q_overlap, st.q_overlap)


def test_python_a_persistence_table_of_the_wrong_shape_is_not_saved(inputs: Path,
                                                                    work: Path) -> None:
    """``DPStatistics`` checks its q_overlap against k: a table of another shape was saved
    as it came, and the release's own reader then refused it."""
    st = dp.load_statistics(inputs / "ostats")
    with pytest.raises(InputError, match=r"field 'q_overlap': shape \(2, 3\)"):
        dataclasses.replace(st, q_overlap=np.full((2, 3), 1 / 3))
    with pytest.raises(InputError, match="field 'q_overlap'"):
        dp.DPStatistics(st.q_single, st.q_within, st.q_across, st.n_estimate, st.taxonomy,
                        st.k, st.ledger, np.full((3, 6), 0.5))
    assert list(work.iterdir()) == []
