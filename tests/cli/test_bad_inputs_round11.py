"""Bad input, the eleventh independent round (issue 15): files this user may not read, a full
disk, the signal of a closed terminal, an environment numba cannot cache in, TOPICSLAB_DEBUG
read the wrong way round; and in the inputs, Unix times in milliseconds, a time column that is
the user column, a JSON key given twice, one shard of a set read as the set, the population
compared with itself, and ``run --theory`` on sets with empty slots refused only at the end.

The same contract as ``test_bad_inputs.py``: exit code 2, one line ``error: ...`` naming the
offending file, row or field, no traceback, and nothing written (the test's directory, also
the current directory, is unchanged, and so are the inputs).
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from refusal import (
    check_refused,
    fit_small_model,
    invoke,
    invoke_refused,
    population_and_stats,
    random_profiles,
    refusal_test,
    tree,
)

from topicslab import io as tio

#: this checkout's package, for the tests that run the console entry point
PACKAGE = str(Path(tio.__file__).parents[2])



@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 users (v2) with DP statistics and a one-step model; the users as a TFRecord set of
    two shards (and one shard alone elsewhere); sets with empty slots; visits logs and domain
    tables, each with one defect; population parameters with a key given twice."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from topicslab.datamodel import TopicSets

    d = tmp_path_factory.mktemp("round11")
    data, _ = population_and_stats(d)
    fit_small_model(invoke, d)
    (d / "shards").mkdir()
    tio.write_sets(d / "shards" / "pop.tfrecord", data, shards=2)
    (d / "alone").mkdir()
    shutil.copy(d / "shards" / "pop-00000-of-00002.tfrecord", d / "alone")
    gaps = random_profiles(300, 4, seed=1)
    gaps[1, 2, 3:] = -1  # user 1 holds 3 topics in week 2
    tio.write_sets(d / "gaps.parquet", TopicSets(gaps, "v2", np.arange(300, dtype=np.int64)))
    head = "user_id,timestamp,url\n"
    (d / "visits.csv").write_text(head + "1,2024-01-01T10:00:00Z,https://example.com/a\n"
                                  "2,2024-01-09T10:00:00Z,https://news.com/\n")
    (d / "visits-ms.csv").write_text(head + "1,1704103200000,https://example.com/a\n"
                                     "2,1704794400000,https://news.com/\n")
    pq.write_table(pa.table({"user_id": [1, 2], "url": ["a.com", "b.com"], "timestamp": pa.array(
        [1704103200000 * 1000] * 2, pa.timestamp("ms"))}), d / "visits-far.parquet")
    pq.write_table(pa.table({"user_id": [1, 2], "url": ["a.com", "b.com"], "timestamp": pa.array(
        [1704103200000000] * 2, pa.int64())}), d / "visits-us.parquet")
    (d / "domains.csv").write_text("domain,topics\nexample.com,1;4\nnews.com,9\n")
    (d / "domains-twice.json").write_text('{"example.com": [1, 4], "news.com": [9], '
                                          '"example.com": [9]}')
    from topicslab.population import params as pp

    shipped = (Path(pp.__file__).parent / "data" / "reference_v2.json").read_text()
    (d / "params-twice.json").write_text(shipped.replace("{", '{"explore_prob": 0.9, ', 1))
    return d


P, S, M = "{in}/pop.parquet", "{in}/stats", "{in}/model"
SHARD = "{in}/shards/pop-00001-of-00002.tfrecord"
INGEST = ["ingest", "--out", "{out}.parquet", "-q", "--domains", "{in}/domains.csv",
          "--visits"]
VAL = ["validate", "--stats", S, "--model", M, "--json", "{out}.json", "--population", P]

CASES: list[tuple[str, list[str], str]] = [
    # Unix times in milliseconds were read as the year 55973: "OverflowError", exit code 1
    ("ingest-times-in-milliseconds", [*INGEST, "{in}/visits-ms.csv"],
     "visits-ms.csv, row 1, field 'timestamp': 1704103200000 is not a time in Unix seconds"),
    # in microseconds, in a Parquet integer column, they wrapped around int64 (then the
    # same failure)
    ("ingest-times-in-microseconds", [*INGEST, "{in}/visits-us.parquet"],
     "visits-us.parquet, row 1, field 'timestamp'"),
    # a Parquet timestamp column past the year 9999: the row-group statistics overflowed
    ("ingest-timestamps-past-9999", [*INGEST, "{in}/visits-far.parquet"],
     "visits-far.parquet, row 1, field 'timestamp'"),
    # the user column as the time column: every visit in week 0, silently
    ("ingest-timestamp-column-is-the-user-column",
     [*INGEST, "{in}/visits.csv", "--timestamp-column", "user_id"],
     "field '--timestamp-column': column 'user_id' holds the user ids"),
    ("ingest-week-column-is-the-user-column",
     [*INGEST, "{in}/visits.csv", "--week-column", "user_id"], "field '--week-column'"),
    # a domain given twice in a JSON object: the last topics won silently (a CSV or a list
    # of records listing it twice was refused)
    ("ingest-json-domain-twice", ["ingest", "--out", "{out}.parquet", "-q", "--visits",
                                  "{in}/visits.csv", "--domains", "{in}/domains-twice.json"],
     "domains-twice.json, field 'example.com': 'example.com' is given twice"),
    # a population parameter given twice: the later value won silently
    ("population-params-key-twice", ["population", "--users", "100", "--out", "{out}.parquet",
                                     "--params", "{in}/params-twice.json"],
     "params-twice.json, field 'explore_prob'"),
    # one shard of a set named alone: read as the whole data set, half the users, silently
    ("convert-one-shard-of-a-set", ["convert", SHARD, "{out}.parquet"],
     "pop-00001-of-00002.tfrecord, field 'SOURCE': is one shard of a set of 2"),
    ("stats-one-shard-of-a-set", ["stats", "--sets", SHARD, "--out", "{out}"],
     "is one shard of a set of 2"),
    ("reid-one-shard-of-a-set", ["reid", "--sets", SHARD, "--trials", "1", "--targets", "5",
                                 "--no-progress"], "is one shard of a set of 2"),
    # the population compared with itself: every gap 0 and a PASS, silently
    ("validate-synthetic-is-the-population", [*VAL, "--synthetic", P],
     "pop.parquet, field '--synthetic': is the population file itself"),
    # sets with empty slots and --theory: refused at the theory stage, after every other
    # stage had run and written OUT/stages.json
    ("run-theory-on-sets-with-empty-slots",
     ["run", "--preset", "smoke", "--quiet", "--no-disclosure", "--theory", "--sets",
      "{in}/gaps.parquet", "--out", "{out}"], "gaps.parquet, row 2, field '--sets'"),
]


test_bad_input_is_refused = refusal_test(CASES)


def test_validate_synthetic_through_a_link_to_the_population(inputs: Path, work: Path) -> None:
    """The same file under another name (a symbolic link) is the population too."""
    (work / "link.parquet").symlink_to(inputs / "pop.parquet")
    invoke_refused(invoke, [*VAL, "--synthetic", str(work / "link.parquet")], inputs,
                   work, "field '--synthetic': is the population file itself")


def test_a_shard_alone_and_a_set_by_pattern_are_still_read(inputs: Path, work: Path) -> None:
    """A shard with no sibling beside it is read on its own, and the pattern the refusal
    suggests reads the whole set."""
    res = invoke(["convert", str(inputs / "alone" / "pop-00000-of-00002.tfrecord"),
                  "one.parquet"])
    assert res.exit_code == 0, res.output
    assert tio.read_sets(work / "one.parquet").n_users == 150
    res = invoke(["convert", str(inputs / "shards" / "pop-*-of-00002.tfrecord"),
                  "all.parquet"])
    assert res.exit_code == 0, res.output
    assert tio.read_sets(work / "all.parquet").n_users == 300


# ---- files this user may not read --------------------------------------------------------

def test_permission_denied_is_one_line(inputs: Path, work: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A release directory without search permission (chmod 600) made ``Path.exists`` raise
    PermissionError: "error: PermissionError: ...", exit code 1 (fit, run --stats, stats
    --explain). Now the one line names the file. (Root reads everything, so the error is
    raised here as the file system raises it; the next test does it for real.)"""
    from topicslab import dp

    denied = str(inputs / "stats" / "q_within.json")

    def load(*_args: Any, **_kwargs: Any) -> Any:
        raise PermissionError(errno.EACCES, "Permission denied", denied)

    monkeypatch.setattr(dp, "load_statistics", load)
    invoke_refused(invoke, ["fit", "--stats", S, "--out", "{out}", "--no-progress"], inputs,
                   work, f"{denied}: permission denied")


def _as_an_ordinary_user() -> list[str]:
    """A command prefix that runs without root's power to read every file (setpriv drops
    the capabilities); skips the test where that is not possible."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: permissions are not enforced")
    prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner"]
    probe = subprocess.run([*prefix, "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip("setpriv cannot drop the capabilities here")
    return prefix


@pytest.mark.parametrize("case", ["stats-not-searchable", "model-weights-unreadable"])
def test_real_permission_denied(inputs: Path, work: Path, case: str) -> None:
    """For real: a statistics directory without search permission (exit code 1 before), and
    a model whose weights this user may not read ("No such file or directory", wrongly)."""
    prefix = _as_an_ordinary_user()
    if case == "stats-not-searchable":
        shutil.copytree(inputs / "stats", work / "stats")
        (work / "stats").chmod(0o600)
        # (round 43: the line names the directory that may not be searched and the option,
        # where it named a file in it, q_within.json, as unreadable)
        args = ["fit", "--stats", "stats", "--out", "m"]
        named = "stats, field '--stats': directory stats cannot be searched by this user"
    else:
        shutil.copytree(inputs / "model", work / "model")
        (work / "model" / "model.safetensors").chmod(0)
        args = ["sample", "--model", "model", "--users", "5", "--seed", "0", "--out",
                "s.parquet"]
        named = ("model.safetensors, field '--model': cannot read safetensors (Permission "
                 "denied)")
    before = tree(work)
    env = {**os.environ, "PYTHONPATH": PACKAGE}
    env.pop("TOPICSLAB_DEBUG", None)
    try:
        proc = subprocess.run([*prefix, sys.executable, "-m", "topicslab", *args],
                              capture_output=True, text=True, env=env, check=False, cwd=work)
    finally:
        for p in work.rglob("*"):
            p.chmod(0o700 if p.is_dir() else 0o600)
    check_refused(proc.stderr, proc.returncode, named)
    assert tree(work) == before


# ---- a full disk ---------------------------------------------------------------------------

def _disk_full(monkeypatch: pytest.MonkeyPatch) -> None:
    """The disk holding every output: no byte free."""
    from collections import namedtuple

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda _path: usage(1 << 30, 1 << 30, 0))


def test_full_disk_is_one_line_naming_the_output(inputs: Path, work: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A write on a full disk failed with exit code 1 and no file named: "OSError: [Errno 28]
    No space left on device" (stats, observe, convert, qif --plot)."""
    _disk_full(monkeypatch)

    def no_space(*_args: Any, **_kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", no_space)
    invoke_refused(invoke, ["stats", "--sets", P, "--epsilon", "1000", "--out", "{out}"],
                   inputs, work, f"{work / 'out'}: no space left on the device")


def test_full_disk_under_another_name_is_one_line(inputs: Path, work: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """torch says a full disk as "RuntimeError: [enforce fail at inline_container.cc:672] .
    unexpected pos 2688 vs 2582" (exit code 1): the disk is asked, and the line says so."""
    import torch

    _disk_full(monkeypatch)

    def torn(*_args: Any, **_kwargs: Any) -> None:
        raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 2688 "
                           "vs 2582")

    monkeypatch.setattr(torch, "save", torn)
    invoke_refused(invoke, ["fit", "--stats", S, "--out", "{out}", "--types", "2", "--modes",
                            "1", "--steps", "1", "--no-progress"], inputs, work,
                   "no space left on the device")


def test_standard_output_on_a_full_device(work: Path) -> None:
    """Results sent to a full device (``> /dev/full``): exit code 1, "OSError"."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    env = {**os.environ, "PYTHONPATH": PACKAGE}
    env.pop("TOPICSLAB_DEBUG", None)
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "topicslab", "qif", "--m", "10"],
                              stdout=full, stderr=subprocess.PIPE, text=True, env=env,
                              check=False, cwd=work)
    check_refused(proc.stderr, proc.returncode, "no space left on the device")


def test_disk_estimates_are_shown_in_a_readable_unit(work: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A small population on a nearly full disk: "needs at least 0.0 GiB of disk, 0.0 GiB
    free there" said nothing; now both in the unit that shows them."""
    from topicslab import _resources

    monkeypatch.setattr(_resources, "available_disk", lambda _path: 10_000)
    res = invoke(["population", "--users", "20000", "--out", "p.parquet"])
    line = check_refused(res.output, res.exit_code, "field '--users'")
    assert "9.8 KiB free" in line and "0.0 GiB" not in line, line
    assert not list(work.iterdir())


# ---- signals and environment ----------------------------------------------------------------

def _console(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": PACKAGE}
    full.pop("TOPICSLAB_DEBUG", None)
    full.update(env)
    return subprocess.run([sys.executable, "-m", "topicslab", *args], capture_output=True,
                          text=True, env=full, check=False, cwd=cwd)


def test_closed_terminal_leaves_no_temporary(work: Path) -> None:
    """Closing the terminal (or a dropped ssh connection: SIGHUP) ended the process on the
    spot: exit code 129, no line, and the atomic write's hidden temporary (29 MB of
    ``.big.parquet.XXXXXXXX.tmp``) left behind. Now it ends as Ctrl-C does."""
    env = {**os.environ, "PYTHONPATH": PACKAGE}
    # the child starts with SIGHUP at its default: a test run under nohup (SIGHUP ignored,
    # inherited) would otherwise see the command keep running, as it should under nohup
    proc = subprocess.Popen([sys.executable, "-m", "topicslab", "population", "--users",
                             "3000000", "--chunk-users", "100000", "--out", "big.parquet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                            text=True, cwd=work,
                            preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not any(work.iterdir()) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)  # until the write has begun
    proc.send_signal(signal.SIGHUP)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1].startswith("interrupted: population stopped"), err
    assert list(work.iterdir()) == []


def test_numba_without_a_cache_directory_is_one_line(work: Path) -> None:
    """The package installed read-only and HOME not writable (a container run as another
    user): numba found nowhere to cache the kernels it compiles on import, and the import
    ended in a RuntimeError traceback, exit code 1. The import is made to fail as numba's
    does (root could write the cache anywhere)."""
    script = """
import sys
class Uncachable:
    def find_spec(self, name, path=None, target=None):
        if name == "topicslab.cli":
            raise RuntimeError("cannot cache function '_holds': no locator available for "
                               "file '/usr/lib/python3/site-packages/topicslab/qif/x.py'")
sys.meta_path.insert(0, Uncachable())
sys.argv = ["topicslab", "qif"]
from topicslab._main import main
main()
"""
    env = {**os.environ, "PYTHONPATH": PACKAGE}
    env.pop("TOPICSLAB_DEBUG", None)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, check=False, cwd=work)
    check_refused(proc.stderr, proc.returncode, "set NUMBA_CACHE_DIR to a writable directory")
    assert not list(work.iterdir())


def test_topicslab_debug_false_means_no_traceback(inputs: Path, work: Path) -> None:
    """TOPICSLAB_DEBUG=false turned tracebacks on (any value but "" and "0" did); a value
    that is neither on nor off is refused, naming the variable."""
    proc = _console(["fit", "--stats", "no-such-stats", "--out", "m"], work,
                    TOPICSLAB_DEBUG="false")
    check_refused(proc.stderr, proc.returncode, "no-such-stats")
    proc = _console(["qif"], work, TOPICSLAB_DEBUG="maybe")
    check_refused(proc.stderr, proc.returncode, "TOPICSLAB_DEBUG='maybe'")
    assert not list(work.iterdir())
