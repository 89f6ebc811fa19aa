"""Bad input, the independent second round (issue 15): cases the first round did not list.

The same contract as ``test_bad_inputs.py``: exit code 2, one line ``error: ...`` naming the
offending option, file, row or field, no traceback, and nothing written (the test's directory,
also the current directory, is unchanged, and so are the inputs). Every case fails before any
real work, so the module runs in seconds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from refusal import check_refused, invoke, invoke_refused

from topicslab import io as tio


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A 4-week population of 300 users (Parquet and CSV), its DP statistics, CSV and Parquet
    variants with one defect each, a pipe, a directory holding a file, a visits log."""
    import pyarrow.parquet as pq

    from topicslab import dp
    from topicslab.datamodel import TopicSets

    d = tmp_path_factory.mktemp("round3")
    rng = np.random.default_rng(0)
    sets = np.sort(np.stack([np.stack([rng.choice(40, 5, replace=False) for _ in range(4)])
                             for _ in range(300)]), axis=-1).astype(np.int16)
    data = TopicSets(sets, "v2", np.arange(300, dtype=np.int64))
    pop = d / "pop.parquet"
    tio.write_sets(pop, data)
    tio.write_sets(d / "pop.csv", data.subset(slice(0, 20)))
    dp.save_statistics(d / "stats", dp.compute_statistics(data, epsilon=1e3, delta=1e-6,
                                                          seed=0))
    lines = (d / "pop.csv").read_text().splitlines()
    variants = {
        # a user id past 64 bits in the first data row
        "huge-id.csv": [lines[0], "99999999999999999999999" + lines[1][1:], *lines[2:]],
        "extra.csv": [lines[0] + ",note", *(ln + ",x" for ln in lines[1:])],
        "misspelt.csv": [lines[0].replace("epoch_3_topics", "epoch_3_topic"), *lines[1:]],
        "repeated-user.csv": [lines[0], lines[1], "0" + lines[2][1:], *lines[3:]],
    }
    for name, rows in variants.items():
        (d / name).write_text("\n".join(rows) + "\n")
    table = pq.read_table(pop)
    meta = dict(table.schema.metadata)
    block = json.loads(meta[b"topicslab"])
    pq.write_table(table.replace_schema_metadata(
        {**meta, b"topicslab": json.dumps({**block, "taxonomy": "v9"}).encode()}),
        d / "meta-v9.parquet")
    names = [*table.column_names[:-1], "Epoch_3_topics"]
    pq.write_table(table.rename_columns(names).replace_schema_metadata({}),
                   d / "misspelt.parquet")
    os.mkfifo(d / "pipe.parquet")
    (d / "holder").mkdir()
    (d / "holder" / "model.json").write_text("{}")
    # a stray 2010 time: 730 weeks of dense profiles (a 1970 one, 2,817 weeks, is now refused
    # as past the most weeks a file may hold, round 13)
    (d / "visits.csv").write_text("user_id,timestamp,url\n1,2024-01-01T10:00:00Z,"
                                  "https://example.com/a\n1,1262304000,https://news.com/b\n")
    (d / "domains.csv").write_text("domain,topics\nexample.com,1;4\nnews.com,9\n")
    return {"pop": pop, "dir": d}





REID = ["reid", "--sets", "{in}/pop.parquet", "--no-progress", "--trials", "1"]
SMOKE = ["run", "--preset", "smoke", "--quiet", "--out", "{out}"]
DISC = ["disclosure", "-q", "--personas", "10", "--epochs", "2"]
OBS = ["observe", "--out", "{out}.parquet", "--sets"]

CASES: list[tuple[str, list[str], str]] = [
    # files: a value past 64 bits, an unknown metadata taxonomy, unknown and misspelt columns
    ("obs-csv-id-past-64-bits", [*OBS, "{in}/huge-id.csv"], "row 1, field 'user_id'"),
    ("obs-meta-taxonomy-v9", [*OBS, "{in}/meta-v9.parquet"], "metadata.taxonomy"),
    ("obs-csv-extra-column", [*OBS, "{in}/extra.csv"], "field 'note'"),
    ("obs-csv-misspelt-week", [*OBS, "{in}/misspelt.csv"], "field 'epoch_3_topic'"),
    ("obs-parquet-misspelt-week", [*OBS, "{in}/misspelt.parquet"], "field 'Epoch_3_topics'"),
    ("obs-k-below-the-file", [*OBS, "{in}/pop.parquet", "--k", "3"],
     "row 1, field 'epoch_0_topics'"),
    ("stats-k-below-the-file-row-1", ["stats", "--sets", "{in}/pop.parquet", "--out", "{out}",
                                      "--k", "3"], "row 1, field 'epoch_0_topics'"),
    # a pipe or a device where a file is read: refused, not waited on forever
    ("obs-sets-pipe", [*OBS, "{in}/pipe.parquet"], "--sets"),
    ("obs-sets-dev-null", [*OBS, "/dev/null"], "--sets"),
    ("pop-params-pipe", ["population", "--users", "1000", "--params", "{in}/pipe.parquet",
                         "--out", "{out}.parquet"], "--params"),
    ("convert-source-pipe", ["convert", "{in}/pipe.parquet", "{out}.csv"], "pipe.parquet"),
    ("obs-sets-directory-without-shards", [*OBS, "{in}/holder"], "no .tfrecord files"),
    ("pop-params-directory", ["population", "--users", "1000", "--params", "{in}", "--out",
                              "{out}.parquet"], "field '--params': is a directory"),
    ("pop-out-spaces", ["population", "--users", "1000", "--out", "  "], "'  ', field '--out'"),
    # options the chosen mode ignores, repeated values, values that contradict the data
    ("sample-users-0", ["sample", "--model", "{in}/none", "--users", "0", "--seed", "1",
                        "--out", "{out}.parquet"], "--users"),
    ("reid-weeks-repeated", [*REID, "--weeks", "1,1"], "--weeks"),
    ("reid-top-k-is-gone", [*REID, "--attack", "hamming", "--top-k", "5"], "--top-k"),
    ("reid-device-without-learned", [*REID, "--device", "cuda"], "--device"),
    ("reid-targets-in-matching", [*REID, "--setting", "matching", "--targets", "10"],
     "--targets"),
    ("qif-s-below-the-data", ["qif", "--sets", "{in}/pop.parquet", "--s", "3"], "--s"),
    ("qif-epochs-repeated", ["qif", "--epochs", "2,2"], "--epochs"),
    ("disc-rho-empty", [*DISC, "--rho", ""], "--rho"),
    ("disc-rho-repeated", [*DISC, "--rho", "0.1", "--rho", "0.1"], "--rho"),
    ("disc-mc-samples-without-whitebox", [*DISC, "--no-whitebox", "--mc-samples", "10"],
     "--mc-samples"),
    ("convert-to-contradicts-the-name", ["convert", "{in}/pop.parquet", "{out}.csv", "--to",
                                         "parquet"], "--to"),
    ("convert-long-as-tfrecord", ["convert", "{in}/pop.parquet", "{out}.tfrecord", "--to",
                                  "long"], "--to"),
    ("convert-lenient-repeated-user", ["convert", "--lenient", "{in}/repeated-user.csv",
                                       "{out}.parquet"], "row 2, field 'user_id'"),
    ("run-fit-minutes-inf", [*SMOKE, "--fit-minutes", "inf"], "--fit-minutes"),
    ("run-fidelity-trials-with-stats", [*SMOKE, "--stats", "{in}/stats", "--fidelity-trials",
                                        "3"], "--fidelity-trials"),
    ("run-out-holds-a-model", ["run", "--preset", "smoke", "--quiet", "--out", "{in}/holder"],
     "--out"),
]


@pytest.mark.parametrize(("name", "args", "named"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_refused(inputs: dict[str, Path], work: Path, name: str,
                              args: list[str], named: str) -> None:
    invoke_refused(invoke, args, inputs["dir"], work, named)


def test_python_readers_refuse_a_pipe(inputs: dict[str, Path]) -> None:
    """The readers called from Python: a pipe is refused at once (opening it would wait for
    a writer forever)."""
    from topicslab.errors import InputError

    pipe = inputs["dir"] / "pipe.parquet"
    for read in (tio.read_sets, lambda p: list(tio.iter_sets(p)), tio.read_traces):
        with pytest.raises(InputError, match="not a regular file"):
            read(pipe)


def test_ingest_span_past_the_memory_is_refused(inputs: dict[str, Path], work: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A stray 2010 time spans hundreds of weeks of dense profiles: the memory they need
    is checked before they are built, naming the log and its time column."""
    from topicslab import _resources

    monkeypatch.setattr(_resources, "available_memory", lambda: 10_000)
    d = inputs["dir"]
    res = invoke(["ingest", "--visits", str(d / "visits.csv"), "--domains",
                              str(d / "domains.csv"), "--out", str(work / "o.parquet"), "-q"])
    check_refused(res.output, res.exit_code, "visits.csv, field 'timestamp'")
    assert not list(work.iterdir())


def _console(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    full = {**os.environ, **env, "PYTHONPATH": str(Path(tio.__file__).parents[2])}
    full.pop("TOPICSLAB_DEBUG", None)
    return subprocess.run([sys.executable, "-c", "from topicslab._main import main; main()",
                           *args], capture_output=True, text=True, env=full, check=False,
                          cwd=cwd)


@pytest.mark.parametrize("env", [{"NUMBA_DISABLE_JIT": "abc"}, {"NUMBA_BOUNDSCHECK": "yes"}])
def test_numba_flags_numba_cannot_read_are_one_line(tmp_path: Path, env: dict[str, str]) -> None:
    proc = _console(["qif"], env, tmp_path)
    check_refused(proc.stderr, proc.returncode, next(iter(env)))
    assert not list(tmp_path.iterdir())


def test_unknown_mplbackend_still_draws(tmp_path: Path) -> None:
    """Figures are drawn on Agg whatever MPLBACKEND says (an unknown one failed the import)."""
    proc = _console(["qif", "--plot", "x.png"], {"MPLBACKEND": "no-such-backend"}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == "wrote x.png"
    assert (tmp_path / "x.png").stat().st_size > 0


@pytest.mark.parametrize("target", ["elsewhere.parquet", "missing-dir/x.parquet"])
def test_output_through_a_symlink_is_refused(inputs: dict[str, Path], work: Path,
                                             target: str) -> None:
    """The atomic rename would replace the link, not the file it points to (a dangling link
    silently became a regular file)."""
    (work / "elsewhere.parquet").write_text("kept\n")
    (work / "link.parquet").symlink_to(work / target)
    res = invoke(["observe", "--sets", str(inputs["pop"]), "--out", "link.parquet"])
    check_refused(res.output, res.exit_code, "field '--out': is a symbolic link")
    assert (work / "link.parquet").is_symlink()
    assert (work / "elsewhere.parquet").read_text() == "kept\n"
    assert sorted(p.name for p in work.iterdir()) == ["elsewhere.parquet", "link.parquet"]
