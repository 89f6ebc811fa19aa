"""Bad input, the twenty-fourth independent round (issue 15): inputs of one command fed to
another, two bad things at once, empty files end to end, odd names, ``sample --device`` and
the Python API's entry points with wrong but plausible arguments.

``stats --engine stream`` of a CSV of no users printed the progress bar's line above the
error (two lines, and "no users" where every other path says "the topic sets hold no
users"); of a Parquet file (also ``--engine auto``, and the Spark engine's plan) it took a
misspelt week column (``epoch_4_topic``; ``epoch_3_topic`` would have dropped week 3), topicslab
metadata saying 7 weeks over 4 week columns, and a corrupt metadata ``k`` (0, text, 1e308),
all of which the sets reader refuses.

Devices: ``cudax``, ``cuda:abc`` or ``cuda:`` were taken as CUDA (``startswith("cuda")``); on a
machine with CUDA they ended in torch's ``RuntimeError`` ("Invalid device string"), and an
index past the GPUs (``cuda:3`` on one GPU) in "invalid device ordinal" once the work began.

The Python API:

- ``validate.fidelity`` compared a population with synthetic sets of another taxonomy, or
  with sets of no users (a gap table of risks that compare nothing), read ``weeks=[1.5]`` and
  ``[True]`` as 1, and ``targets="all"`` (which ``measure_risk`` takes) was a ``TypeError``;
- ``attacks.measure_risk`` of sets of no users reported a risk of 0;
- ``model.sample``: ``first_user=-1`` drew user -1, ``1.5`` was taken as 1, ids past
  2**63 - 1 wrapped to negative ones, and ``chunk_users=1.5`` was taken as 1; a seed past
  64 bits was masked (``seed=2**64`` drew seed 0's users), here and in
  ``dp.compute_statistics``' padding;
- ``model.sample_to_file`` wrote TFRecord shards past the users (empty files every reader
  refuses), and ignored ``shards`` for Parquet;
- ``model.fit`` fitted 10**6 weeks (the CLI's bound is 104), fitted a model of 4 weeks to
  statistics of one week (the CLI refused it: q_across is all zeros), took ``seed=1.5`` and
  ``threads=2.5`` as integers, ended ``threads=0`` in torch's ``RuntimeError`` and
  ``device=None`` in an ``AttributeError``, and ``resume=True`` with no checkpoint began a
  new fit as if resume were not given (the CLI refused it);
- ``model.save_model``, ``dp.save_statistics`` and ``attacks.save_attack`` wrote into a
  directory of another kind of output: a model saved into a learned attack's directory
  replaced its ``model.json`` and weights (the CLI refused such directories);
- ``dp.load_statistics(k=4)`` read a release whose privacy ledger says top-5 sets as top-4.

``population --params``: a topic table's key ``01`` (or `` 1``, ``+1``) beside ``1`` was read
as topic 1, the second value replacing the first, and a key in another script's digits
(``１``) was read as a topic id.

The same contract as ``test_bad_inputs.py``: exit code 2, one line ``error: ...`` naming the
offending file, row or field, no traceback, and nothing written.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
from refusal import (
    api_refused,
    fit_small_model,
    invoke,
    invoke_refused,
    population_and_stats,
    random_profiles,
    refusal_test,
    tree,
)

from topicslab.errors import InputError


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A population, its statistics (weeks 0-1, and week 0 alone), a fitted model, a
    learned attack and a CSV of no users."""
    from topicslab import dp

    d = tmp_path_factory.mktemp("round24")
    data, pop = population_and_stats(d)
    fit_small_model(invoke, d)
    dp.save_statistics(d / "stats-week-0", dp.compute_statistics(
        data, weeks=[0], epsilon=1e3, delta=1e-6, seed=0))
    res = invoke(["attack-train", "--sets", str(pop), "--out", str(d / "attack"), "--epochs",
                  "0", "--validation", "50", "--no-progress"])
    assert res.exit_code == 0, res.output
    (d / "empty.csv").write_text("user_id,epoch_0_topics,epoch_1_topics\n", encoding="utf-8")
    from topicslab.population.params import reference_path

    ref = json.loads(reference_path("v2").read_text(encoding="utf-8"))
    assert "1" in ref["popularity"]
    for name, key in [("zero", "01"), ("fullwidth", "\uff11")]:
        doc = {**ref, "popularity": {**ref["popularity"], key: 1.0}}
        (d / f"params-key-{name}.json").write_text(json.dumps(doc), encoding="utf-8")
    table = pq.read_table(pop)
    block = table.schema.metadata[b"topicslab"]
    assert b'"weeks": 4' in block and b'"k": 5' in block
    pq.write_table(table.append_column("epoch_4_topic", table.column("epoch_0_topics")),
                   d / "week-misspelt.parquet")
    for name, edit in [("weeks-7", (b'"weeks": 4', b'"weeks": 7')),
                       ("k-0", (b'"k": 5', b'"k": 0'))]:
        pq.write_table(table.replace_schema_metadata({b"topicslab": block.replace(*edit)}),
                       d / f"meta-{name}.parquet")
    return d


STREAM = ["stats", "--engine", "stream", "--epsilon", "1000", "--out", "{out}", "--sets"]

CASES: list[tuple[str, list[str], str]] = [
    # the progress bar's line above "error: ...: no users"
    ("stats-stream-of-a-csv-of-no-users",
     ["stats", "--sets", "{in}/empty.csv", "--out", "{out}", "--epsilon", "1000", "--engine",
      "stream"],
     "empty.csv, field '--sets': the topic sets hold no users"),
    # the stream engine read them as they came (the sets reader refused them)
    ("stats-stream-week-misspelt", [*STREAM, "{in}/week-misspelt.parquet"],
     "week-misspelt.parquet, field 'epoch_4_topic': unknown week column"),
    ("stats-stream-metadata-says-7-weeks", [*STREAM, "{in}/meta-weeks-7.parquet"],
     "meta-weeks-7.parquet, field 'epoch_4_topics': metadata says 7 weeks, columns give 4"),
    ("stats-stream-metadata-k-0", [*STREAM, "{in}/meta-k-0.parquet"],
     "meta-k-0.parquet, field 'metadata.k': corrupt topicslab metadata: k must be"),
    # read as topic 1, the second value replacing the first
    ("population-params-topic-01-beside-1",
     ["population", "--params", "{in}/params-key-zero.json", "--users", "50", "--out",
      "{out}.parquet"],
     "params-key-zero.json, field 'popularity': keys '1' and '01' name the same topic 1"),
    ("population-params-topic-fullwidth-1",
     ["population", "--params", "{in}/params-key-fullwidth.json", "--users", "50", "--out",
      "{out}.parquet"],
     "params-key-fullwidth.json, field 'popularity': topic ids are integers, got '\uff11'"),
]

test_bad_input_is_refused = refusal_test(CASES)


@pytest.mark.parametrize(("device", "named"), [
    ("cudax", "device must be cpu, cuda or auto, got 'cudax'"),
    ("cuda:abc", "device must be cpu, cuda or auto, got 'cuda:abc'"),
    ("cuda:", "device must be cpu, cuda or auto, got 'cuda:'"),
    ("cuda:1", "'cuda:1': this machine has 1 CUDA device(s), cuda:0..cuda:0"),
])
def test_a_cuda_device_that_is_not_one_is_refused_up_front(
        inputs: Path, work: Path, monkeypatch: pytest.MonkeyPatch, device: str,
        named: str) -> None:
    """On a machine with one GPU (simulated): torch's RuntimeError ("Invalid device string",
    "invalid device ordinal") ended the command once the work began."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    invoke_refused(invoke, ["sample", "--model", "{in}/model", "--users", "5", "--seed", "1",
                            "--out", "{out}.parquet", "--device", device],
                   inputs, work, f"field '--device': {named}")
    from topicslab.model.sample import _torch_device

    with pytest.raises(InputError, match="this machine has 1 CUDA device"):
        _torch_device(torch.device("cuda", 3))


def _sets(users: int, taxonomy: str = "v2") -> Any:
    from topicslab.datamodel import TopicSets

    return TopicSets(random_profiles(users, 4, seed=1), taxonomy,
                     np.arange(users, dtype=np.int64))


def _fid(population: Any = None, synthetic: Any = None, **options: Any) -> Any:
    from topicslab import validate

    return validate.fidelity(_sets(60) if population is None else population,
                             _sets(60) if synthetic is None else synthetic,
                             **{"trials": 1, "targets": 10, **options})


def _empty() -> Any:
    from topicslab.datamodel import TopicSets

    return TopicSets(np.zeros((0, 4, 5), np.int16), "v2", np.zeros(0, np.int64))


@pytest.mark.parametrize(("call", "named"), [
    (lambda i, w: _fid(synthetic=_sets(60, "v1")),
     "field 'synthetic': the synthetic sets use taxonomy v1, the population taxonomy v2"),
    (lambda i, w: _fid(synthetic=_empty()), "field 'synthetic': the synthetic sets hold no users"),
    (lambda i, w: _fid(synthetic=lambda trial: _empty()), "field 'synthetic': the synthetic sets "
                                                        "hold no users"),
    (lambda i, w: _fid(population=_empty()), "field 'population': the population sets hold no"),
    (lambda i, w: _fid(weeks=[1.5]), "field 'weeks': weeks must be an integer, got 1.5"),
    (lambda i, w: _fid(weeks=[True]), "field 'weeks': weeks must be an integer, got True"),
    (lambda i, w: __import__("topicslab.attacks").attacks.measure_risk(
        _empty(), targets=5, trials=1, progress=False),
     "field 'sets': the sets hold no users: there is nothing to attack"),
    (lambda i, w: _sample(i, first_user=-1), "field 'first_user': first_user must be"),
    (lambda i, w: _sample(i, first_user=1.5), "first_user must be an integer, got 1.5"),
    (lambda i, w: _sample(i, first_user=2**63 - 3), "64-bit signed"),
    (lambda i, w: _sample(i, chunk_users=1.5), "chunk_users must be an integer, got 1.5"),
    (lambda i, w: _sample(i, seed=2**64), "field 'seed': seed must be"),
    (lambda i, w: __import__("topicslab.dp").dp.compute_statistics(
        _sets(60), epsilon=1e3, seed=2**64), "field 'seed': seed must be"),
    (lambda i, w: _sample_to_file(i, w, "o.tfrecord", format="tfrecord", shards=9),
     "field 'shards': shards must be in 1..5"),
    (lambda i, w: _sample_to_file(i, w, "o.parquet", shards=2),
     "field 'shards': shards applies to format='tfrecord' only"),
    (lambda i, w: __import__("topicslab.model").model.fit(
        i, "persistent", types=2, weeks=105, progress=False),
     "field 'weeks': weeks must be at most 104, got 105"),
    (lambda i, w: _fit(i, stats="stats-week-0"),
     "field 'weeks': a model of 4 weeks needs statistics of a week pair"),
    (lambda i, w: _fit(i, seed=1.5), "field 'seed': seed must be an integer, got 1.5"),
    (lambda i, w: _fit(i, seed=-1), "field 'seed': seed must be"),
    (lambda i, w: _fit(i, threads=0), "field 'threads': threads must be"),
    (lambda i, w: _fit(i, threads=2.5), "field 'threads': threads must be an integer, got 2.5"),
    (lambda i, w: _fit(i, device=None), "field 'device': device must be cpu, cuda or auto"),
    (lambda i, w: _fit(i, checkpoint_dir=w / "checkpoints", resume=True),
     "field 'resume': resume needs checkpoint.pt"),
    (lambda i, w: __import__("topicslab.dp").dp.load_statistics(i / "stats", k=4),
     "privacy_ledger.json, field 'k': k = 4, but the privacy ledger says the release counts "
     "top-5 sets"),
], ids=["fidelity-synthetic-v1", "fidelity-synthetic-empty", "fidelity-trial-synthetic-empty",
        "fidelity-population-empty", "fidelity-weeks-fraction", "fidelity-weeks-bool",
        "measure-risk-empty", "sample-first-user-negative", "sample-first-user-fraction",
        "sample-ids-past-64-bits", "sample-chunk-fraction", "sample-seed-past-64-bits",
        "statistics-seed-past-64-bits", "sample-to-file-shards-past-users",
        "sample-to-file-shards-parquet", "fit-weeks-past-104", "fit-one-week-statistics",
        "fit-seed-fraction", "fit-seed-negative", "fit-threads-0", "fit-threads-fraction",
        "fit-device-none", "fit-resume-without-checkpoint", "load-statistics-k-not-ledgers"])
def test_api_refuses(inputs: Path, work: Path, call: Any, named: str) -> None:
    api_refused(call, inputs, work, named)


def _sample(inputs: Path, **options: Any) -> Any:
    from topicslab import model as tm

    return tm.sample(tm.load_model(inputs / "model"), 5, **{"seed": 1, **options})


def _sample_to_file(inputs: Path, work: Path, name: str, **options: Any) -> Any:
    from topicslab import model as tm

    return tm.sample_to_file(tm.load_model(inputs / "model"), work / name, 5, seed=1,
                             progress=False, **options)


def _fit(inputs: Path, stats: str = "stats", **options: Any) -> Any:
    from topicslab import dp
    from topicslab import model as tm

    return tm.fit(dp.load_statistics(inputs / stats), tm.PersistentTypes(types=2, modes=1),
                  tm.FullObjective(steps=1), **{"progress": False, "device": "cpu",
                                                **options})


def test_api_targets_all_in_fidelity_is_every_user() -> None:
    """``targets="all"`` (as ``measure_risk`` takes it) was a ``TypeError`` in ``fidelity``."""
    assert _fid(targets="all", weeks=[1]).targets is None


@pytest.mark.parametrize(("kind", "into", "named"), [
    ("model", "attack", "holds a learned attack (topicslab attack-train) (model.json); "
                        "writing a fitted model"),
    ("stats", "model", "holds a fitted model (topicslab fit)"),
    ("attack", "model", "holds a fitted model (topicslab fit)"),
    ("model", "stats", "holds DP statistics (topicslab stats)"),
])
def test_api_save_refuses_a_directory_of_another_kind(inputs: Path, work: Path, kind: str,
                                                      into: str, named: str) -> None:
    """A model saved into a learned attack's directory replaced its model.json and weights
    (and statistics into a model's directory mixed the two); the CLI refused both."""
    from topicslab import dp
    from topicslab import model as tm
    from topicslab.attacks import learned

    target = work / into
    shutil.copytree(inputs / into, target)
    before = tree(work)
    save = {"model": lambda: tm.save_model(target, tm.load_model(inputs / "model")),
            "stats": lambda: dp.save_statistics(target, dp.load_statistics(inputs / "stats")),
            "attack": lambda: learned.save_attack(target, learned.load_attack(
                inputs / "attack"))}[kind]
    with pytest.raises(InputError) as exc:
        save()
    assert f"field 'directory': {named}" in str(exc.value), str(exc.value)
    assert tree(work) == before


def test_api_guards(inputs: Path, work: Path) -> None:
    """Guards: what the fixes must keep taking."""
    from topicslab import dp
    from topicslab import model as tm

    m = tm.load_model(inputs / "model")
    assert tm.sample(m, 5, seed=1, first_user=2**63 - 5).user_ids[-1] == 2**63 - 1
    assert tm.sample(m, 5, seed=2**63 - 1).n_users == 5
    assert dp.load_statistics(inputs / "stats", k=5).k == 5
    tm.save_model(work / "m", m)
    tm.save_model(work / "m", m)  # a model over a model
    dp.save_statistics(work / "s", dp.load_statistics(inputs / "stats"))
    dp.save_statistics(work / "s", dp.load_statistics(inputs / "stats"))
    names = tm.sample_to_file(m, work / "o.tfrecord", 5, seed=1, format="tfrecord", shards=5,
                              progress=False)
    assert len(names) == 5
    assert tm.fit(dp.load_statistics(inputs / "stats-week-0"),
                  tm.PersistentTypes(types=2, modes=1, weeks=1), tm.FullObjective(steps=1),
                  progress=False, device="cpu", seed=3, threads=1).model.weeks == 1
    assert dataclasses.is_dataclass(_fid(weeks=[1, 2]))
