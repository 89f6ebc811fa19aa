"""Bad input, the thirty-sixth independent round.

- A topic-set file refused as a whole (a directory, site traces, a name of no known format)
  named no option in observe, stats, qif, attack-train, run and validate (``--population``,
  ``--synthetic``): "tr.parquet: holds site traces ...", "S: is a directory with no
  .tfrecord files". A directory of DP statistics, a model or a run's output was read as
  TFRecord shards ("no .tfrecord files"); ``stats --engine stream`` read a run's directory
  as one data set of its pop.parquet and synth.parquet ("user id 0 appears more than once").
- ``reid --traces`` of topic sets: "pop.parquet, field 'site': missing column" (the reverse
  mistake said what the file holds).
- ``sample/validate --model`` of a directory of DP statistics or of a learned attack:
  "S/model.json: file missing (not a model directory?)", a file under the directory;
  ``reid --attack-model`` of a release or a missing name: no field, "not a directory".
- ``qif --taxonomy v1`` without ``--sets``: "--taxonomy selects weeks of --sets".
- ``ingest`` of a directory or a file of no known format as ``--visits`` / ``--domains``:
  no field ("S: is a directory, expected a file").
- ``fit --resume`` of a checkpoint that names other Python objects ran them
  (``torch.load(weights_only=False)``; here ``os.mkdir``) and then went on, exit code 0.
- A file whose name holds ``*``, ``?`` or ``[`` (``population --out 'pop[1].parquet'`` writes
  one) was read as a pattern of TFRecord shards: "no files match the pattern", or a Parquet
  file read as TFRecord ("length CRC mismatch"); a pattern of Parquet or CSV files said the
  same. ``convert``'s whole-file errors named no SOURCE.
- ``stats --engine spark --sets hdfs:///data/sets`` (docs/cluster.md) reached the engine as
  ``hdfs:/data/sets`` and was refused as a local file; with another engine a URI was "no
  such file" under the mangled name (tests/dp/test_spark.py has the Spark side); an output
  named as a URI was "directory s3:/bucket does not exist; create it first".
- Ctrl-\\ (SIGQUIT) ended a command on the spot (exit 131, a core dump where enabled) and
  left the atomic write's hidden temporary (``.p.parquet.XXXXXXXX.tmp``, 11 MB).
- ``validate --population 'pop-*-of-00002.tfrecord'`` (a pattern of shards, which observe,
  reid and stats read) was "file not found"; so was ``run --sets`` of one, which now asks for
  the shards' directory (a run keeps its input's fingerprint).
- ``validate --users 10^12`` (and ``sample`` past memory): "error: sampling ... users x 4 weeks
  at once needs about 298,023 GiB", naming no option.
- Options with nothing to do ran with no word: ``reid --certify`` where Corollary 1 is exact
  (r < 5), ``attack-train --batch-users`` past ``--queries``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from refusal import (
    check_refused,
    fit_small_model,
    invoke,
    population_and_stats,
    refusal_test,
    tree,
)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 users (v2, 4 weeks) as ``pop.parquet``, their DP statistics ``stats``, a fitted
    model ``model``, two-site ``traces.parquet``, a learned attack ``attack`` (r = 2, counted
    co-occurrence only), a run's directory ``run`` (stages.json, pop.parquet and
    synth.parquet), a visits log and a domain table."""
    d = tmp_path_factory.mktemp("round36")
    population_and_stats(d)
    fit_small_model(invoke, d)
    res = invoke(["observe", "--sets", str(d / "pop.parquet"), "--weeks", "2",
                  "--out", str(d / "traces.parquet")])
    assert res.exit_code == 0, res.output
    res = invoke(["attack-train", "--sets", str(d / "pop.parquet"), "--weeks", "2",
                  "--epochs", "0", "--validation", "50", "--no-progress",
                  "--out", str(d / "attack")])
    assert res.exit_code == 0, res.output
    run = d / "run"
    run.mkdir()
    (run / "stages.json").write_text("{}", encoding="utf-8")
    shutil.copy(d / "pop.parquet", run / "pop.parquet")
    shutil.copy(d / "pop.parquet", run / "synth.parquet")
    (d / "visits.csv").write_text("user_id,timestamp,url\n1,2024-01-01T10:00:00,"
                                  "https://example.com/\n", encoding="utf-8")
    (d / "domains.csv").write_text("domain,topics\nexample.com,1\n", encoding="utf-8")
    return d


OBS = ["observe", "--out", "{out}.parquet", "--sets"]
VAL = ["validate", "--stats", "{in}/stats", "--model", "{in}/model", "--json", "{out}.json"]
AM = ["reid", "--sets", "{in}/pop.parquet", "--weeks", "2", "--attack", "learned",
      "--no-progress", "--attack-model"]
NOT_SETS = "not topic sets; give a file of topic sets"
CASES = [
    # a topic-set file refused as a whole names its option
    ("observe-sets-traces", [*OBS, "{in}/traces.parquet"],
     "traces.parquet, field '--sets': holds site traces"),
    ("observe-sets-a-release", [*OBS, "{in}/stats"],
     f"stats, field '--sets': is a directory holding DP statistics (topicslab stats), "
     f"{NOT_SETS}"),
    ("stats-sets-a-model", ["stats", "--out", "{out}", "--sets", "{in}/model"],
     f"model, field '--sets': is a directory holding a fitted model (topicslab fit), "
     f"{NOT_SETS}"),
    ("stats-stream-sets-a-run", ["stats", "--engine", "stream", "--out", "{out}", "--sets",
                                 "{in}/run"],
     f"run, field '--sets': is a directory holding a run's output (topicslab run), "
     f"{NOT_SETS} (the run's population is"),
    ("stats-sets-no-format", ["stats", "--out", "{out}", "--sets", "{in}/stats/q_single.json"],
     "q_single.json, field '--sets': cannot tell the format from the name"),
    ("qif-sets-a-release", ["qif", "--sets", "{in}/stats"], "stats, field '--sets': is a "
                                                            "directory holding DP statistics"),
    ("attack-train-sets-a-release", ["attack-train", "--out", "{out}", "--weeks", "2",
                                     "--sets", "{in}/stats"],
     "stats, field '--sets': is a directory holding DP statistics"),
    ("reid-sets-a-run", ["reid", "--no-progress", "--sets", "{in}/run"],
     "run, field '--sets': is a directory holding a run's output (topicslab run)"),
    ("validate-population-a-release", [*VAL, "--population", "{in}/stats"],
     "stats, field '--population': is a directory holding DP statistics"),
    ("validate-synthetic-traces", [*VAL, "--population", "{in}/pop.parquet", "--synthetic",
                                   "{in}/traces.parquet"],
     "traces.parquet, field '--synthetic': holds site traces"),
    ("run-sets-a-release", ["run", "--preset", "smoke", "--quiet", "--out", "{out}",
                            "--sets", "{in}/stats"],
     "stats, field '--sets': is a directory holding DP statistics"),
    ("reid-traces-topic-sets", ["reid", "--traces", "{in}/pop.parquet"],
     "pop.parquet, field '--traces': holds topic sets (a profile per user and week), not "
     "site traces: give it where topic sets are read (reid --sets)"),
    # a model or a learned attack of the wrong kind
    ("sample-model-a-release", ["sample", "--users", "10", "--seed", "1", "--out",
                                "{out}.parquet", "--model", "{in}/stats"],
     "stats, field '--model': is a directory holding DP statistics (topicslab stats), not a "
     "fitted model (topicslab fit)"),
    ("validate-model-an-attack", ["validate", "--stats", "{in}/stats", "--json",
                                  "{out}.json", "--model", "{in}/attack"],
     "attack, field '--model': is a directory holding a learned attack (topicslab "
     "attack-train), not a fitted model"),
    ("reid-attack-model-a-release", [*AM, "{in}/stats"],
     "stats, field '--attack-model': is a directory holding DP statistics (topicslab stats), "
     "not a learned attack (topicslab attack-train)"),
    ("reid-attack-model-a-model", [*AM, "{in}/model"],
     "model, field '--attack-model': is a directory holding a fitted model"),
    ("reid-attack-model-missing", [*AM, "{in}/no-such"],
     "no-such, field '--attack-model': no such file"),
    # qif
    ("qif-taxonomy-without-sets", ["qif", "--taxonomy", "v1"],
     "field '--taxonomy': --taxonomy tells the taxonomy of --sets: give --sets"),
    # ingest
    ("ingest-visits-a-directory", ["ingest", "-q", "--out", "{out}.parquet", "--domains",
                                   "{in}/domains.csv", "--visits", "{in}/stats"],
     "stats, field '--visits': is a directory, expected a file"),
    ("ingest-domains-parquet", ["ingest", "-q", "--out", "{out}.parquet", "--visits",
                                "{in}/visits.csv", "--domains", "{in}/pop.parquet"],
     "pop.parquet, field '--domains': cannot tell the format of a domain table"),
    ("ingest-domains-a-directory", ["ingest", "-q", "--out", "{out}.parquet", "--visits",
                                    "{in}/visits.csv", "--domains", "{in}/stats"],
     "stats, field '--domains': is a directory, expected a file"),
    # a pattern of files that are not TFRecord shards; convert names its SOURCE
    ("stats-sets-a-pattern-of-parquet", ["stats", "--out", "{out}", "--sets",
                                         "{in}/p*.parquet"],
     "p*.parquet, field '--sets': is a pattern (*, ? or [) matching 1 file(s), but "
     "only TFRecord shards are read as a set; give one file"),
    ("convert-a-pattern-of-csv", ["convert", "{in}/nothing*.csv", "{out}.parquet"],
     "nothing*.csv, field 'SOURCE': no such file"),
    ("convert-traces", ["convert", "{in}/traces.parquet", "{out}.csv"],
     "traces.parquet, field 'SOURCE': holds site traces"),
    ("convert-a-release", ["convert", "{in}/stats", "{out}.csv"],
     "stats, field 'SOURCE': is a directory holding DP statistics"),
    # a URI where only the Spark engine reads one (was "s3a:/bucket/sets: no such file")
    ("stats-local-a-uri", ["stats", "--out", "{out}", "--sets", "s3a://bucket/sets/"],
     "s3a://bucket/sets/, field '--sets': is a URI, which only --engine spark reads"),
    ("stats-stream-a-uri", ["stats", "--engine", "stream", "--out", "{out}",
                            "--sets=hdfs:///data/sets"],
     "hdfs:///data/sets, field '--sets': is a URI, which only --engine spark reads"),
    # a pattern of shards: run keeps a fingerprint of its input (was "file not found")
    ("run-sets-a-pattern", ["run", "--preset", "smoke", "--quiet", "--out", "{out}", "--sets",
                            "{in}/pop-*-of-00002.tfrecord"],
     "field '--sets': is a pattern (*, ? or [); a run reads one file or a directory of "
     "TFRecord shards"),
    # a memory refusal of the synthetic draw named no option
    ("validate-users-past-memory", [*VAL, "--population", "{in}/pop.parquet", "--users",
                                    "1000000000000"],
     "field '--users': sampling 1,000,000,000,000 users x 4 weeks at once needs about"),
    ("sample-chunk-past-memory", ["sample", "--model", "{in}/model", "--users", "1000000000",
                                  "--chunk-users", "1000000000", "--weeks", "1000", "--seed",
                                  "0", "--out", "{out}.parquet"],
     "field '--chunk-users': sampling 1,000,000,000 users x 1,000 weeks at once"),
    # an output named as a URI: "create it first" made a local directory 's3:'
    ("stats-out-a-uri", ["stats", "--sets", "{in}/pop.parquet", "--out", "s3://bucket/rel"],
     "field '--out': directory s3:/bucket does not exist; it reads as a URI (s3://...), and "
     "outputs are written to this machine's file system: give a local path"),
]


test_bad_input_is_refused = refusal_test(CASES)


def test_the_runs_population_and_real_sets_still_read(inputs: Path, work: Path) -> None:
    res = invoke(["observe", "--sets", str(inputs / "run" / "pop.parquet"), "--weeks", "1",
                  "--out", "t.parquet"])
    assert res.exit_code == 0, res.output
    res = invoke(["reid", "--traces", str(inputs / "traces.parquet"), "--targets", "all"])
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize("name", ["pop[1].parquet", "pop?.csv", "pop*.tsv"])
def test_a_file_named_with_pattern_characters_is_read(inputs: Path, work: Path,
                                                      name: str) -> None:
    """``population --out 'pop[1].parquet'`` writes such a name; reading it back was "no files
    match the pattern". ``convert X 'pop?.csv'`` wrote TFRecord under that name (a name with
    a pattern character was taken for TFRecord shards, also when written)."""
    res = invoke(["convert", str(inputs / "pop.parquet"), name])
    assert res.exit_code == 0, res.output
    # written in the format its name says (pop?.csv was written as TFRecord)
    magic = b"PAR1" if name.endswith(".parquet") else b"user_id"
    assert (work / name).read_bytes()[:len(magic)] == magic
    res = invoke(["observe", "--sets", name, "--weeks", "1", "--out", "t.parquet"])
    assert res.exit_code == 0, res.output
    res = invoke(["convert", name, "back.parquet"])
    assert res.exit_code == 0, res.output


def test_validate_reads_a_pattern_of_shards(inputs: Path, work: Path) -> None:
    """``validate --population 'pop-*-of-00002.tfrecord'`` was "file not found", though the
    pattern names the shards as observe, reid and stats read them."""
    res = invoke(["convert", str(inputs / "pop.parquet"), "pop.tfrecord", "--shards", "2"])
    assert res.exit_code == 0, res.output
    res = invoke(["validate", "--stats", str(inputs / "stats"), "--model",
                  str(inputs / "model"), "--json", "v.json", "--population",
                  "pop-*-of-00002.tfrecord"])
    assert res.exit_code == 0, res.output
    assert (work / "v.json").is_file()


# ---- fit --resume of a checkpoint that names code -------------------------------------------


class _RunsCode:
    """Unpickled, it makes a directory: what a hostile checkpoint could do instead."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return os.mkdir, (str(self.marker),)


def test_a_checkpoint_that_names_code_is_refused_not_run(inputs: Path, work: Path) -> None:
    """Was: the checkpoint's pickle ran (here ``os.mkdir``), then the fit went on, exit 0."""
    import torch

    shutil.copytree(inputs / "model", work / "m")
    ckpt = work / "m" / "checkpoints" / "checkpoint.pt"
    state = torch.load(ckpt, map_location="cpu", weights_only=True)
    marker = work / "ran"
    state["history"].append({"note": _RunsCode(marker)})
    torch.save(state, ckpt)
    before = tree(work)
    res = invoke(["fit", "--stats", str(inputs / "stats"), "--out", "m", "--types", "2",
                  "--modes", "1", "--steps", "1", "--no-progress", "--resume"])
    check_refused(res.output, res.exit_code, "checkpoint.pt, field '--resume': is not a "
                  "checkpoint of topicslab fit (it holds Python objects (posix.mkdir) that a "
                  "fit's state never holds, and loading them could run code)")
    assert not marker.exists()
    assert tree(work) == before


def test_its_own_checkpoint_still_resumes(inputs: Path, work: Path) -> None:
    shutil.copytree(inputs / "model", work / "m")
    res = invoke(["fit", "--stats", str(inputs / "stats"), "--out", "m", "--types", "2",
                  "--modes", "1", "--steps", "1", "--no-progress", "--resume"])
    assert res.exit_code == 0, res.output


# ---- options with nothing to do get a note --------------------------------------------------


def test_certify_where_corollary_1_is_exact_is_noted(inputs: Path, work: Path) -> None:
    """``reid --bounds --certify --weeks 2`` ran with no word."""
    res = invoke(["reid", "--sets", str(inputs / "pop.parquet"), "--weeks", "2", "--bounds",
                  "--certify", "--trials", "1", "--targets", "20", "--no-progress"])
    assert res.exit_code == 0, res.output
    assert ("note: --certify had nothing to do: Corollary 1 is exact at r = 2"
            in " ".join(res.output.split()))


def test_a_batch_past_the_queries_is_noted(inputs: Path, work: Path) -> None:
    """``attack-train --queries 40 --batch-users 100`` ran with no word."""
    res = invoke(["attack-train", "--sets", str(inputs / "pop.parquet"), "--weeks", "2",
                  "--epochs", "1", "--queries", "40", "--batch-users", "100",
                  "--validation", "40", "--no-progress", "--out", "a"])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert ("note: --batch-users 100 is more than the 40 --queries of a pass: each pass is "
            "one step of 40 queries") in text
    assert "--batch-users 100 but only" not in text


# ---- Ctrl-\ (SIGQUIT) ends a command as Ctrl-C does ----------------------------------------


def test_ctrl_backslash_leaves_no_temporary(work: Path) -> None:
    """SIGQUIT ended the process on the spot: exit code 131, no line, and the atomic write's
    hidden temporary left behind."""
    import signal
    import subprocess
    import sys
    import time

    from topicslab import io as tio

    env = {**os.environ, "PYTHONPATH": str(Path(tio.__file__).parents[2])}
    env.pop("TOPICSLAB_DEBUG", None)
    proc = subprocess.Popen([sys.executable, "-m", "topicslab", "population", "--users",
                             "3000000", "--chunk-users", "100000", "--out", "big.parquet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                            text=True, cwd=work,
                            preexec_fn=lambda: signal.signal(signal.SIGQUIT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not any(work.iterdir()) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)  # until the write has begun
    proc.send_signal(signal.SIGQUIT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1].startswith("interrupted: population stopped"), err
    assert list(work.iterdir()) == []
