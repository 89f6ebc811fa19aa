"""Bad input to every command (issue 15): a table of hand-made cases and a property test.

Each case must end with exit code 2 and one line ``error: ...`` naming the offending option or
file, no traceback, and nothing written: the test's directory (the current directory too, so
default output names are covered) is unchanged afterwards. The inputs are tiny and made once
per session; every case fails before any real work, so the module runs in seconds.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from refusal import check_refused
from typer.testing import CliRunner

from topicslab import _paths
from topicslab import io as tio
from topicslab.cli import app

runner = CliRunner()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A 4-week population, its DP statistics (with and without a ledger), a fitted model,
    a CSV with a six-topic week and broken parameter files."""
    from topicslab import dp
    from topicslab.datamodel import TopicSets
    from topicslab.taxonomy import resolve

    d = tmp_path_factory.mktemp("bad-inputs")
    tax = resolve("v2")
    rng = np.random.default_rng(0)
    sets = np.stack([np.stack([rng.choice(40, 5, replace=False) for _ in range(4)])
                     for _ in range(300)])
    sets = np.sort(sets, axis=-1).astype(np.int16)
    data = TopicSets(sets, tax, np.arange(300, dtype=np.int64))
    pop = d / "pop.parquet"
    tio.write_sets(pop, data)
    stats = d / "stats"
    dp.save_statistics(stats, dp.compute_statistics(data, epsilon=1e3, delta=1e-6, seed=0))
    no_ledger = d / "no-ledger"
    shutil.copytree(stats, no_ledger)
    (no_ledger / "privacy_ledger.json").unlink()
    # frequencies far above those of top-5 sets: the k inferred without a ledger is huge
    within = json.loads((no_ledger / "q_within.json").read_text())
    for row in within:
        row["frequency"] = 0.9
    (no_ledger / "q_within.json").write_text(json.dumps(within))
    _tampered_statistics(stats, d)
    import gzip

    import pyarrow as pa
    import pyarrow.parquet as pq

    tio.write_sets(d / "pop-v1.parquet", TopicSets(sets[:50], resolve("v1"),
                                                    np.arange(50, dtype=np.int64)))
    csv = d / "pop.csv"
    tio.write_sets(csv, data.subset(slice(0, 20)))
    shutil.copy(pop, d / "noext")
    (d / "lead-blank.csv").write_text("\n" + csv.read_text())
    (d / "tabs.csv").write_text(csv.read_text().replace(",", "\t"))
    (d / "long-bigweek.csv").write_text("user_id,week,topic_id\n1,0,1\n1,1000000000,2\n")
    (d / "header-only.csv").write_text(csv.read_text().splitlines()[0] + "\n")
    (d / "truncated.csv.gz").write_bytes(gzip.compress(csv.read_bytes())[:200])
    table = pq.read_table(pop)
    meta = dict(table.schema.metadata)
    block = json.loads(meta[b"topicslab"])
    big = pa.array([2**64 - 1 - i for i in range(table.num_rows)], pa.uint64())
    pq.write_table(table.set_column(0, "user_id", big).replace_schema_metadata(meta),
                   d / "u64.parquet")
    for name, bad_k in (("kbig", 10**6), ("kneg", -1), ("kstr", "five")):
        meta_k = {**meta, b"topicslab": json.dumps({**block, "k": bad_k}).encode()}
        pq.write_table(table.replace_schema_metadata(meta_k), d / f"meta-{name}.parquet")
    model = d / "model"
    res = runner.invoke(app, ["fit", "--stats", str(stats), "--out", str(model), "--types",
                              "2", "--modes", "1", "--steps", "1", "--no-progress"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["observe", "--sets", str(pop), "--out",
                              str(d / "traces.parquet")])
    assert res.exit_code == 0, res.output
    six = d / "six.csv"
    ids = [str(i) for i in tax.ids[:6]]
    six.write_text("user_id,epoch_0_topics,epoch_1_topics\n"
                   f"1,{';'.join(ids[:3])},{ids[0]}\n2,{';'.join(ids)},{ids[1]}\n")
    params = {"truncated.json": '{"drift_base": ', "list.json": "[1, 2]",
              "unknown.json": '{"no_such_parameter": 1}'}
    for name, text in params.items():
        (d / name).write_text(text)
    (d / "binary.json").write_bytes(b"\xff\xfe\x00garbage")
    from topicslab.population.params import reference_path

    ref = json.loads(reference_path("v2").read_text())
    for name, change in {"drift-str": {"drift_base": "abc"}, "explore-neg": {"explore_prob": -5},
                         "explore-7": {"explore_prob": 7.0},
                         "sigma-nan": {"activity_log_sigma": float("nan")},
                         "burn-float": {"burn_in_weeks": 2.5}, "tax-v9": {"taxonomy": "v9"},
                         "tax-v1": {"taxonomy": "v1"},
                         "pop-short": {"popularity": dict(list(ref["popularity"].items())[:10])},
                         "pop-nan": {"popularity": {**ref["popularity"], "1": "NaN"}},
                         "pop-unknown": {"popularity": {**ref["popularity"], "999999": 1.0}},
                         }.items():
        (d / f"params-{name}.json").write_text(json.dumps({**ref, **change}))
    (d / "script.json").write_text("! probe: help\nhello\n")
    for name in ("p.json", "x.json", "x.png", "p.parquet"):  # inputs an output must not replace
        (d / name).write_text("input\n")
    return {"pop": pop, "stats": stats, "no_ledger": no_ledger, "model": model, "six": six,
            "dir": d}


def _tampered_statistics(stats: Path, d: Path) -> None:
    """Copies of ``stats`` with one file edited, removed or replaced by a directory."""

    def edit(name: str, file: str, change: object) -> None:
        copy = d / name
        shutil.copytree(stats, copy)
        path = copy / file
        if change is None:
            path.unlink()
        elif change == "dir":
            path.unlink()
            path.mkdir()
        else:
            doc = json.loads(path.read_text())
            path.write_text(json.dumps(change(doc)))  # type: ignore[operator]

    def cb(**kw: object):  # type: ignore[no-untyped-def]
        return lambda led: {**led, "contribution_bounding": {**led["contribution_bounding"],
                                                              **kw}}

    def neg_first(rows: list[dict[str, object]]) -> list[dict[str, object]]:
        rows[0]["frequency"] = -0.1
        return rows

    edit("st-single-short", "q_single.json", lambda rows: rows[:10])
    edit("st-single-wrapped", "q_single.json", lambda rows: {"records": rows[:5]})
    edit("st-within-empty", "q_within.json", lambda rows: [])
    edit("st-across-empty", "q_across.json", lambda rows: [])
    edit("st-single-neg", "q_single.json", neg_first)
    edit("st-single-missing", "q_single.json", None)
    edit("st-single-dir", "q_single.json", "dir")
    edit("st-tax-missing", "taxonomy.json", None)
    edit("st-led-dir", "privacy_ledger.json", "dir")
    edit("st-led-k-float", "privacy_ledger.json", cb(k=5.7))
    edit("st-led-k-0", "privacy_ledger.json", cb(k=0))
    edit("st-led-k-3", "privacy_ledger.json", cb(k=3))
    edit("st-led-k-str", "privacy_ledger.json", cb(k="five"))
    edit("st-led-cb-list", "privacy_ledger.json",
         lambda led: {**led, "contribution_bounding": [5]})
    edit("st-led-n-str", "privacy_ledger.json",
         lambda led: {**led, "extra": {"n_estimate": "lots"}})
    edit("st-led-mech-str", "privacy_ledger.json", lambda led: {**led, "mechanisms": "oops"})
    edit("st-led-claimed-list", "privacy_ledger.json", lambda led: {**led, "claimed": [1]})


def _fill(args: list[str], inputs: dict[str, Path], work: Path) -> list[str]:
    names = {"pop": inputs["pop"], "stats": inputs["stats"], "model": inputs["model"],
             "six": inputs["six"], "no_ledger": inputs["no_ledger"], "in": inputs["dir"],
             "out": work / "out", "file": work / "a-file", "dir": work / "a-dir",
             "ro": work / "read-only", "missing": work / "missing"}
    return [a.format(**{k: str(v) for k, v in names.items()}) for a in args]


#: the options the base command lines above give with a value, which a case may give again
#: to replace it (the command itself refuses an option given twice)
_REPLACEABLE = ("--users", "--chunk-users", "--sets", "--stats", "--model", "--seed",
                "--trials", "--targets", "--out")


def _last_wins(args: list[str]) -> list[str]:
    """``args`` without the earlier of two values given to one of ``_REPLACEABLE``."""
    kept: list[str] = []
    i = 0
    while i < len(args):
        if args[i] in _REPLACEABLE and args[i] in args[i + 2:]:
            i += 2
            continue
        kept.append(args[i])
        i += 1
    return kept


def _tree(root: Path) -> dict[str, tuple[bool, int]]:
    return {str(p.relative_to(root)): (p.is_dir(), 0 if p.is_dir() else p.stat().st_size)
            for p in root.rglob("*")}


def _stamps(root: Path) -> dict[str, tuple[bool, int, int]]:
    return {str(p.relative_to(root)): (p.is_dir(), p.stat().st_size, p.stat().st_mtime_ns)
            for p in root.rglob("*") if not p.is_dir()}



@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An output area: a regular file, an empty directory and a read-only directory."""
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "a-dir").mkdir()
    ro = tmp_path / "read-only"
    ro.mkdir()
    ro.chmod(0o555)
    real = _paths._writable
    # root may write anywhere: report the read-only directory as the file system would
    monkeypatch.setattr(_paths, "_writable",
                        lambda d: real(d) and Path(d).resolve() != ro.resolve())
    monkeypatch.chdir(tmp_path)
    return tmp_path


POP = ["population", "--users", "1000", "--chunk-users", "1000"]
OBS = ["observe", "--sets", "{pop}"]
STATS = ["stats", "--sets", "{pop}"]
FIT = ["fit", "--stats", "{stats}", "--no-progress"]
SAMPLE = ["sample", "--model", "{model}", "--users", "10", "--seed", "1"]
VAL = ["validate", "--stats", "{stats}", "--model", "{model}"]
FIT_ON = ["fit", "--no-progress", "--out", "{out}", "--stats"]
REID = ["reid", "--sets", "{pop}", "--no-progress", "--trials", "1", "--targets", "10"]

CASES: list[tuple[str, list[str], str]] = [
    # population: output path, options, parameter files
    ("pop-csv-name", [*POP, "--out", "{out}.csv"], "--out"),
    ("pop-tfrecord-name", [*POP, "--out", "{out}.tfrecord"], "--out"),
    ("pop-under-file", [*POP, "--out", "{file}/x.parquet"], "--out"),
    ("pop-existing-dir", [*POP, "--out", "{dir}"], "--out"),
    ("pop-read-only-dir", [*POP, "--out", "{ro}/x.parquet"], "--out"),
    ("pop-missing-parent", [*POP, "--out", "{missing}/x.parquet"], "--out"),
    ("pop-k-500", [*POP, "--k", "500", "--out", "{out}.parquet"], "--k"),
    ("pop-k-above-v1", [*POP, "--k", "400", "--taxonomy", "v1", "--out", "{out}.parquet"],
     "--k"),
    ("pop-taxonomy-v3", [*POP, "--taxonomy", "v3", "--out", "{out}.parquet"], "--taxonomy"),
    ("pop-params-missing", [*POP, "--params", "{missing}.json", "--out", "{out}.parquet"],
     "missing.json"),
    ("pop-params-truncated", [*POP, "--params", "{in}/truncated.json", "--out",
                              "{out}.parquet"], "truncated.json"),
    ("pop-params-list", [*POP, "--params", "{in}/list.json", "--out", "{out}.parquet"],
     "list.json"),
    ("pop-params-unknown", [*POP, "--params", "{in}/unknown.json", "--out", "{out}.parquet"],
     "unknown.json"),
    ("pop-params-binary", [*POP, "--params", "{in}/binary.json", "--out", "{out}.parquet"],
     "binary.json"),
    ("pop-users-0", [*POP, "--users", "0", "--out", "{out}.parquet"], "--users"),
    ("pop-users-text", [*POP, "--users", "many", "--out", "{out}.parquet"], "--users"),
    ("pop-weeks-0", [*POP, "--weeks", "0", "--out", "{out}.parquet"], "--weeks"),
    ("pop-persistence-2", [*POP, "--persistence", "2", "--out", "{out}.parquet"],
     "--persistence"),
    ("pop-chunk-10", [*POP, "--chunk-users", "10", "--out", "{out}.parquet"], "--chunk-users"),
    ("pop-weeks-1024", [*POP, "--weeks", "1024", "--out", "{out}.parquet"], "--weeks"),
    ("pop-weeks-huge", [*POP, "--weeks", "1000000000000000", "--out", "{out}.parquet"],
     "--weeks"),
    ("pop-users-past-the-disk", [*POP, "--users", "1000000000000000", "--out",
                                 "{out}.parquet"], "--users"),
    ("pop-k-0-v1", [*POP, "--k", "350", "--taxonomy", "v1", "--out", "{out}.parquet"], "--k"),
    ("pop-unknown-option", [*POP, "--colour", "red"], "--colour"),
    # observe
    ("obs-weeks-0", [*OBS, "--weeks", "0", "--out", "{out}.parquet"], "--weeks"),
    ("obs-weeks-5", [*OBS, "--weeks", "5", "--out", "{out}.parquet"], "--weeks"),
    ("obs-lookback-50", [*OBS, "--lookback", "50", "--out", "{out}.parquet"], "--lookback"),
    ("obs-weeks-and-lookback", [*OBS, "--weeks", "3", "--lookback", "3", "--out",
                                "{out}.parquet"], "--weeks"),
    ("obs-p-1.5", [*OBS, "--p", "1.5", "--out", "{out}.parquet"], "--p"),
    ("obs-p-negative", [*OBS, "--p", "-0.1", "--out", "{out}.parquet"], "--p"),
    ("obs-lookback-0", [*OBS, "--lookback", "0", "--out", "{out}.parquet"], "--lookback"),
    ("obs-sites-memory", [*OBS, "--sites", "1000000000000", "--out", "{out}.parquet"],
     "--sites"),
    ("obs-sites-0", [*OBS, "--sites", "0", "--out", "{out}.parquet"], "--sites"),
    ("obs-witnessed-2", [*OBS, "--witnessed", "2", "--out", "{out}.parquet"], "--witnessed"),
    ("obs-csv-name", [*OBS, "--out", "{out}.csv"], "--out"),
    ("obs-existing-dir", [*OBS, "--out", "{dir}"], "--out"),
    ("obs-under-file", [*OBS, "--out", "{file}/t.parquet"], "--out"),
    ("obs-read-only", [*OBS, "--out", "{ro}/t.parquet"], "--out"),
    ("obs-six-topics", ["observe", "--sets", "{six}", "--out", "{out}.parquet"], "six.csv"),
    ("obs-sets-missing", ["observe", "--sets", "{missing}.parquet", "--out", "{out}.parquet"],
     "missing.parquet"),
    # stats
    ("stats-out-file", [*STATS, "--out", "{file}"], "--out"),
    ("stats-out-under-file", [*STATS, "--out", "{file}/sub"], "--out"),
    ("stats-out-read-only", [*STATS, "--out", "{ro}"], "--out"),
    ("stats-out-in-read-only", [*STATS, "--out", "{ro}/stats"], "--out"),
    ("stats-epsilon-0", [*STATS, "--out", "{out}", "--epsilon", "0"], "--epsilon"),
    ("stats-taxonomy-contradicts-file", [*STATS, "--out", "{out}", "--taxonomy", "v1"],
     "field '--taxonomy': the file says taxonomy v2"),
    ("stats-split", [*STATS, "--out", "{out}", "--split", "1,2"], "--split"),
    ("stats-delta-2", [*STATS, "--out", "{out}", "--delta", "2"], "--delta"),
    ("stats-k-500", [*STATS, "--out", "{out}", "--k", "500"], "--k"),
    ("stats-weeks-past-end", [*STATS, "--out", "{out}", "--weeks", "0,9"], "--weeks"),
    ("stats-six-topics", ["stats", "--sets", "{six}", "--out", "{out}"], "six.csv"),
    # stats: the release's parameter objects (PrivacyBudget, ContributionBound)
    ("stats-epsilon-text", [*STATS, "--out", "{out}", "--epsilon", "lots"], "--epsilon"),
    ("stats-epsilon-ln0", [*STATS, "--out", "{out}", "--epsilon", "ln0"], "--epsilon"),
    ("stats-epsilon-1e300", [*STATS, "--out", "{out}", "--epsilon", "1e300"], "--epsilon"),
    ("stats-epsilon-inf", [*STATS, "--out", "{out}", "--epsilon", "inf"], "--epsilon"),
    ("stats-delta-0", [*STATS, "--out", "{out}", "--delta", "0"], "--delta"),
    ("stats-accounting", [*STATS, "--out", "{out}", "--accounting", "loose"],
     "--accounting"),
    ("stats-bound", [*STATS, "--out", "{out}", "--bound", "clip"], "--bound"),
    ("stats-k-1", [*STATS, "--out", "{out}", "--k", "1"], "--k"),
    ("stats-split-text", [*STATS, "--out", "{out}", "--split", "half,half"], "--split"),
    ("stats-split-length", [*STATS, "--out", "{out}", "--split", "0.5,0.5"], "--split"),
    ("stats-split-negative", [*STATS, "--out", "{out}", "--split", "1.5,-1,0.5"],
     "--split"),
    ("stats-weeks-repeated", [*STATS, "--out", "{out}", "--weeks", "0,0"], "--weeks"),
    # the across-week statistics are read as week J-1 -> J: a gap or a reversed pair was
    # released and then fitted as consecutive weeks
    ("stats-weeks-with-a-gap", [*STATS, "--out", "{out}", "--weeks", "0,2"], "--weeks"),
    ("stats-weeks-backwards", [*STATS, "--out", "{out}", "--weeks", "1,0"], "--weeks"),
    ("stats-weeks-negative", [*STATS, "--out", "{out}", "--weeks", "-1,0"], "--weeks"),
    ("stats-weeks-text", [*STATS, "--out", "{out}", "--weeks", "first"], "--weeks"),
    # fit
    ("fit-lr-negative", [*FIT, "--out", "{out}", "--lr", "-1"], "--lr"),
    ("fit-lr-0", [*FIT, "--out", "{out}", "--lr", "0"], "--lr"),
    ("fit-lr-nan", [*FIT, "--out", "{out}", "--lr", "nan"], "--lr"),
    ("fit-lr-1e300", [*FIT, "--out", "{out}", "--lr", "1e300"], "--lr"),
    ("fit-weeks-100000", [*FIT, "--out", "{out}", "--weeks", "100000"], "--weeks"),
    ("fit-weeks-0", [*FIT, "--out", "{out}", "--weeks", "0"], "--weeks"),
    ("fit-types-0", [*FIT, "--out", "{out}", "--types", "0"], "--types"),
    ("fit-no-ledger", ["fit", "--stats", "{no_ledger}", "--out", "{out}"], "privacy_ledger"),
    ("fit-too-big", [*FIT, "--out", "{out}", "--model", "paper", "--types", "10000000"],
     "--types"),
    ("fit-too-many-modes", [*FIT, "--out", "{out}", "--types", "2", "--modes", "100000000"],
     "--modes"),
    ("fit-out-file", [*FIT, "--out", "{file}"], "--out"),
    ("fit-out-read-only", [*FIT, "--out", "{ro}/model"], "--out"),
    ("fit-json-txt", [*FIT, "--out", "{out}", "--json", "{out}.txt"], "--json"),
    ("fit-json-dir", [*FIT, "--out", "{out}", "--json", "{dir}"], "--json"),
    ("fit-export-not-paper", [*FIT, "--out", "{out}", "--export-release", "{out}.json"],
     "--export-release"),
    ("fit-optimizer", [*FIT, "--out", "{out}", "--optimizer", "sgd"], "--optimizer"),
    ("fit-model", [*FIT, "--out", "{out}", "--model", "mixture"], "--model"),
    ("fit-max-minutes-0", [*FIT, "--out", "{out}", "--max-minutes", "0"], "--max-minutes"),
    ("fit-stats-missing", ["fit", "--stats", "{missing}", "--out", "{out}"], "missing"),
    ("fit-target-negative", [*FIT, "--out", "{out}", "--target", "-1"], "--target"),
    ("fit-device", [*FIT, "--out", "{out}", "--device", "tpu"], "--device"),
    ("fit-threads-past-the-cpus", [*FIT, "--out", "{out}", "--threads", "100000"],
     "--threads"),
    # sample
    ("sample-csv-name", [*SAMPLE, "--out", "{out}.csv"], "--out"),
    ("sample-existing-dir", [*SAMPLE, "--out", "{dir}"], "--out"),
    ("sample-under-file", [*SAMPLE, "--out", "{file}/s.parquet"], "--out"),
    ("sample-taxonomy-v3", [*SAMPLE, "--taxonomy", "v3", "--out", "{out}.parquet"],
     "--taxonomy"),
    ("sample-taxonomy-mismatch", [*SAMPLE, "--taxonomy", "v1", "--out", "{out}.parquet"],
     "--taxonomy"),
    ("sample-format-csv", [*SAMPLE, "--format", "csv", "--out", "{out}.csv"], "--format"),
    ("sample-format-vs-name", [*SAMPLE, "--format", "tfrecord", "--out", "{out}.parquet"],
     "--out"),
    ("sample-weeks-huge", [*SAMPLE, "--weeks", "100000000000", "--out", "{out}.parquet"],
     "--weeks"),
    ("sample-users-negative", [*SAMPLE, "--users", "-1", "--out", "{out}.parquet"],
     "--users"),
    ("sample-shards-past-the-users", [*SAMPLE, "--shards", "11", "--out", "{out}.tfrecord"],
     "--shards"),
    ("sample-shards-six-digits", ["sample", "--model", "{model}", "--users", "1000000",
                                  "--seed", "1", "--shards", "100000", "--out",
                                  "{out}.tfrecord"], "--shards"),
    ("sample-shards-parquet", [*SAMPLE, "--shards", "2", "--out", "{out}.parquet"],
     "--shards"),
    ("sample-users-past-the-disk", ["sample", "--model", "{model}", "--users",
                                    "1000000000000000", "--seed", "1", "--out",
                                    "{out}.parquet"], "--users"),
    # validate
    ("val-synthetic-alone", [*VAL, "--json", "{out}.json", "--synthetic",
                             "{missing}.parquet"], "--synthetic"),
    ("val-synthetic-missing", [*VAL, "--json", "{out}.json", "--population", "{pop}",
                               "--synthetic", "{missing}.parquet"], "missing.parquet"),
    ("val-population-missing", [*VAL, "--json", "{out}.json", "--population",
                                "{missing}.parquet"], "missing.parquet"),
    ("val-weeks-100", [*VAL, "--json", "{out}.json", "--population", "{pop}", "--weeks",
                       "100"], "--weeks"),
    ("val-users-huge", [*VAL, "--json", "{out}.json", "--population", "{pop}", "--users",
                        "1000000000000"], "--users"),
    ("val-users-alone", [*VAL, "--json", "{out}.json", "--users", "10"], "--users"),
    ("val-risk-alone", [*VAL, "--json", "{out}.json", "--risk"], "--risk"),
    ("val-json-txt", [*VAL, "--json", "{out}.txt"], "--json"),
    ("val-json-under-file", [*VAL, "--json", "{file}/v.json"], "--json"),
    ("val-json-read-only", [*VAL, "--json", "{ro}/v.json"], "--json"),
    ("val-risk-trials-memory", [*VAL, "--json", "{out}.json", "--population", "{pop}",
                                "--risk", "--risk-trials", "1000000000000"], "--risk-trials"),
    # qif
    ("qif-epochs-million", ["qif", "--epochs", "1000000"], "--epochs"),
    ("qif-epochs-0", ["qif", "--epochs", "0"], "--epochs"),
    ("qif-epochs-range", ["qif", "--epochs", "1..100"], "--epochs"),
    ("qif-epochs-text", ["qif", "--epochs", "x"], "--epochs"),
    ("qif-week-negative", ["qif", "--sets", "{pop}", "--week", "-1"], "--week"),
    ("qif-week-9", ["qif", "--sets", "{pop}", "--week", "9"], "--week"),
    ("qif-weeks-past-end", ["qif", "--sets", "{pop}", "--weeks", "0..9"], "--weeks"),
    ("qif-weeks-negative", ["qif", "--sets", "{pop}", "--weeks", "-1,0"], "--weeks"),
    ("qif-week-without-sets", ["qif", "--week", "1"], "--week"),
    ("qif-plot-jpg", ["qif", "--plot", "{out}.jpg"], "--plot"),
    ("qif-plot-dir", ["qif", "--plot", "{dir}"], "--plot"),
    ("qif-plot-under-file", ["qif", "--plot", "{file}/x.png"], "--plot"),
    ("qif-plot-read-only", ["qif", "--plot", "{ro}/x.png"], "--plot"),
    # qif: ReportingChannel(m, s, r) and check_epochs, the tables' memory
    ("qif-m-0", ["qif", "--m", "0"], "--m"),
    ("qif-m-past-a-million", ["qif", "--m", "100000000", "--epochs", "40"], "--m"),
    ("qif-s-0", ["qif", "--s", "0"], "--s"),
    ("qif-s-above-m", ["qif", "--m", "10", "--s", "11"], "--m"),
    ("qif-s-past-1000", ["qif", "--m", "1000000000", "--s", "100000000"], "--s"),
    ("qif-s-1001", ["qif", "--s", "1001", "--m", "1000000"], "--s"),
    ("qif-r-2", ["qif", "--r", "2"], "--r"),
    ("qif-r-nan", ["qif", "--r", "nan", "--plot", "{out}.png"], "--r"),
    ("qif-epochs-huge-range", ["qif", "--epochs", "1..10000000000"], "--epochs"),
    ("qif-weeks-huge-range", ["qif", "--sets", "{pop}", "--weeks", "0..10000000000"],
     "--weeks"),
    ("reid-weeks-huge-range", [*REID, "--weeks", "1..100000000000"], "more than 10,000"),
    ("qif-sets-m-below-taxonomy", ["qif", "--sets", "{pop}", "--m", "10"], "--m"),
    ("qif-sets-m-memory", ["qif", "--sets", "{pop}", "--m", "1000000"], "--m"),
    ("qif-sets-m-past-a-million", ["qif", "--sets", "{pop}", "--m", "5000000"], "--m"),
    ("qif-sets-s-0", ["qif", "--sets", "{pop}", "--s", "0"], "--s"),
    ("qif-sets-r-negative", ["qif", "--sets", "{pop}", "--r", "-1"], "--r"),
    # reid
    ("reid-six-topics", ["reid", "--sets", "{six}", "--no-progress"], "six.csv"),
    ("reid-json-txt", [*REID, "--json", "{out}.txt"], "--json"),
    ("reid-json-dir", [*REID, "--json", "{dir}"], "--json"),
    ("reid-weeks-0", [*REID, "--weeks", "0"], "--weeks"),
    ("reid-targets-0", [*REID, "--targets", "0"], "--targets"),
    ("reid-attack", [*REID, "--attack", "nope"], "--attack"),
    ("reid-weeks-9", [*REID, "--weeks", "9"], "--weeks"),
    ("reid-lookback-9", [*REID, "--lookback", "9"], "lookback 9"),
    ("reid-p-2", [*REID, "--p", "2"], "p must be"),
    # reid: the protocol's and the mechanism's parameter objects, the memory estimate
    ("reid-p-nan", [*REID, "--p", "nan"], "--p"),
    ("reid-p-1-asymmetric", [*REID, "--p", "1", "--weeks", "1"], "--p"),
    ("reid-p-1-bounds", [*REID, "--p", "1", "--weeks", "1", "--attack", "hamming",
                         "--bounds"], "--p"),
    ("reid-lookback-0", [*REID, "--lookback", "0"], "--lookback"),
    ("reid-lookback-past-16", [*REID, "--lookback", "1000000000000000"], "--lookback"),
    ("reid-targets-text", [*REID, "--targets", "ten"], "--targets"),
    ("reid-targets-negative", [*REID, "--targets", "-3"], "--targets"),
    ("reid-trials-0", [*REID, "--trials", "0"], "--trials"),
    ("reid-trials-huge", [*REID, "--trials", "1000000000000"], "--trials"),
    ("reid-weeks-17", [*REID, "--weeks", "17"], "--weeks"),
    ("reid-weeks-range-past-16", [*REID, "--weeks", "1..20"], "--weeks"),
    ("reid-setting", [*REID, "--setting", "everyone"], "--setting"),
    ("reid-engine", [*REID, "--engine", "gpu"], "--engine"),
    ("reid-json-under-file", [*REID, "--json", "{file}/r.json"], "--json"),
    # disclosure
    ("disc-json-txt", ["disclosure", "--example", "--json", "{out}.txt"], "--json"),
    ("disc-json-under-file", ["disclosure", "--example", "--json", "{file}/x.json"], "--json"),
    ("disc-figures-file", ["disclosure", "--figures", "{file}"], "--figures"),
    ("disc-probe-sites-0", ["disclosure", "-q", "--probe-sites", "0", "--json", "{out}.json"],
     "--probe-sites"),
    ("disc-rho-2", ["disclosure", "-q", "--rho", "2", "--json", "{out}.json"], "--rho"),
    ("disc-epsilon-negative", ["disclosure", "-q", "--epsilon", "-1", "--json",
                               "{out}.json"], "--epsilon"),
    ("disc-figures-under-file", ["disclosure", "-q", "--figures", "{file}/figs"],
     "--figures"),
    # disclosure: the experiment's DisclosureDesign, its persona blocks and memory
    ("disc-personas-1", ["disclosure", "-q", "--personas", "1", "--json", "{out}.json"],
     "--personas"),
    ("disc-personas-past-the-block", ["disclosure", "-q", "--personas", "300000", "--json",
                                      "{out}.json"], "--personas"),
    ("disc-personas-memory", ["disclosure", "-q", "--personas", "200000", "--epochs", "1000",
                              "--json", "{out}.json"], "--personas"),
    ("disc-train-personas-1", ["disclosure", "-q", "--train-personas", "1"],
     "--train-personas"),
    ("disc-mc-samples-0", ["disclosure", "-q", "--mc-samples", "0"], "--mc-samples"),
    ("disc-mc-samples-memory", ["disclosure", "-q", "--mc-samples", "10000000000"],
     "--mc-samples"),
    ("disc-epochs-0", ["disclosure", "-q", "--epochs", "0"], "--epochs"),
    ("disc-epochs-1024", ["disclosure", "-q", "--epochs", "1024"], "--epochs"),
    ("disc-probe-sites-65", ["disclosure", "-q", "--probe-sites", "65"], "--probe-sites"),
    ("disc-seed-negative", ["disclosure", "-q", "--seed", "-1"], "--seed"),
    ("disc-epsilon-text", ["disclosure", "-q", "--epsilon", "much"], "--epsilon"),
    ("disc-epsilon-nan", ["disclosure", "-q", "--epsilon", "nan"], "--epsilon"),
    ("disc-rho-text", ["disclosure", "-q", "--rho", "0.1,high"], "--rho"),
    ("disc-rho-nan", ["disclosure", "-q", "--rho", "nan"], "--rho"),
    # run (refused before the preset's work starts)
    ("run-out-file", ["run", "--preset", "smoke", "--out", "{file}"], "--out"),
    ("run-out-under-file", ["run", "--preset", "smoke", "--out", "{file}/sub"], "--out"),
    ("run-out-read-only", ["run", "--preset", "smoke", "--out", "{ro}/run"], "--out"),
    ("run-model", ["run", "--preset", "smoke", "--out", "{out}", "--model", "mixture"],
     "--model"),
    ("run-trials-0", ["run", "--preset", "smoke", "--out", "{out}", "--trials", "0"],
     "--trials"),
    ("run-targets-negative", ["run", "--preset", "smoke", "--out", "{out}", "--targets",
                              "-5"], "--targets"),
    ("run-trials-huge", ["run", "--preset", "smoke", "--out", "{out}", "--trials",
                         "1000000000000"], "--trials"),
    # round 2: tampered or incomplete statistics (F1-F6) and ledgers (S6), 1-based rows
    ("fit-single-short", [*FIT_ON, "{in}/st-single-short"], "st-single-short/q_single.json"),
    ("fit-single-wrapped", [*FIT_ON, "{in}/st-single-wrapped"], "q_single.json"),
    ("fit-within-empty", [*FIT_ON, "{in}/st-within-empty"], "q_within.json"),
    ("fit-across-empty", [*FIT_ON, "{in}/st-across-empty"], "q_across.json"),
    ("fit-single-row-1", [*FIT_ON, "{in}/st-single-neg"],
     "q_single.json, row 1, field 'frequency'"),
    ("fit-single-missing", [*FIT_ON, "{in}/st-single-missing"],
     "q_single.json, field '--stats': file missing"),
    ("fit-single-dir", [*FIT_ON, "{in}/st-single-dir"], "q_single.json"),
    ("fit-taxonomy-missing", [*FIT_ON, "{in}/st-tax-missing"],
     "taxonomy.json, field '--stats': file missing"),
    ("val-taxonomy-missing", ["validate", "--stats", "{in}/st-tax-missing", "--model",
                              "{model}", "--json", "{out}.json"], "taxonomy.json"),
    ("fit-ledger-dir", [*FIT_ON, "{in}/st-led-dir"], "privacy_ledger.json"),
    ("fit-ledger-k-float", [*FIT_ON, "{in}/st-led-k-float"], "privacy_ledger.json, field"),
    ("fit-ledger-k-0", [*FIT_ON, "{in}/st-led-k-0"], "privacy_ledger.json, field"),
    ("fit-ledger-k-str", [*FIT_ON, "{in}/st-led-k-str"], "privacy_ledger.json, field"),
    ("fit-ledger-bounding-list", [*FIT_ON, "{in}/st-led-cb-list"], "contribution_bounding"),
    ("fit-ledger-n-estimate-str", [*FIT_ON, "{in}/st-led-n-str"], "n_estimate"),
    ("explain-mechanisms-str", ["stats", "--explain", "{in}/st-led-mech-str"], "mechanisms"),
    ("explain-claimed-list", ["stats", "--explain", "{in}/st-led-claimed-list"], "claimed"),
    ("explain-ledger-dir", ["stats", "--explain", "{in}/st-led-dir"], "privacy_ledger.json"),
    ("explain-a-parquet-file", ["stats", "--explain", "{pop}"], "not a statistics directory"),
    # round 2: options that do not apply (S1 S2)
    ("explain-with-sets", ["stats", "--explain", "{stats}", "--sets", "{pop}", "--out",
                           "{out}"], "--sets"),
    ("explain-with-epsilon", ["stats", "--explain", "{stats}", "--epsilon", "5"],
     "--epsilon"),
    ("stats-chunk-users-local", [*STATS, "--out", "{out}", "--chunk-users", "5"],
     "--chunk-users"),
    # round 2: unreadable inputs, tampered metadata (O5 O6), missing inputs of run (RU1),
    # options that do not apply (RU4), output names the file system cannot take (P3 P8)
    ("obs-truncated-gz", ["observe", "--sets", "{in}/truncated.csv.gz", "--out",
                          "{out}.parquet"], "truncated.csv.gz"),
    ("obs-meta-k-big", ["observe", "--sets", "{in}/meta-kbig.parquet", "--out",
                        "{out}.parquet"], "meta-kbig.parquet, field 'metadata.k'"),
    ("obs-meta-k-negative", ["observe", "--sets", "{in}/meta-kneg.parquet", "--out",
                             "{out}.parquet"], "meta-kneg.parquet, field 'metadata.k'"),
    ("obs-meta-k-text", ["observe", "--sets", "{in}/meta-kstr.parquet", "--out",
                         "{out}.parquet"], "meta-kstr.parquet, field 'metadata.k'"),
    ("run-sets-missing", ["run", "--preset", "smoke", "--out", "{out}", "--sets",
                          "{missing}.parquet"], "--sets"),
    ("run-stats-missing", ["run", "--preset", "smoke", "--out", "{out}", "--stats",
                           "{missing}"], "--stats"),
    ("run-users-with-sets", ["run", "--preset", "smoke", "--out", "{out}", "--sets", "{pop}",
                             "--users", "5"], "--users"),
    ("run-theory-without-population", ["run", "--preset", "smoke", "--out", "{out}",
                                       "--stats", "{stats}", "--theory"], "--theory"),
    ("run-learned-without-population", ["run", "--preset", "smoke", "--out", "{out}",
                                        "--stats", "{stats}", "--learned"], "--learned"),
    ("run-learned-epochs-without-learned", ["run", "--preset", "smoke", "--out", "{out}",
                                            "--learned-epochs", "1"], "--learned-epochs"),
    ("run-learned-trials-without-learned", ["run", "--preset", "smoke", "--out", "{out}",
                                            "--learned-trials", "3"], "--learned-trials"),
    ("run-learned-epochs-negative", ["run", "--preset", "smoke", "--out", "{out}",
                                     "--learned", "--learned-epochs", "-1"], "--learned-epochs"),
    ("run-learned-trials-zero", ["run", "--preset", "smoke", "--out", "{out}",
                                 "--learned", "--learned-trials", "0"], "--learned-trials"),
    ("pop-out-name-too-long", [*POP, "--out", "{dir}/" + "a" * 300 + ".parquet"], "--out"),
    ("pop-out-line-break", [*POP, "--out", "{dir}/a\nb.parquet"], "--out"),
    ("pop-out-line-break-csv", [*POP, "--out", "{dir}/a\nb.csv"], "--out"),
    # round 2: options that do not apply or have no effect (F12 V1 R3 D1 Q3 Q4 O11), seeds
    # past 64 bits (SA4 F11), 64-bit unsigned ids past int64 (O7)
    ("fit-resume-nothing", [*FIT_ON, "{stats}", "--resume"], "--resume"),
    ("val-risk-trials-no-risk", [*VAL, "--json", "{out}.json", "--risk-trials", "5"],
     "--risk-trials"),
    ("val-tolerance-no-risk", [*VAL, "--json", "{out}.json", "--population", "{pop}",
                               "--tolerance", "0.5"], "--tolerance"),
    ("val-seed-with-synthetic", [*VAL, "--json", "{out}.json", "--population", "{pop}",
                                 "--synthetic", "{pop}", "--seed", "5"], "--seed"),
    ("val-users-with-synthetic", [*VAL, "--json", "{out}.json", "--population", "{pop}",
                                  "--synthetic", "{pop}", "--users", "1000"], "--users"),
    ("reid-k-with-traces", ["reid", "--traces", "{pop}", "--no-progress", "--k", "9"], "--k"),
    ("disc-example-personas", ["disclosure", "--example", "--personas", "5"], "--personas"),
    ("disc-example-script", ["disclosure", "--example", "--script", "{in}/script.json"],
     "--script"),
    ("disc-script-figures-dir", ["disclosure", "--script", "{in}/script.json", "--figures",
                                 "{out}"], "--figures"),
    ("disc-script-rho", ["disclosure", "--script", "{in}/script.json", "--rho", "0.5"],
     "--rho"),
    ("qif-weeks-twice", ["qif", "--sets", "{pop}", "--weeks", "0,0,1"], "--weeks"),
    ("qif-week-0-no-sets", ["qif", "--week", "0"], "--week"),
    ("obs-k-past-taxonomy", [*OBS, "--k", "1000000", "--out", "{out}.parquet"], "--k"),
    ("sample-seed-2-64", [*SAMPLE[:-2], "--seed", str(2**64), "--out", "{out}.parquet"],
     "--seed"),
    ("obs-seed-2-64", [*OBS, "--seed", str(2**64), "--out", "{out}.parquet"], "--seed"),
    ("fit-seed-huge", [*FIT_ON, "{stats}", "--seed", "9" * 23], "--seed"),
    ("run-seed-huge", ["run", "--preset", "smoke", "--out", "{out}", "--seed", "9" * 23],
     "--seed"),
    ("obs-uint64-user-ids", ["observe", "--sets", "{in}/u64.parquet", "--out",
                             "{out}.parquet"], "u64.parquet, row 1, field 'user_id'"),
    # round 2: NaN for a bounded option says "not a number" (P7); a budget too small for the
    # sampler names --epsilon and leaks no warning (S5); an input without users (O4)
    ("pop-persistence-nan", [*POP, "--persistence", "nan", "--out", "{out}.parquet"],
     "'--persistence': nan is not a number"),
    ("obs-witnessed-nan", [*OBS, "--witnessed", "nan", "--out", "{out}.parquet"],
     "'--witnessed': nan is not a number"),
    ("run-fit-minutes-nan", ["run", "--preset", "smoke", "--out", "{out}", "--fit-minutes",
                             "nan"], "'--fit-minutes': nan is not a number"),
    ("val-tolerance-nan", [*VAL, "--json", "{out}.json", "--population", "{pop}", "--risk",
                           "--tolerance=nan"], "'--tolerance': nan is not a number"),
    ("stats-epsilon-tiny", [*STATS, "--out", "{out}", "--epsilon", "1e-300"], "--epsilon"),
    ("obs-no-users", ["observe", "--sets", "{in}/header-only.csv", "--out", "{out}.parquet"],
     "header-only.csv, field '--sets'"),
    # round 2: advice the command line can follow (O8), a bad Spark master (S7)
    ("obs-no-extension", ["observe", "--sets", "{in}/noext", "--out", "{out}.parquet"],
     "name the file with one of the extensions"),
    ("stats-master-bogus", [*STATS, "--out", "{out}", "--engine", "spark", "--master",
                            "bogus://x"], "--master"),
    # round 2: CSV header faults described as they are (O10)
    ("obs-csv-leading-blank-line", ["observe", "--sets", "{in}/lead-blank.csv", "--out",
                                    "{out}.parquet"], "the first line is blank"),
    ("obs-csv-tabs", ["observe", "--sets", "{in}/tabs.csv", "--out", "{out}.parquet"],
     "separated by '\\t'"),
    # round 2: an output that is (or lies inside) an input, or another output (O1 F8 F9 F10
    # V2 D2); the inputs are checked untouched by the test
    ("obs-out-is-sets", ["observe", "--sets", "{pop}", "--out", "{pop}"], "--sets"),
    ("fit-json-into-stats", [*FIT, "--out", "{out}", "--json", "{stats}/privacy_ledger.json"],
     "--json"),
    ("fit-json-into-out", [*FIT, "--out", "{out}", "--json", "{out}/model.json"], "--json"),
    ("fit-release-into-out", [*FIT, "--out", "{out}", "--model", "paper", "--export-release",
                              "{out}/model.json"], "--export-release"),
    ("fit-json-is-release", [*FIT, "--out", "{out}", "--model", "paper", "--json",
                             "{out}.json", "--export-release", "{out}.json"], "--json"),
    ("fit-out-is-stats", [*FIT, "--out", "{stats}"], "--out"),
    ("val-json-into-stats", [*VAL, "--json", "{stats}/v.json"], "--stats"),
    ("val-json-into-model", [*VAL, "--json", "{model}/v.json"], "--model"),
    ("val-json-is-population", [*VAL, "--json", "{in}/p.json", "--population", "{in}/p.json"],
     "--population"),
    ("disc-json-is-script", ["disclosure", "--script", "{in}/script.json", "--json",
                             "{in}/script.json"], "--script"),
    ("sample-out-into-model", [*SAMPLE, "--out", "{model}/s.parquet"], "--model"),
    ("stats-out-is-sets-dir", ["stats", "--sets", "{in}", "--out", "{in}"], "--sets"),
    ("reid-json-is-sets", ["reid", "--sets", "{in}/x.json", "--json", "{in}/x.json"],
     "--sets"),
    ("qif-plot-is-sets", ["qif", "--sets", "{in}/x.png", "--plot", "{in}/x.png"], "--plot"),
    ("run-out-is-stats", ["run", "--preset", "smoke", "--out", "{stats}", "--stats",
                          "{stats}"], "--out"),
    ("pop-out-is-params", [*POP, "--params", "{in}/p.parquet", "--out", "{in}/p.parquet"],
     "--params"),
    # round 2, the rest: run makes the estimates population and fit make, before any stage
    # (RU2 RU3)
    ("run-users-past-the-memory", ["run", "--preset", "smoke", "--out", "{out}", "--users",
                                   "1000000000000"], "--users"),
    ("run-types-past-the-memory", ["run", "--preset", "smoke", "--out", "{out}", "--types",
                                   "100000000"], "--types"),
    # every reader bounds the weeks a file may span (O3)
    ("obs-long-week-huge", ["observe", "--sets", "{in}/long-bigweek.csv", "--out",
                            "{out}.parquet"], "long-bigweek.csv, row 2, field 'week'"),
    # sample's weeks capped as the population's (SA6)
    ("sample-weeks-million", [*SAMPLE, "--weeks", "1000000", "--out", "{out}.parquet"],
     "--weeks"),
    # fit: a sane cap on its iterations (F14)
    ("fit-steps-huge", [*FIT_ON, "{stats}", "--steps", "1000000000000"], "--steps"),
    ("fit-epochs-huge", [*FIT_ON, "{stats}", "--optimizer", "paper", "--epochs",
                         "1000000000000"], "--epochs"),
    ("run-fit-steps-huge", ["run", "--preset", "smoke", "--out", "{out}", "--fit-steps",
                            "1000000000000"], "--fit-steps"),
    # reid: weeks past the file's own (R4), a traces file given as topic sets (R5)
    ("reid-weeks-past-the-file", [*REID, "--weeks", "20"], "the file has 4"),
    ("reid-weeks-list-past-the-file", [*REID, "--weeks", "2,99"], "the file has 4"),
    ("reid-sets-is-traces", ["reid", "--sets", "{in}/traces.parquet", "--no-progress"],
     "give it as --traces"),
    # an option given twice (O12), for every command; an empty path (O9)
    ("obs-p-twice", [*OBS, "--p", "0.9", "--p", "0.1", "--out", "{out}.parquet"], "--p"),
    ("obs-out-twice", [*OBS, "--out", "{out}.parquet", "-o", "{out}2.parquet"], "--out"),
    ("reid-progress-twice", [*REID, "--progress", "--no-progress"], "--progress"),
    ("qif-m-twice", ["qif", "--m", "10", "--m=20"], "--m"),
    ("run-users-twice", ["run", "--preset", "smoke", "--out", "{out}", "--users", "5",
                         "--users", "6"], "--users"),
    ("obs-sets-empty", ["observe", "--sets", "", "--out", "{out}.parquet"],
     "'--sets': an empty name"),
    ("stats-out-empty", [*STATS, "--out", ""], "'--out': an empty name"),
    # bad values inside a --params file: the file and the field named (P4 P5 P6)
    *[(f"pop-params-{name}", [*POP, "--params", f"{{in}}/params-{name}.json", "--out",
                              "{out}.parquet"], f"params-{name}.json, field '{field}'")
      for name, field in (("drift-str", "drift_base"), ("explore-neg", "explore_prob"),
                          ("explore-7", "explore_prob"), ("sigma-nan", "activity_log_sigma"),
                          ("burn-float", "burn_in_weeks"), ("tax-v9", "taxonomy"),
                          ("tax-v1", "taxonomy"), ("pop-short", "popularity"),
                          ("pop-nan", "popularity.1"), ("pop-unknown", "popularity"))],
    # a ledger k the statistics contradict, the ledger named (F4)
    ("fit-ledger-k-contradicted", [*FIT_ON, "{in}/st-led-k-3"],
     "privacy_ledger.json, field 'contribution_bounding.k': k = 3 contradicts"),
    ("val-ledger-k-contradicted", ["validate", "--stats", "{in}/st-led-k-3", "--model",
                                   "{model}", "--json", "{out}.json"], "k = 3 contradicts"),
    # validate: inputs that do not match, the file named before any sampling (V3)
    ("val-population-v1", [*VAL, "--json", "{out}.json", "--population",
                           "{in}/pop-v1.parquet"], "pop-v1.parquet, field '--population'"),
    ("val-synthetic-v1", [*VAL, "--json", "{out}.json", "--population", "{pop}",
                          "--synthetic", "{in}/pop-v1.parquet"],
     "pop-v1.parquet, field '--synthetic'"),
    ("val-population-no-users", [*VAL, "--json", "{out}.json", "--population",
                                 "{in}/header-only.csv"], "header-only.csv, field '--population'"),
]


@pytest.mark.parametrize(("name", "args", "named"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_refused(inputs: dict[str, Path], work: Path, name: str,
                              args: list[str], named: str) -> None:
    before, inputs_before = _tree(work), _stamps(inputs["dir"])
    if not name.endswith("-twice"):  # a case's own value replaces the base command's
        args = _last_wins(args)
    res = runner.invoke(app, _fill(args, inputs, work))
    check_refused(res.output, res.exit_code, named)
    assert _tree(work) == before, "a refused command wrote into its output location"
    assert _stamps(inputs["dir"]) == inputs_before, "a refused command changed an input"


def test_enough_cases() -> None:
    assert len(CASES) >= 60


def test_reid_refuses_targets_past_the_memory(inputs: dict[str, Path], work: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Every user a target of 300 needs ~80 KB: with 10 KB available --targets is refused
    up front, and one target less than all still names --targets, not --trials."""
    from topicslab import _resources

    monkeypatch.setattr(_resources, "available_memory", lambda: 10_000)
    for targets in ("all", "299"):
        res = runner.invoke(app, _last_wins([*_fill(REID, inputs, work), "--targets",
                                             targets, "--json", "r.json"]))
        line = check_refused(res.output, res.exit_code, "--targets")
        assert "memory" in line and "use fewer --targets" in line
    assert not (work / "r.json").exists()
    monkeypatch.setattr(_resources, "available_memory", lambda: 10**9)
    res = runner.invoke(app, _last_wins([*_fill(REID, inputs, work), "--targets", "all"]))
    assert res.exit_code == 0, res.output


def test_outputs_past_the_free_disk_are_refused(inputs: dict[str, Path], work: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A streamed population or synthetic sample that surely cannot fit on its disk (2 bytes a
    user-week, a lower bound) is refused naming --users before anything is written; the free
    space is that of the nearest existing parent of the output."""
    from topicslab import _resources

    deep, here = (_resources.available_disk(work / "not" / "yet" / "there.parquet"),
                  _resources.available_disk(work))
    assert deep is not None and here is not None and abs(deep - here) < 2**30  # others write
    monkeypatch.setattr(_resources, "available_disk", lambda path: 7_999)
    for args in ([*POP, "--out", "p.parquet"],  # 1,000 users x 4 weeks x 2 bytes = 8,000
                 [*_fill(SAMPLE, inputs, work)[:3], "--users", "1000", "--seed", "1",
                  "--out", "s.parquet"]):
        res = runner.invoke(app, args)
        line = check_refused(res.output, res.exit_code, "--users")
        assert "disk" in line and "use fewer --users" in line
    assert not (work / "p.parquet").exists() and not (work / "s.parquet").exists()
    monkeypatch.setattr(_resources, "available_disk", lambda path: 8_000)
    res = runner.invoke(app, [*POP, "--out", "p.parquet"])
    assert res.exit_code == 0, res.output


def test_population_chunk_past_the_memory_is_refused(work: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """P2: a chunk of --chunk-users x --weeks is generated at once (~65 bytes a user-week,
    80 estimated): past the available memory it is refused up front, naming --chunk-users."""
    from topicslab import _resources

    monkeypatch.setattr(_resources, "available_memory", lambda: 1000 * 4 * 80 - 1)
    res = runner.invoke(app, [*POP, "--out", "p.parquet"])
    line = check_refused(res.output, res.exit_code, "--chunk-users")
    assert "memory" in line
    assert not (work / "p.parquet").exists()


@pytest.mark.parametrize(("weeks", "says"), [(4.0, "must be a positive integer"),
                                             (10**12, "must be at most 1,023")])
def test_model_json_fields_are_named_as_the_files(inputs: dict[str, Path], work: Path,
                                                  weeks: object, says: str) -> None:
    """SA3: a bad 'weeks' in model.json is that file's field, not the option --weeks the
    user never gave; a huge one is refused as the file's, not as a memory estimate."""
    model = work / "mw"
    shutil.copytree(inputs["model"], model)
    meta = json.loads((model / "model.json").read_text())
    (model / "model.json").write_text(json.dumps({**meta, "weeks": weeks}))
    res = runner.invoke(app, ["sample", "--model", str(model), "--users", "5", "--seed", "0",
                              "--out", "s.parquet"])
    line = check_refused(res.output, res.exit_code, "mw/model.json, field 'weeks'")
    assert says in line and "--weeks" not in line
    assert not (work / "s.parquet").exists()


def test_release_file_with_an_upper_case_extension(inputs: dict[str, Path],
                                                   work: Path) -> None:
    """SA5: a release file named rel.JSON is a release file, not a model directory."""
    res = runner.invoke(app, ["fit", "--stats", str(inputs["stats"]), "--out", "m",
                              "--model", "paper", "--types", "2", "--steps", "1",
                              "--no-progress", "--export-release", "rel.json"])
    assert res.exit_code == 0, res.output
    (work / "rel.json").rename(work / "rel.JSON")
    res = runner.invoke(app, ["sample", "--model", "rel.JSON", "--users", "5", "--seed", "0",
                              "--out", "s.parquet"])
    assert res.exit_code == 0, res.output
    assert tio.read_sets(work / "s.parquet").n_users == 5


def test_population_v1_works(work: Path) -> None:
    res = runner.invoke(app, [*POP, "--taxonomy", "v1", "--out", "v1.parquet"])
    assert res.exit_code == 0, res.output
    assert tio.read_sets(work / "v1.parquet").taxonomy.version == "v1"


def test_debug_shows_the_traceback(inputs: dict[str, Path], work: Path) -> None:
    res = runner.invoke(app, ["--debug", "fit", "--stats", str(inputs["stats"]), "--out",
                              "m", "--lr", "0"])
    # the traceback, then the line; still the exit code of bad input (round 34)
    assert res.exit_code == 2 and "Traceback" in res.output
    assert "--lr" in res.output.strip().splitlines()[-1]


def test_failed_fit_leaves_no_empty_directory(inputs: dict[str, Path], work: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from topicslab import model as tm

    def broken_fit(*args: object, **kwargs: object) -> None:
        raise MemoryError

    monkeypatch.setattr(tm, "fit", broken_fit)
    res = runner.invoke(app, ["fit", "--stats", str(inputs["stats"]), "--out", "model",
                              "--no-progress"])
    assert res.exit_code == 1
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert not (work / "model").exists()


def test_unexpected_failure_is_one_line(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from topicslab import qif

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("something\nbroke")

    monkeypatch.setattr(qif, "parameter_table", boom)
    res = runner.invoke(app, ["qif"])
    assert res.exit_code == 1
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "RuntimeError" in lines[0] and "--debug" in lines[0]


_FAST = settings(max_examples=25, deadline=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture])


@_FAST
@given(lr=st.one_of(st.floats(max_value=0.0), st.floats(min_value=1000.0, exclude_min=True),
                    st.just(float("nan")), st.just(float("inf"))))
def test_fit_refuses_every_lr_outside_its_range(inputs: dict[str, Path], lr: float) -> None:
    out = inputs["dir"] / "never-model"
    res = runner.invoke(app, ["fit", "--stats", str(inputs["stats"]), "--out", str(out),
                              "--lr", repr(lr)])
    check_refused(res.output, res.exit_code, "--lr")
    assert not out.exists()


@_FAST
@given(epochs=st.one_of(st.integers(max_value=0), st.integers(min_value=41)))
def test_qif_refuses_epochs_out_of_range(epochs: int) -> None:
    res = runner.invoke(app, ["qif", "--epochs", str(epochs)])
    check_refused(res.output, res.exit_code, "--epochs")


@_FAST
@given(weeks=st.integers(min_value=5, max_value=10**6), lookback=st.integers(1, 4))
def test_observe_refuses_weeks_past_the_data(inputs: dict[str, Path], weeks: int,
                                            lookback: int) -> None:
    out = inputs["dir"] / "never.parquet"
    res = runner.invoke(app, ["observe", "--sets", str(inputs["pop"]), "--weeks", str(weeks),
                              "--lookback", str(lookback), "--out", str(out)])
    check_refused(res.output, res.exit_code, "--weeks")
    assert not out.exists()


def test_no_new_empty_dirs_removes_only_what_is_empty(tmp_path: Path) -> None:
    kept, dropped, old = tmp_path / "kept", tmp_path / "dropped", tmp_path / "old"
    old.mkdir()
    with pytest.raises(RuntimeError), _paths.no_new_empty_dirs(kept, dropped, old):
        (kept / "checkpoints").mkdir(parents=True)
        (kept / "checkpoints" / "step-1").write_text("resume from here")
        (dropped / "empty" / "deeper").mkdir(parents=True)
        raise RuntimeError
    assert (kept / "checkpoints" / "step-1").exists()  # holds a file: kept for --resume
    assert not dropped.exists()
    assert old.is_dir()  # existed before: never removed


def test_tfrecord_shard_names_are_accepted(tmp_path: Path) -> None:
    for name in ("synth.tfrecord", "synth.tfrecord-00000-of-00002", "synth.tfrecord.gz"):
        _paths.check_output_file(tmp_path / name, "--out", (".tfrecord", ".tfrecord.gz"))


def test_console_script_one_line_at_40_columns_and_debug(tmp_path: Path) -> None:
    """Through the real entry point: a long message stays one line on a narrow terminal,
    and --debug brings the traceback back."""
    import subprocess
    import sys

    target = tmp_path / ("a-directory-that-does-not-exist-" * 3) / "population.parquet"
    cmd = [sys.executable, "-c", "from topicslab.cli import main; main()"]
    args = ["population", "--users", "10", "--out", str(target)]
    env = {**os.environ, "COLUMNS": "40"}
    env.pop("TOPICSLAB_DEBUG", None)
    proc = subprocess.run([*cmd, *args], capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "--out" in lines[0]
    assert "Traceback" not in proc.stderr and not target.parent.exists()
    proc = subprocess.run([*cmd, "--debug", *args], capture_output=True, text=True, env=env,
                          check=False)
    assert proc.returncode != 0 and "Traceback" in proc.stderr and "InputError" in proc.stderr


def test_ctrl_c_while_starting_is_one_line(monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """G1: a Ctrl-C during the imports or while Typer builds the app: exit 130, one line."""
    import topicslab.cli
    from topicslab import _main

    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(topicslab.cli, "main", interrupted)
    monkeypatch.delenv("TOPICSLAB_DEBUG", raising=False)
    monkeypatch.setattr("sys.argv", ["topicslab", "qif"])
    with pytest.raises(SystemExit) as exc:
        _main.main()
    assert exc.value.code == 130
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("interrupted: "), lines


def test_ctrl_c_while_exiting_is_one_line(tmp_path: Path) -> None:
    """G2: a Ctrl-C after the command has ended, while Python shuts down (here: in an exit
    handler), still ends with one ``interrupted:`` line and exit code 130."""
    import subprocess
    import sys

    script = """
import atexit, os, signal, sys, time
import topicslab.cli
def late():
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.5)
def done():
    atexit.register(late)
    sys.stderr.write("wrote x.png\\n")
    raise SystemExit(0)
topicslab.cli.main = done
from topicslab._main import main
main()
"""
    env = {**os.environ, "PYTHONPATH": str(Path(tio.__file__).parents[2])}
    env.pop("TOPICSLAB_DEBUG", None)
    proc = subprocess.run([sys.executable, "-c", script, "qif"], capture_output=True,
                          text=True, env=env, check=False, cwd=tmp_path)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 130, proc.stderr
    assert lines[0] == "wrote x.png" and len(lines) == 2, lines
    assert lines[1].startswith("interrupted: ")


@pytest.mark.parametrize(("env", "named"), [
    ({"PYTHONIOENCODING": "ascii"}, "PYTHONIOENCODING"),
    ({"NUMBA_NUM_THREADS": "0"}, "NUMBA_NUM_THREADS"),
])
def test_odd_environment_is_one_line(tmp_path: Path, env: dict[str, str], named: str) -> None:
    """G4: through the real entry point, an environment the libraries fail on: exit 2."""
    import subprocess
    import sys

    full = {**os.environ, **env}
    full.pop("TOPICSLAB_DEBUG", None)
    proc = subprocess.run([sys.executable, "-c", "from topicslab._main import main; main()",
                           "qif"], capture_output=True, text=True, env=full, check=False,
                          cwd=tmp_path)
    check_refused(proc.stderr, proc.returncode, named)
    assert not list(tmp_path.iterdir())


def test_unwritable_home_adds_no_matplotlib_lines(tmp_path: Path) -> None:
    """G3: matplotlib's config and cache directories cannot be made (HOME is a file): a plot
    is still written with no warning lines, matplotlib pointed at a private directory."""
    import subprocess
    import sys

    blocker = tmp_path / "home-is-a-file"
    blocker.write_text("x")
    (tmp_path / "tmp").mkdir()
    env = {**os.environ, "HOME": str(blocker), "XDG_CONFIG_HOME": str(blocker),
           "XDG_CACHE_HOME": str(blocker), "TMPDIR": str(tmp_path / "tmp"),
           "PYTHONPATH": str(Path(tio.__file__).parents[2])}  # this checkout's package
    for name in ("MPLCONFIGDIR", "TOPICSLAB_DEBUG"):
        env.pop(name, None)
    proc = subprocess.run([sys.executable, "-c", "from topicslab._main import main; main()",
                           "qif", "--epochs", "2", "--plot", "x.png"], capture_output=True,
                          text=True, env=env, check=False, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert [ln for ln in proc.stderr.splitlines() if ln.strip()] == ["wrote x.png"]
    assert (tmp_path / "x.png").stat().st_size > 0


def test_small_disclosure_figures_leak_no_warning(work: Path) -> None:
    """D4: a tiny disclosure run draws figures without matplotlib's legend warning."""
    # (no --mc-samples: it sizes the white-box check, which --no-whitebox turns off)
    res = runner.invoke(app, ["disclosure", "-q", "--personas", "3", "--epochs", "2",
                              "--no-whitebox", "--figures", "figs"])
    assert res.exit_code == 0, res.output
    assert "Warning" not in res.output
    assert (work / "figs" / "rates.png").exists()


def test_script_with_a_byte_order_mark_is_read(work: Path) -> None:
    """D3: a UTF-8 byte-order mark before '! probe:' is not taken for a missing header."""
    script = work / "bom.txt"
    script.write_bytes("\ufeff! probe: help\nhello\n".encode())
    res = runner.invoke(app, ["disclosure", "--script", str(script)])
    assert res.exit_code == 0, res.output
