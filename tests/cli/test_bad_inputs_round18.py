"""Bad input, the eighteenth independent round (issue 15).

The command line: ``stats --explain DIR --taxonomy v1`` ignored ``--taxonomy`` without a word,
and ``disclosure --example --quiet`` (or ``--script F --quiet``) ``--quiet``;
a CSV (sets, visits or domain table) whose first line is longer than the ``csv`` module's
field limit (a file of NUL bytes, a binary file named ``.csv``) was read whole into memory and
ended with "error: Error: field larger than field limit", exit code 1, naming no file; an
output name of 228..240 bytes (within the names the commands accept) failed after the work,
because the atomic writes nest a temporary inside another (``fit --out``, whose checkpoints
stayed behind; ``sample``/``convert`` TFRecord output); a refusal with standard error full
(``2>/dev/full``) ended with exit code 1, not 2; an output file name taken by a directory
(``stats --out D`` with ``D/q_within.json/``, a TFRecord shard name, ``fit``'s
``checkpoints`` a file) failed after the work with exit code 1, leaving the release files
merged before it mixed with the old ones; a directory made read-only during the work was
reported as the hidden temporary's permission.

The Python API: ``api.answers``/``api.observe`` truncated fractional topics and site ids,
read ``witnessed="0.5"`` as a number, gave no answer for an empty site array, took
``weeks=True`` as one week and raised plain ValueError/TypeError/OverflowError/AttributeError
for other bad arguments; ``api.top_k`` failed inside numba on boolean or float16 counts;
``population.empirical_statistics(sets, m=0)`` corrupted the heap (the process aborted);
``dp.bound_contributions`` truncated fractional topics and wrapped indices past int16;
``attacks.profile_anonymity`` hashed fractions; ``validate.distinct_topics(weeks=True)``
counted one week; ``qif.dp_channel(469, 5)`` and ``qif.uniform(10**12)`` were MemoryErrors;
``dp.plan_queries(k=0)`` planned noiseless mechanisms; the Wilson intervals were "math domain
error"; ``TopicSets(metadata="x")`` and ``io.write_sets`` of sets with k = 0 failed (or wrote
an unreadable file) only at the write; ``io.read_sets(k=np.int64(5))``, ``iter_sets`` and
``write_sets`` refused NumPy integers, and ``read_sets(strict="no")`` was strict;
``model.sample(weeks=True)`` drew one week and ``dp.load_statistics(k=True)`` divided by zero.

The same contract as ``test_bad_inputs.py``: exit code 2, one line ``error: ...`` naming the
offending file, row or field, no traceback, and nothing written.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from refusal import (
    fit_small_model,
    invoke,
    invoke_refused,
    population_and_stats,
    random_profiles,
    refusal_test,
)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 users (v2, 4 weeks), their DP statistics and a small fitted model; CSV files whose
    first line is past the csv module's field limit (NUL bytes; a long column name)."""
    d = tmp_path_factory.mktemp("round18")
    population_and_stats(d)
    fit_small_model(invoke, d)
    (d / "nul.csv").write_bytes(b"\0" * 300_000 + b"\n1,2\n")
    (d / "long-header.csv").write_text("user_id," + "x" * 300_000 + "\n1,2\n")
    (d / "huge-header.csv").write_text("user_id," + "x" * (2 << 20) + "\n1,2\n")
    (d / "visits.csv").write_text("user_id,timestamp,url\n1,2024-01-01T00:00:00Z,https://a.com\n")
    (d / "domains.csv").write_text("domain,topics\na.com,1\n")
    (d / "script.txt").write_text("! probe: https://example.com\nfoo bar\n! wait 5\nbaz\n")
    return d



INGEST = ["ingest", "--out", "{out}.parquet", "-q"]

CASES: list[tuple[str, list[str], str]] = [
    # printed the ledger, --taxonomy ignored
    ("stats-explain-with-taxonomy", ["stats", "--explain", "{in}/stats", "--taxonomy", "v1"],
     "field '--taxonomy': --explain only prints a ledger"),
    # printed the example (or the script's summary), --quiet ignored
    ("disclosure-example-quiet", ["disclosure", "--example", "--quiet"],
     "field '--quiet': --quiet belongs to the disclosure experiment"),
    ("disclosure-script-q", ["disclosure", "--script", "{in}/script.txt", "-q"],
     "field '--quiet': --quiet belongs to the disclosure experiment"),
    # "error: Error: field larger than field limit (131072)", exit code 1, no file named
    ("convert-csv-of-nul-bytes", ["convert", "{in}/nul.csv", "{out}.parquet"],
     "nul.csv, field 'SOURCE': the first line holds NUL bytes"),
    ("stats-csv-with-a-300-kb-column-name",
     ["stats", "--sets", "{in}/long-header.csv", "--out", "{out}"],
     "long-header.csv, field '--sets': unreadable header (field larger than field limit"),
    ("ingest-visits-of-nul-bytes",
     [*INGEST, "--visits", "{in}/nul.csv", "--domains", "{in}/domains.csv"],
     "nul.csv, field '--visits': the first line holds NUL bytes"),
    ("ingest-domains-of-nul-bytes",
     [*INGEST, "--visits", "{in}/visits.csv", "--domains", "{in}/nul.csv"],
     "nul.csv, field '--domains': the first line holds NUL bytes"),
    # read whole into memory (a file of several GB without a line break, too)
    ("convert-csv-whose-first-line-is-past-a-mebibyte",
     ["convert", "{in}/huge-header.csv", "{out}.parquet"],
     "huge-header.csv, field 'SOURCE': the first line is longer than 1 MiB"),
]


test_bad_input_is_refused = refusal_test(CASES)


@pytest.mark.parametrize(("args", "suffix"), [
    (["fit", "--stats", "{in}/stats", "--types", "2", "--modes", "1", "--steps", "1",
      "--no-progress", "--out"], ""),
    (["sample", "--model", "{in}/model", "--users", "30", "--seed", "1", "--out"],
     ".tfrecord"),
    (["sample", "--model", "{in}/model", "--users", "30", "--seed", "1", "--shards", "2",
      "--out"], ".tfrecord"),
    (["convert", "--shards", "2", "{in}/pop.parquet"], ".tfrecord"),
], ids=["fit-out", "sample-tfrecord", "sample-tfrecord-shards", "convert-tfrecord-shards"])
def test_an_accepted_long_output_name_is_written(inputs: Path, tmp_path: Path,
                                                 args: list[str], suffix: str) -> None:
    """A name of 239 bytes is within the names the commands accept (240), but a temporary
    made inside another's repeated the name twice: "File name too long" after the work (the
    fit left its checkpoints)."""
    name = "a" * (239 - len(suffix)) + suffix
    res = invoke([a.format(**{"in": inputs}) for a in args] + [str(tmp_path / name)])
    assert res.exit_code == 0, res.output
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_a_refusal_with_standard_error_full_still_exits_2(tmp_path: Path) -> None:
    src = Path(__file__).resolve().parents[2] / "src"
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "topicslab", "fit", "--stats",
                               str(tmp_path / "missing"), "--out", str(tmp_path / "m")],
                              stderr=full, stdout=subprocess.DEVNULL, env=env, timeout=300)
    assert done.returncode == 2


SETS = random_profiles(20, 4, seed=0)


def _api(name: str, *args: Any, **kw: Any) -> Any:
    from topicslab import api

    return getattr(api, name)(*args, **kw)


@pytest.mark.parametrize(("make", "field"), [
    (lambda: _api("answers", SETS + 0.5), "sets"),  # the fractions truncated
    (lambda: _api("answers", SETS[..., :3]), "sets"),  # a ValueError
    (lambda: _api("answers", SETS + 469), "sets"),
    (lambda: _api("answers", SETS, sites=np.array([0.5, 1.5])), "sites"),  # truncated
    (lambda: _api("answers", SETS, sites=np.array([-1, 2])), "sites"),  # wrapped
    (lambda: _api("answers", SETS, sites=np.array([], dtype=np.int64)), "sites"),  # no answer
    (lambda: _api("answers", SETS, user_ids=np.arange(3)), "user_ids"),
    (lambda: _api("answers", SETS, first_week=-1), "first_week"),  # an OverflowError
    (lambda: _api("answers", SETS, witnessed="0.5"), "witnessed"),  # read as 0.5
    (lambda: _api("answers", SETS, witnessed=float("nan")), "witnessed"),
    (lambda: _api("answers", SETS, witnessed=np.ones((2, 20, 4, 3), bool)), "witnessed"),
    (lambda: _api("observe", SETS, weeks=True), "weeks"),  # one week
    (lambda: _api("observe", SETS, weeks=2.5), "weeks"),  # a TypeError
    (lambda: _api("observe", SETS, weeks=5), "weeks"),  # a ValueError
    (lambda: _api("top_k", np.zeros((2, 468))), "counts"),
    (lambda: _api("top_k", np.zeros((2, 469), dtype=object)), "counts"),
    (lambda: _api("top_k_sparse", [0, 1], [0.5], [1]), "topics"),
], ids=["answers-fractional-topics", "answers-wrong-k", "answers-topic-past-taxonomy",
        "answers-fractional-site-ids", "answers-negative-site-id", "answers-no-site",
        "answers-user-ids-length", "answers-first-week-negative", "answers-witnessed-text",
        "answers-witnessed-nan", "answers-witnessed-mask-shape", "observe-weeks-true",
        "observe-weeks-fraction", "observe-weeks-past-the-sets", "top-k-width",
        "top-k-object-counts", "top-k-sparse-fractional-topic"])
def test_python_api_arguments_are_refused(make: Callable[[], Any], field: str) -> None:
    from topicslab.errors import ParameterError

    with pytest.raises(ParameterError) as info:
        make()
    assert info.value.field == field


def test_python_api_dtypes_that_are_counts_are_taken() -> None:
    """Boolean and float16 counts failed inside numba with a typing error."""
    from topicslab import api

    counts = np.zeros((3, 469))
    counts[:, :10] = np.arange(10)
    want = api.top_k(counts)
    assert np.array_equal(api.top_k(counts.astype(np.float16)), want)
    assert api.top_k(counts > 4).shape == (3, 5)
    with pytest.raises(TypeError, match="Mechanism"):
        api.answers(SETS, mechanism={"k": 5})  # was an AttributeError


def test_python_empirical_statistics_does_not_write_past_its_tables() -> None:
    """m = 0 (or below a topic of the sets) let the kernel write past its tables: the process
    died of a corrupted heap. Run in a child process, so a regression cannot take pytest."""
    src = Path(__file__).resolve().parents[2] / "src"
    code = ("import numpy as np\n"
            "from topicslab.population import empirical_statistics\n"
            "from topicslab.errors import ParameterError\n"
            "sets = np.arange(40, dtype=np.int16).reshape(2, 4, 5)\n"
            "for m in (0, 10, 2.5):\n"
            "    try:\n"
            "        empirical_statistics(sets, m=m)\n"
            "    except ParameterError as e:\n"
            "        print(e.field)\n"
            "try:\n"
            "    empirical_statistics(sets + 0.5, m=469)\n"
            "except ParameterError as e:\n"
            "    print(e.field)\n")
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["m", "sets", "m", "sets"]


def _call(module: str, name: str, *args: Any, **kw: Any) -> Any:
    import importlib

    return getattr(importlib.import_module(f"topicslab.{module}"), name)(*args, **kw)


def _topic_sets(**kw: Any) -> Any:
    from topicslab.datamodel import TopicSets

    return TopicSets(SETS, "v2", **kw)


@pytest.mark.parametrize(("make", "field"), [
    (lambda: _call("dp", "bound_contributions", SETS + 0.5, 469), "sets"),  # truncated
    (lambda: _call("dp", "bound_contributions", SETS.astype(np.int64) + 65536, 469),
     "epoch_0_topics"),  # wrapped to a topic of int16
    (lambda: _call("dp", "plan_queries", 2, 0, 469, epsilon=1.0, delta=1e-9), "k"),  # sigma 0
    (lambda: _call("attacks", "profile_anonymity", SETS + 0.5), "sets"),
    (lambda: _call("validate", "distinct_topics", _topic_sets(), weeks=True), "weeks"),
    (lambda: _call("validate", "distinct_topics", _topic_sets(), weeks=2.5), "weeks"),
    (lambda: _call("qif", "uniform", True), "n"),  # a TypeError
    (lambda: _call("qif", "uniform", 10**12), "n"),  # a MemoryError
    (lambda: _call("attacks", "wilson_interval", 11, 10), "successes"),  # math domain error
    (lambda: _call("disclosure", "wilson_interval", -1, 10), "successes"),
    (lambda: _topic_sets(metadata="x"), "metadata"),  # failed at the write (ValueError)
], ids=["bound-contributions-fractional", "bound-contributions-past-int16",
        "plan-queries-k-zero", "profile-anonymity-fractional", "distinct-topics-weeks-true",
        "distinct-topics-weeks-fraction", "qif-uniform-true", "qif-uniform-past-memory",
        "attacks-wilson-successes-past-n", "disclosure-wilson-negative",
        "topic-sets-metadata-text"])
def test_python_functions_refuse_bad_arguments(make: Callable[[], Any], field: str) -> None:
    from topicslab.errors import InputError

    with pytest.raises(InputError) as info:
        make()
    assert info.value.field == field


def test_python_io_takes_numpy_integers_and_refuses_text_flags(inputs: Path,
                                                              tmp_path: Path) -> None:
    """np.int64 k, batch_size and shards were refused as "not an integer"; strict="no" was
    read as strict; a bad TFRecord user_ids was a plain ValueError."""
    from topicslab import io as tio
    from topicslab.errors import ParameterError

    pop = inputs / "pop.parquet"
    assert tio.read_sets(pop, k=np.int64(5)).k == 5
    assert sum(len(part) for part in tio.iter_sets(pop, batch_size=np.int64(100))) == 300
    sets = tio.read_sets(pop)
    tio.write_sets(tmp_path / "s.tfrecord", sets, shards=np.int64(2))
    assert len(list(tmp_path.glob("s-*-of-00002.tfrecord"))) == 2
    for call, field in ((lambda: tio.read_sets(pop, strict="no"), "strict"),
                        (lambda: tio.read_traces(inputs / "pop.parquet", strict=1), "strict"),
                        (lambda: tio.write_sets(tmp_path / "u.tfrecord", sets, user_ids="x"),
                         "user_ids")):
        with pytest.raises(ParameterError) as info:
            call()
        assert info.value.field == field


def test_python_model_and_release_readers_refuse_a_bool_count(inputs: Path) -> None:
    """model.sample(weeks=True) drew one week; dp.load_statistics(k=True) divided by
    C(1, 2) = 0 (a RuntimeWarning, and q_single of infinities)."""
    from topicslab import dp
    from topicslab import model as tm
    from topicslab.errors import InputError

    for call in (lambda: tm.sample(tm.load_model(inputs / "model"), 5, seed=1, weeks=True),
                 lambda: dp.load_statistics(inputs / "stats", k=True),
                 lambda: dp.load_statistics(inputs / "stats", k=470)):
        with pytest.raises(InputError) as info:
            call()
        assert info.value.field in ("weeks", "k")


def test_python_dp_channel_past_its_rows_is_refused() -> None:
    from topicslab import qif

    with pytest.raises(qif.QIFError, match="too many to materialise"):
        qif.dp_channel(469, 5)  # MemoryError: 632 TiB


def test_python_sets_of_no_slot_are_not_written(tmp_path: Path) -> None:
    """k = 0: the Parquet file was written, and every reader refused it."""
    from topicslab import io as tio
    from topicslab.datamodel import TopicSets
    from topicslab.errors import InputError

    sets = TopicSets(np.zeros((5, 4, 0), np.int16), "v2")
    with pytest.raises(InputError) as info:
        tio.write_sets(tmp_path / "k0.parquet", sets)
    assert info.value.field == "sets"
    assert not list(tmp_path.iterdir())


def test_a_directory_made_read_only_during_the_work_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The closing rename refused (the directory made read-only during the work): the line
    named the hidden temporary ("permission denied ... change its permissions"), which could
    not be removed either, and the unlink's own PermissionError hid the first one."""
    from topicslab import _atomic
    from topicslab.errors import InputError

    def denied(src: Any, _dst: Any) -> None:
        raise PermissionError(13, "Permission denied", os.fspath(src))

    def no_unlink(self: Path, missing_ok: bool = False) -> None:
        raise PermissionError(13, "Permission denied", os.fspath(self))

    final = tmp_path / "out.parquet"
    with pytest.raises(InputError) as info:
        with _atomic.atomic_path(final) as tmp:
            tmp.write_bytes(b"complete")
            monkeypatch.setattr(_atomic.os, "replace", denied)
            monkeypatch.setattr(Path, "unlink", no_unlink)
    line = str(info.value)
    assert line.startswith(f"{final}: permission denied: directory {tmp_path}")
    assert f"its temporary {tmp.name} could not be removed either" in line


@pytest.mark.parametrize(("args", "clash", "named"), [
    (["stats", "--sets", "{in}/pop.parquet", "--epsilon", "1000", "--out", "{out}"],
     "out/q_within.json/", "q_within.json: is a directory, where a file of this output"),
    (["fit", "--stats", "{in}/stats", "--types", "2", "--modes", "1", "--steps", "1",
      "--no-progress", "--out", "{out}"],
     "out/checkpoints", "checkpoints, field 'checkpoint_dir': is a file"),
    (["convert", "{in}/pop.parquet", "--shards", "2", "{out}.tfrecord"],
     "out-00001-of-00002.tfrecord/", "out-00001-of-00002.tfrecord: is a directory"),
], ids=["stats-file-name-taken-by-a-directory", "fit-checkpoints-a-file",
        "convert-shard-name-taken-by-a-directory"])
def test_an_output_name_taken_by_the_other_kind_is_refused(inputs: Path, work: Path,
                                                           args: list[str], clash: str,
                                                           named: str) -> None:
    """A directory where the output writes a file: the work ran, then IsADirectoryError with
    exit code 1, and the release files merged before it stayed (the old release mixed with
    the new); a file named checkpoints: FileExistsError at the fit's first checkpoint."""
    target = work / clash.rstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    if clash.endswith("/"):
        target.mkdir()
        (target / "kept.txt").write_text("x")
    else:
        target.write_text("x")
    if args[0] == "stats":
        (work / "out" / "privacy_ledger.json").write_text("{}")  # an older release's file
    invoke_refused(invoke, args, inputs, work, named)


def test_a_population_chunk_is_sized_with_its_write(work: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """``population --users 10000000 --weeks 1023``: the default chunk of 250,000 users was
    estimated at 80 bytes a user-week (20.5 GB), passed with 22 GB available, and the process
    was killed by the kernel at 23.5 GB (writing the chunk adds ~45 bytes a user-week). Here
    with 25 GiB available; nothing is generated (the generator is stubbed), whatever the
    machine."""
    from topicslab import _resources
    from topicslab import population as pop

    monkeypatch.setattr(_resources, "available_memory", lambda: 25 * 2**30)
    monkeypatch.setattr(_resources, "available_disk", lambda _path: 1 << 50)
    monkeypatch.setattr(pop, "generate_chunks", lambda *_a, **_k: iter(()))
    invoke_refused(invoke, ["population", "--users", "10000000", "--weeks", "1023",
                            "--out", "{out}.parquet"], work, work,
                   "field '--chunk-users': generating 250,000 users x 1,023 weeks at once")


def test_python_wrong_objects_are_type_errors_naming_the_type() -> None:
    """``attacks.answer_epsilon({...})`` and ``population.calibration_table(array)`` were
    AttributeErrors from deep inside ('dict' object has no attribute 'q_out')."""
    from topicslab import attacks, population

    with pytest.raises(TypeError, match="Mechanism"):
        attacks.answer_epsilon({"p": 0.1})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="TopicSets"):
        population.calibration_table(SETS)  # type: ignore[arg-type]
