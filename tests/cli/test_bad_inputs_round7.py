"""Bad input, the seventh independent round (issue 15): comma lists with a value left out
(``1,,2``, ``hamming,``), a stage summary in ``run``'s ``stages.json`` edited by hand,
inputs that change between the command's checks and its read, the learned attack's options
at their edges, and the Python API given NaN, fractional or out-of-range topic arrays, text
seeds and weeks, and sizes that cannot fit in memory.

The same contract as ``test_bad_inputs.py``: exit code 2, one line ``error: ...`` naming the
offending option, file, row or field, no traceback, and nothing written (the test's directory,
also the current directory, is unchanged, and so are the inputs). Every case fails before any
real work (the one fit is a single step on 300 users), so the module runs in seconds.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from refusal import check_refused, fit_small_model, invoke, invoke_refused, random_profiles, tree

from topicslab import io as tio


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A 4-week population of 300 users (taxonomy v2), the same ids under v1, one whose
    every week is empty, its DP statistics, a one-step model and an attack model (epochs 0)."""
    from topicslab import dp
    from topicslab.datamodel import TopicSets

    d = tmp_path_factory.mktemp("round7")
    sets = random_profiles(300, 4, seed=0)
    ids = np.arange(300, dtype=np.int64)
    data = TopicSets(sets, "v2", ids)
    pop = d / "pop.parquet"
    tio.write_sets(pop, data)
    tio.write_sets(d / "v1.parquet", TopicSets(sets, "v1", ids))
    tio.write_sets(d / "empty.parquet", TopicSets(np.full_like(sets, -1), "v2", ids))
    dp.save_statistics(d / "stats", dp.compute_statistics(data, epsilon=1e3, delta=1e-6,
                                                          seed=0))
    fit_small_model(invoke, d)
    res = invoke(["attack-train", "--sets", str(pop), "--out", str(d / "attack"),
                              "--epochs", "0", "--validation", "50", "--no-progress"])
    assert res.exit_code == 0, res.output
    return {"pop": pop, "dir": d}


OBS = ["observe", "--sets", "{in}/pop.parquet", "--out", "{out}.parquet"]
STATS = ["stats", "--sets", "{in}/pop.parquet", "--out", "{out}", "--epsilon", "1000"]
FIT = ["fit", "--stats", "{in}/stats", "--out", "{out}", "--types", "2", "--modes", "1",
       "--steps", "1", "--no-progress"]
REID = ["reid", "--sets", "{in}/pop.parquet", "--no-progress", "--trials", "1", "--targets",
        "10"]
LEARNED = [*REID, "--attack", "learned", "--attack-model", "{in}/attack"]
TRAIN = ["attack-train", "--sets", "{in}/pop.parquet", "--no-progress", "--out", "{out}",
         "--epochs", "1"]
DISC = ["disclosure", "-q", "--personas", "3", "--epochs", "2"]
QIF_SETS = ["qif", "--sets", "{in}/pop.parquet"]
INGEST = ["ingest", "--visits", "{in}/visits.csv", "--domains", "{in}/domains.csv", "--out",
          "{out}.parquet", "-q"]

CASES: list[tuple[str, list[str], str]] = [
    # defects of this round, fixed: a comma list with a value left out ran on the values
    # left, silently ("1,,2" measured r = 1 and 2; "hamming," ran hamming alone)
    ("qif-epochs-empty-item", ["qif", "--epochs", "1,,2"], "field '--epochs': cannot read"),
    ("qif-epochs-trailing-comma", ["qif", "--epochs", "1,"], "field '--epochs'"),
    ("qif-weeks-empty-item", [*QIF_SETS, "--weeks", "0,,1"], "field '--weeks': cannot read"),
    ("disc-rho-trailing-comma", [*DISC, "--rho", "0.1,"],
     "field '--rho': cannot read rho: a value is missing between the commas"),
    ("stats-weeks-empty-item", [*STATS, "--weeks", "0,,1"], "field '--weeks': cannot read"),
    ("stats-split-empty-item", [*STATS, "--split", "0.5,,0.5"], "field '--split'"),
    ("reid-attack-trailing-comma", [*REID, "--attack", "hamming,"],
     "field '--attack': a value is missing between the commas"),
    ("reid-attack-empty-item", [*REID, "--attack", "hamming,,asymmetric"],
     "field '--attack'"),
    ("reid-weeks-empty-item", [*REID, "--weeks", "1,,2"], "field '--weeks': cannot read"),
    # new kinds that were already refused: a list of no value at all
    ("qif-epochs-only-a-comma", ["qif", "--epochs", ","], "no number of epochs given"),
    ("disc-rho-only-a-comma", [*DISC, "--rho", ","], "field '--rho'"),
    ("reid-weeks-only-a-comma", [*REID, "--weeks", ","], "field '--weeks': no weeks"),
    # the learned attack: a model of another r, another taxonomy, or not a learned attack
    ("learned-another-r", [*LEARNED, "--weeks", "2"], "trained on r = 4 call-weeks, not 2"),
    ("learned-weeks-range", [*LEARNED, "--weeks", "1..4"], "takes one --weeks"),
    ("learned-model-is-a-dp-model", [*REID, "--attack", "learned", "--attack-model",
                                     "{in}/model"],
     "model, field '--attack-model': is a directory holding a fitted model"),
    ("learned-on-v1-sets", ["reid", "--sets", "{in}/v1.parquet", "--no-progress", "--trials",
                            "1", "--attack", "learned", "--attack-model", "{in}/attack"],
     "field '--attack-model': the learned attack was trained on taxonomy v2"),
    ("learned-device-cpu-0", [*LEARNED, "--device", "cpu:0"], "field '--device'"),
    ("learned-engine", [*LEARNED, "--engine", "brute"], "field '--engine'"),
    ("train-hard-fraction-nan", [*TRAIN, "--hard-fraction", "nan"], "field '--hard-fraction'"),
    ("train-negatives-huge", [*TRAIN, "--negatives", "1000000000000"],
     "field '--negatives'"),
    ("train-lookback-past-the-weeks", [*TRAIN, "--lookback", "2"], "field '--weeks'"),
    # edges of least-used options: negative zero, NaN through "ln", unicode, huge
    ("fit-lr-negative-zero", [*FIT, "--lr", "-0"], "field '--lr'"),
    ("fit-max-minutes-negative-zero", [*FIT, "--max-minutes", "-0"], "field '--max-minutes'"),
    ("stats-delta-negative-zero", [*STATS, "--delta", "-0"], "field '--delta'"),
    ("stats-epsilon-ln-nan", [*STATS[:-2], "--epsilon", "lnnan"], "field '--epsilon'"),
    ("ingest-epoch-start-full-width-digits", [*INGEST, "--epoch-start", "２０２４-01-01"],
     "field '--epoch-start'"),
    ("ingest-week-column-empty", [*INGEST, "--week-column", ""], "field '--week-column'"),
    ("convert-shards-past-five-digits", ["convert", "{in}/pop.parquet", "{out}.tfrecord",
                                         "--shards", "1000000"], "field '--shards'"),
    ("obs-sites-past-the-memory", [*OBS, "--sites", "100000000000"], "field '--sites'"),
    ("reid-bounds-on-empty-profiles", ["reid", "--sets", "{in}/empty.parquet", "--bounds",
                                       "--no-progress"], "field 'sets'"),
]


@pytest.mark.parametrize(("name", "args", "named"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_refused(inputs: dict[str, Path], work: Path, name: str,
                              args: list[str], named: str) -> None:
    d = inputs["dir"]
    if not (d / "visits.csv").exists():
        (d / "visits.csv").write_text("user_id,timestamp,url\n1,2024-01-01T10:00:00Z,"
                                      "https://example.com/a\n")
        (d / "domains.csv").write_text("domain,topics\nexample.com,1;4\n")
    invoke_refused(invoke, args, d, work, named)


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


@pytest.mark.parametrize(("module", "name", "victim", "args", "named"), [
    ("topicslab.io", "read_sets", "pop.parquet", ["stats", "--sets", "{in}/pop.parquet",
                                                  "--out", "{out}", "--epsilon", "1"],
     "not a valid Parquet file"),
    ("topicslab.model", "load_model", "model/model.safetensors",
     ["sample", "--model", "{in}/model", "--users", "5", "--seed", "1", "--out",
      "{out}.parquet"], "cannot read safetensors"),
    ("topicslab.attacks.learned", "load_attack", "attack/model.safetensors", LEARNED,
     "cannot read safetensors"),
], ids=["stats-sets", "sample-model", "reid-attack-model"])
def test_an_input_cut_short_after_the_checks_is_one_line(
        inputs: dict[str, Path], work: Path, tmp_path_factory: pytest.TempPathFactory,
        monkeypatch: pytest.MonkeyPatch, module: str, name: str, victim: str,
        args: list[str], named: str) -> None:
    """A file truncated between the command's up-front checks and its read (a copy still
    running, another process): the reader's own refusal, one line, nothing written."""
    import importlib
    import shutil

    copy = tmp_path_factory.mktemp("race") / "in"
    shutil.copytree(inputs["dir"], copy)
    mod = importlib.import_module(module)
    read: Callable[..., object] = getattr(mod, name)

    def cut_then_read(*a: object, **k: object) -> object:
        _truncate(copy / victim)
        return read(*a, **k)

    monkeypatch.setattr(mod, name, cut_then_read)
    before = tree(work)
    res = invoke([a.format(**{"in": copy, "out": work / "out"}) for a in args])
    check_refused(res.output, res.exit_code, named)
    assert tree(work) == before


def test_batch_users_past_the_users_is_said(inputs: dict[str, Path], work: Path) -> None:
    """--batch-users past the population was clamped without a word (--queries and
    --validation already said so)."""
    res = invoke(["attack-train", "--sets", str(inputs["pop"]), "--out",
                              str(work / "a"), "--epochs", "1", "--no-progress",
                              "--batch-users", "1000000"])
    assert res.exit_code == 0, res.output
    assert "note: --batch-users 1,000,000 but only 300 users" in " ".join(res.output.split())


def test_a_stage_summary_edited_by_hand_is_recomputed(tmp_path: Path) -> None:
    """``run`` reused a stage whose summary in stages.json was edited by hand (a key deleted:
    KeyError 'attacks', exit 1; a number made text: TypeError, or an error naming --users);
    the summary's hash is recorded now, and a changed or missing one recomputes the stage."""
    from topicslab.experiment.cache import StageCache

    cache = StageCache(tmp_path)
    key = cache.key("reid_population", {"trials": 1})
    cache.record("reid_population", key, {"attacks": {"hamming": [0.5]}, "users": 20})
    assert StageCache(tmp_path).lookup("reid_population", key).summary is not None
    record_file = tmp_path / "stages.json"
    record = json.loads(record_file.read_text())
    for edit in ({"users": 20}, {"attacks": {"hamming": [0.5]}, "users": "many"}):
        record["reid_population"]["summary"] = edit
        record_file.write_text(json.dumps(record))
        found = StageCache(tmp_path).lookup("reid_population", key)
        assert found.summary is None and "changed after the stage wrote it" in found.reason
    del record["reid_population"]["summary_sha256"]
    record_file.write_text(json.dumps(record))
    found = StageCache(tmp_path).lookup("reid_population", key)
    assert found.summary is None and "no hash of its summary" in found.reason


def test_python_api_refuses_round7(inputs: dict[str, Path]) -> None:
    """From Python: TopicSets cast NaN and fractions to topic ids and kept ids past the
    taxonomy; Corollary 1 failed inside numba (m = 469.5) or on the allocation (m = 10^12)
    and took q_in = 5 and fractional topic ids; risk_curve read weeks="12" as [1, 2] and
    measured a repeated r twice; measure_risk and compute_statistics took text seeds;
    compute_statistics released noise for no users; observe, generate and kron_power ran
    into a MemoryError."""
    from topicslab import api, attacks, dp, population, qif
    from topicslab.datamodel import TopicSets
    from topicslab.errors import InputError, ParameterError
    from topicslab.qif.coverage import corollary1_four_weeks

    sets = tio.read_sets(inputs["pop"])
    with pytest.raises(ParameterError, match="whole numbers, got nan"):
        TopicSets(np.full((2, 4, 5), np.nan), "v2")
    with pytest.raises(ParameterError, match=r"whole numbers, got 10\.5"):
        TopicSets(sets.sets + 0.5, "v2")
    with pytest.raises(InputError, match=r"indices 0\.\.468 of taxonomy v2"):
        TopicSets(sets.sets + 1000, "v2")
    assert TopicSets(sets.sets.astype(float), "v2").sets.dtype == np.int16  # whole floats
    profiles = sets.sets
    with pytest.raises(ParameterError, match="m must be an integer"):
        corollary1_four_weeks(profiles, 469.5, 0.5, 0.01)  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"needs about .* GiB of memory"):
        corollary1_four_weeks(profiles, 10**12, 0.5, 0.01)
    with pytest.raises(ParameterError, match=r"q_in must be in 0\.\.1"):
        corollary1_four_weeks(profiles, 469, 5.0, 0.01)
    with pytest.raises(ParameterError, match="profiles must hold whole numbers"):
        corollary1_four_weeks(profiles + 0.5, 469, 0.5, 0.01)
    with pytest.raises(TypeError, match="sequence of ints"):
        attacks.risk_curve(sets, weeks="12", progress=False)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="weeks must be distinct"):
        attacks.risk_curve(sets, weeks=[1, 1], trials=1, progress=False)
    with pytest.raises(ParameterError, match="seed must be an integer"):
        attacks.measure_risk(sets, seed="1", trials=1, progress=False)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="seed must be an integer"):
        dp.compute_statistics(sets, epsilon=1.0, delta=1e-6, seed="0")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="no users"):
        dp.compute_statistics(sets.subset(users=slice(0, 0)), epsilon=1.0, delta=1e-6)
    with pytest.raises(InputError, match=r"field 'sites'.*GiB of memory"):
        api.observe(sets.sets, sites=10**9)
    with pytest.raises(InputError, match=r"field 'n_users'.*GiB of memory"):
        population.generate(10**13)
    with pytest.raises(InputError, match=r"field 'n'.*GiB of memory"):
        qif.kron_power(np.eye(2), 60)


def test_run_targets_past_the_users_is_said(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """``run --users 500 --targets 100000`` clamped the targets to the users without a word
    (``reid`` says so); checked before any stage, where the run's sizes are checked."""
    from topicslab.cli.run import _check_size

    _check_size("smoke", 500, {"targets": 100_000}, users_known=True, out_dir=tmp_path)
    assert "note: --targets 100,000 but only 500 users" in " ".join(
        capsys.readouterr().err.split())
    _check_size("smoke", 500, {"targets": 400}, users_known=True, out_dir=tmp_path)
    assert "note" not in capsys.readouterr().err
