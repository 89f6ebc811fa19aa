"""Bad input, the fourteenth independent round (issue 15): a Parquet week column given twice
named the next week as missing, and a visits CSV's column given twice was a KeyError (exit
code 1); an integer past a float's range in a JSON file (a ledger, q_*.json, population
parameters, a domain table, a model's or a learned attack's model.json) was an
OverflowError (exit code 1), and a learned attack's weeks past the engines' a torch crash;
``convert --k`` past the file's taxonomy (v1: 349 topics) wrote Parquet its readers refuse,
and ``reid --k`` past it was taken; ``reid --attack all,hamming`` said "unknown attack
'all'; choose from ... or all"; a fractional cell said "got np.float64(25.5)". From Python:
10**400 as a parameter was an OverflowError; ``PopulationParams.from_json`` checked nothing;
``top_k`` read NaN counts as no visit; ``TopicSets`` truncated fractional user ids and
wrapped ids past 64 bits; ``model.sample`` drew more weeks than a file holds.

The same contract as ``test_bad_inputs.py``: exit code 2, one line ``error: ...`` naming the
offending file, row or field, no traceback, and nothing written.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from refusal import (
    fit_small_model,
    invoke,
    population_and_stats,
    random_profiles,
    refusal_test,
)

from topicslab.errors import InputError

HUGE = "1" + "0" * 400  # an integer past a float's range, as JSON text


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 users (v2, 4 weeks), their DP statistics, a one-step model, a learned attack, two-
    site traces, 200 users of v1 (2 weeks), and copies edited by hand (below)."""
    from topicslab import io as tio
    from topicslab.datamodel import TopicSets

    d = tmp_path_factory.mktemp("round14")
    population_and_stats(d)
    fit_small_model(invoke, d)
    for args in (["observe", "--sets", str(d / "pop.parquet"), "--out",
                  str(d / "traces.parquet")],
                 ["attack-train", "--sets", str(d / "pop.parquet"), "--out", str(d / "attack"),
                  "--epochs", "0", "--validation", "50", "--no-progress"]):
        res = invoke(args)
        assert res.exit_code == 0, res.output
    tio.write_sets(d / "v1.parquet", TopicSets(random_profiles(200, 2, seed=1), "v1"))
    table = pq.read_table(d / "pop.parquet")
    pq.write_table(table.append_column("epoch_3_topics", table.column("epoch_3_topics")),
                   d / "week-twice.parquet")
    traces = pq.read_table(d / "traces.parquet")
    pq.write_table(traces.append_column("epoch_1_topic", traces.column("epoch_1_topic")),
                   d / "traces-week-twice.parquet")
    cells = traces.column("epoch_0_topic").cast(pa.float64()).to_pylist()
    cells[0] = 25.5
    pq.write_table(traces.set_column(2, "epoch_0_topic", pa.array(cells)),
                   d / "traces-fraction.parquet")
    (d / "visits.csv").write_text("user_id,timestamp,url,url\n"
                                  "0,2024-01-01T10:00:00Z,https://news.com/,x\n")
    (d / "weeks.csv").write_text("user_id,week,url\n0,0,https://news.com/\n")
    (d / "domains.json").write_text('{"news.com": [243]}')
    (d / "domains-huge.json").write_text('{"news.com": [' + HUGE + "]}")
    text = (Path(__file__).parents[2] / "src/topicslab/population/data/reference_v2.json"
            ).read_text()
    (d / "params.json").write_text(text.replace('"activity_log_mean": 2.0',
                                                f'"activity_log_mean": {HUGE}'))
    for copy, source, file, edit in [
            ("ledger-sigma", "stats", "privacy_ledger.json",
             lambda t: t.replace('"sigma": ', f'"sigma": {HUGE}, "was": ', 1)),
            ("within-frequency", "stats", "q_within.json",
             lambda t: t.replace('"frequency": ', f'"frequency": {HUGE}, "was": ', 1)),
            ("model-types", "model", "model.json",
             lambda t: t.replace('"types": 2', f'"types": {HUGE}')),
            ("attack-p", "attack", "model.json",
             lambda t: t.replace('"p": 0.05', f'"p": {HUGE}')),
            ("attack-weeks", "attack", "model.json",
             lambda t: t.replace('"weeks": 4', f'"weeks": {2**40}'))]:
        shutil.copytree(d / source, d / copy)
        (d / copy / file).write_text(edit((d / copy / file).read_text()))
    return d


FIT = ["fit", "--out", "{out}", "--types", "2", "--modes", "1", "--steps", "1",
       "--no-progress", "--stats"]
REID = ["reid", "--sets", "{in}/pop.parquet", "--trials", "1", "--targets", "10",
        "--no-progress"]

CASES: list[tuple[str, list[str], str]] = [
    # "field 'epoch_4_topics': missing week column": the column given twice was epoch_3
    ("convert-week-column-twice", ["convert", "{in}/week-twice.parquet", "{out}.csv"],
     "week-twice.parquet, field 'epoch_3_topics': duplicate column"),
    ("reid-traces-week-column-twice", ["reid", "--traces", "{in}/traces-week-twice.parquet"],
     "traces-week-twice.parquet, field 'epoch_1_topic': duplicate column"),
    # KeyError: 'Field "url" exists 2 times in schema', exit code 1
    ("ingest-visits-column-twice",
     ["ingest", "-q", "--visits", "{in}/visits.csv", "--domains", "{in}/domains.json",
      "--out", "{out}.parquet"], "visits.csv, field 'url': duplicate column"),
    # "expected an integer, got np.float64(25.5)"
    ("reid-traces-fractional-topic", ["reid", "--traces", "{in}/traces-fraction.parquet"],
     "field 'epoch_0_topic': expected an integer, got 25.5"),
    # OverflowError: int too large to convert to float, exit code 1
    ("fit-ledger-sigma-past-a-float", [*FIT, "{in}/ledger-sigma"],
     "privacy_ledger.json, field '--stats': invalid JSON: the integer 100000000000… (401 "
     "digits) is past 64"),
    ("validate-within-frequency-past-a-float",
     ["validate", "--model", "{in}/model", "--json", "{out}.json", "--stats",
      "{in}/within-frequency"],
     "q_within.json, row 1, field 'frequency': frequency 1000000000"),
    ("stats-explain-ledger-past-a-float", ["stats", "--explain", "{in}/ledger-sigma"],
     "privacy_ledger.json, field '--explain': invalid JSON: the integer"),
    ("population-params-past-a-float",
     ["population", "--users", "10", "--out", "{out}.parquet", "--params", "{in}/params.json"],
     "params.json, field '--params': not valid parameters (the integer"),
    ("ingest-domain-id-past-a-float",
     ["ingest", "-q", "--visits", "{in}/weeks.csv", "--domains", "{in}/domains-huge.json",
      "--out", "{out}.parquet"],
     "domains-huge.json, field '--domains': not a domain table (the integer"),
    ("sample-model-types-past-a-float",
     ["sample", "--model", "{in}/model-types", "--users", "10", "--seed", "1", "--out",
      "{out}.parquet"], "model.json, field '--model': invalid JSON: the integer"),
    ("reid-attack-p-past-a-float",
     [*REID, "--attack", "learned", "--attack-model", "{in}/attack-p"],
     "model.json, field '--attack-model': invalid JSON: the integer"),
    # a torch crash, many lines of C++ frames, exit code 1
    ("reid-attack-weeks-past-the-engines",
     [*REID, "--attack", "learned", "--attack-model", "{in}/attack-weeks"],
     "attack-weeks/model.json, field 'weeks': weeks must be in 1..16"),
    # k past the file's taxonomy: a Parquet file of k = 400 in v1 that its readers refuse
    ("convert-k-past-the-file-taxonomy",
     ["convert", "{in}/v1.parquet", "{out}.parquet", "--k", "400"],
     "v1.parquet, field '--k': k must be an integer in 1..349 (the topics of taxonomy v1)"),
    ("reid-k-past-the-taxonomy", [*REID, "--k", "470"],
     "pop.parquet, field '--k': k must be at most 469 (the topics of taxonomy v2), got 470"),
    # "unknown attack 'all'; choose from hamming, asymmetric or all"
    ("reid-attack-all-in-a-list", [*REID, "--attack", "all,hamming"],
     "field '--attack': 'all' names every attack: give --attack all alone"),
]


test_bad_input_is_refused = refusal_test(CASES)


def test_k_within_the_file_taxonomy_still_converts(inputs: Path, work: Path) -> None:
    """v1's 349 topics is the bound: --k 349 widens and reads back."""
    res = invoke(["convert", str(inputs / "v1.parquet"), str(work / "w.parquet"), "--k", "349"])
    assert res.exit_code == 0, res.output
    res = invoke(["convert", str(work / "w.parquet"), str(work / "w.csv")])
    assert res.exit_code == 0, res.output


def _population_params(text: str) -> Any:
    from topicslab.population import PopulationParams

    return PopulationParams.from_json(text)


def _top_k_nan() -> Any:
    from topicslab import api

    return api.top_k(np.full((2, 469), np.nan))


def _topic_sets(ids: Any) -> Any:
    from topicslab.datamodel import TopicSets

    return TopicSets(random_profiles(3, 1), "v2", ids)


def _sample_weeks(inputs: Path) -> Any:
    from topicslab import model

    return model.sample(model.load_model(inputs / "model"), 5, seed=0, weeks=1024)


@pytest.mark.parametrize(("call", "message"), [
    (lambda d: __import__("topicslab.api", fromlist=["Mechanism"]).Mechanism(p=10**400),
     "p must be a finite number in [0, 1], got an integer past a float's range"),
    (lambda d: _population_params("[]"), "population parameters are a JSON object"),
    (lambda d: _population_params('{"activity_log_mean": NaN}'), "must be a finite number"),
    (lambda d: _population_params('{"activity_log_mean": ' + HUGE + "}"), "past 64 bits"),
    (lambda d: _top_k_nan(), "counts must be numbers of visits, got float64 values holding"),
    (lambda d: _topic_sets([0.5, 1, 2]), "user_ids must hold whole numbers, got 0.5"),
    (lambda d: _topic_sets(np.array([2**63, 1, 2], dtype=np.uint64)),
     "user_ids must be 64-bit signed integers"),
    (lambda d: _topic_sets(["0", "1", "2"]), "user_ids must be an integer array"),
    (_sample_weeks, "weeks must be at most 1023"),
], ids=["mechanism-p-past-a-float", "params-from-json-a-list", "params-from-json-nan",
        "params-from-json-past-64-bits", "top-k-nan-counts", "topic-sets-fractional-ids",
        "topic-sets-ids-past-64-bits", "topic-sets-text-ids", "sample-past-the-files-weeks"])
def test_python_api_refuses_round14(inputs: Path, call: Callable[[Path], Any],
                                    message: str) -> None:
    with pytest.raises((InputError, ValueError), match=_escape(message)):
        call(inputs)


def _escape(text: str) -> str:
    import re

    return re.escape(text)


def test_python_what_is_still_fine(inputs: Path) -> None:
    """A whole-number float id, a reference's round trip through JSON, and 1023 weeks."""
    from topicslab import model
    from topicslab.population import PopulationParams, load_reference

    assert _topic_sets([0.0, 1.0, 2.0]).user_ids.tolist() == [0, 1, 2]
    ref = load_reference("v2")
    assert PopulationParams.from_json(ref.to_json()) == ref
    drawn = model.sample(model.load_model(inputs / "model"), 2, seed=0, weeks=1023)
    assert drawn.n_weeks == 1023
    assert json.loads('{"a": 18446744073709551615}')  # (the hook's bound is 64 bits)
