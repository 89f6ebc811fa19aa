"""Bad input, the forty-fifth independent round: option combinations and interactions,
output paths, saved artefacts edited by hand, interruptions other than SIGKILL (SIGINT,
SIGTERM, SIGHUP at random points, a reader that goes away, closed standard streams) and the
Python API given the wrong kinds of values.

- ``topicslab --help | head -1`` (and ``topicslab stats --help | head``, or ``topicslab``
  alone): exit code 1, where a command's output cut short the same way (``qif | head``)
  ends as the command would have: Typer prints the help on rich's own console, which ends
  the process with ``SystemExit(1)`` on a broken pipe.
- A kill (SIGTERM) or a closed terminal (SIGHUP) in the half second the libraries take to
  load: the process ended with no line at all (exit status 143 / 129, signal's default),
  where Ctrl-C in the same half second said "interrupted: topicslab stopped while
  starting; nothing written".
- A Ctrl-C in the hundredths of a second ``python -m topicslab`` takes to import its entry
  point: Python's traceback.

The same contract as ``test_bad_inputs.py``: exit code 2 (130 when interrupted), one line,
no traceback, and nothing written.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("TOPICSLAB_DEBUG", None)
    return env


@pytest.mark.parametrize(("args", "code"), [(["--help"], 0), (["stats", "--help"], 0),
                                            (["run", "--help"], 0), ([], 2)])
def test_the_help_to_a_reader_that_has_gone_ends_as_it_would_have(
        args: list[str], code: int, work: Path) -> None:
    """``topicslab --help | head -1``: the reader is gone before the help is written (its
    end of the pipe closed), and the help ends with its own exit code, without a line."""
    read, write = os.pipe()
    os.close(read)
    try:
        res = subprocess.run([sys.executable, "-m", "topicslab", *args], stdout=write,
                             stderr=subprocess.PIPE, text=True, env=_env(), timeout=120)
    finally:
        os.close(write)
    assert res.returncode == code, res.stderr
    assert res.stderr == ""


_SIGNAL_WHILE_LOADING = """
import os, signal, sys
import topicslab._main as m
number, load = getattr(signal, sys.argv[1]), m._import_cli
def loading():
    os.kill(os.getpid(), number)  # (delivered at once: the process's own signal)
    return load()
m._import_cli = loading
sys.argv = ["topicslab", "qif"]
m.main()
"""


@pytest.mark.skipif(not hasattr(__import__("signal"), "SIGHUP"), reason="POSIX signals")
@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_a_kill_while_the_libraries_load_ends_with_the_line(name: str, work: Path) -> None:
    # the child starts with the signal at its default: a test run under nohup (SIGHUP
    # ignored, inherited) would otherwise see the command run on, as it should under nohup
    number = getattr(signal, name)
    res = subprocess.run([sys.executable, "-c", _SIGNAL_WHILE_LOADING, name],
                         capture_output=True, text=True, env=_env(), timeout=120,
                         preexec_fn=lambda: signal.signal(number, signal.SIG_DFL))
    assert res.returncode == 130, (res.returncode, res.stderr)
    assert res.stderr == "interrupted: topicslab stopped while starting; nothing written\n"
    assert res.stdout == ""


_CTRL_C_WHILE_IMPORTING = """
import runpy, sys
class CtrlC:
    def find_spec(self, name, path=None, target=None):
        if name == "topicslab._main":
            raise KeyboardInterrupt
        return None
sys.meta_path.insert(0, CtrlC())
sys.argv = ["topicslab", "qif"]
runpy.run_module("topicslab", run_name="__main__", alter_sys=True)
"""


def test_ctrl_c_while_python_m_imports_its_entry_point_is_one_line(work: Path) -> None:
    res = subprocess.run([sys.executable, "-c", _CTRL_C_WHILE_IMPORTING],
                         capture_output=True, text=True, env=_env(), timeout=120)
    assert res.returncode == 130, (res.returncode, res.stderr)
    assert res.stderr == "interrupted: topicslab stopped while starting; nothing written\n"


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> object:
    from refusal import population_and_stats

    from topicslab import dp

    directory = tmp_path_factory.mktemp("r45")
    population_and_stats(directory)
    return dp.load_statistics(directory / "stats")


@pytest.mark.parametrize("target", [[0.01], (0.01,), 1j, True])
def test_fit_s_target_of_another_kind_names_the_target(target: object, release: object) -> None:
    """A list, a tuple or a complex number as the loss target: float()'s TypeError; True
    was a loss target of 1."""
    from topicslab import model
    from topicslab.errors import InputError

    with pytest.raises(InputError, match="field 'target': target must be a loss"):
        model.fit(release, types=2, target=target, progress=False, device="cpu", threads=1)


def test_fit_s_threads_past_the_cpus_are_refused_naming_threads(release: object) -> None:
    """threads=2**70: torch's "ValueError: Overflow when unpacking long long"."""
    from topicslab import model
    from topicslab.errors import InputError

    with pytest.raises(InputError, match="field 'threads': threads must be in 1"):
        model.fit(release, types=2, threads=2**70, progress=False, device="cpu")


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_a_single_week_as_a_0d_array_is_refused_naming_weeks(kind: str) -> None:
    """``dp.compute_statistics(sets, weeks=np.array(1))``: "TypeError: iteration over a 0-d
    array" (a 0-d array is Iterable by its type)."""
    import numpy as np
    from refusal import random_profiles

    from topicslab import dp
    from topicslab.datamodel import TopicSets
    from topicslab.errors import InputError

    weeks = np.array(1) if kind == "numpy" else __import__("torch").tensor(1)
    sets = TopicSets(random_profiles(30, 2), "v2")
    with pytest.raises(InputError, match="field 'weeks': weeks must be a list of week"):
        dp.compute_statistics(sets, weeks=weeks, seed=0)


@pytest.fixture(scope="module")
def small() -> object:
    import numpy as np
    from refusal import random_profiles

    from topicslab.datamodel import TopicSets

    return TopicSets(random_profiles(30, 3), "v2", np.arange(30, dtype=np.int64))


@pytest.mark.parametrize(("delimiter", "named"), [
    (1, "must be one character"), ([","], "must be one character"), (True, "one character"),
    ("3", "would occur in the cells"), (";", "would occur in the cells")])
def test_a_csv_delimiter_of_another_kind_names_the_delimiter(
        delimiter: object, named: str, small: object, tmp_path: Path) -> None:
    """A number: "object of type 'int' has no len()"; a list: an AttributeError; a digit or
    ';': pyarrow's "CSV values may not contain structural characters"."""
    from topicslab import io
    from topicslab.errors import InputError

    with pytest.raises(InputError, match=f"field 'delimiter': .*{named}"):
        io.write_sets_csv(tmp_path / "a.csv", small, delimiter=delimiter)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("m", ["469", [469], float("nan"), float("inf")])
def test_qif_distinct_profiles_of_a_bad_m_names_m(m: object, small: object) -> None:
    from topicslab import qif

    with pytest.raises(qif.QIFParameterError, match="field 'm': m must be an integer"):
        qif.distinct_profiles(small, m=m)  # type: ignore[arg-type]


@pytest.mark.parametrize("s", [[5], float("nan"), float("inf"), 2.7])
def test_qif_population_tables_of_a_bad_s_names_s(s: object, small: object) -> None:
    from topicslab import qif

    with pytest.raises(qif.QIFParameterError, match="field 's': s must be an integer"):
        qif.population_tables(small, s=s)  # type: ignore[arg-type]


def test_estimate_popularity_of_too_many_topics_names_m() -> None:
    import numpy as np

    from topicslab import attacks
    from topicslab.errors import InputError

    with pytest.raises(InputError, match=r"field 'm': m must be in 1\.\.1000000"):
        attacks.estimate_popularity(np.zeros((5, 2), np.int16), 2**70, 0.9, 0.01)


@pytest.mark.parametrize("attacks_", [None, True, 1.5])
def test_measure_risk_of_no_attack_list_names_attacks(attacks_: object, small: object) -> None:
    from topicslab import attacks
    from topicslab.errors import InputError

    with pytest.raises(InputError, match="field 'attacks': attacks must be an attack or a list"):
        attacks.measure_risk(small, attacks=attacks_, weeks=2, targets=10,  # type: ignore[arg-type]
                             trials=1, progress=False)


@pytest.mark.parametrize(("kw", "named"), [
    ({"tolerance": None}, "field 'tolerance': tolerance must be a positive number"),
    ({"tolerance": "0.1"}, "field 'tolerance': tolerance must be a positive number"),
    ({"weeks": 2}, "field 'weeks': weeks must be a list of numbers of weeks"),
    ({"weeks": 1.5}, "field 'weeks': weeks must be a list of numbers of weeks")])
def test_fidelity_of_values_of_another_kind_names_the_field(
        kw: dict[str, object], named: str, small: object) -> None:
    from topicslab import validate
    from topicslab.errors import InputError

    with pytest.raises(InputError, match=named):
        validate.fidelity(small, small, **kw)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def fitted(release: object) -> object:
    from topicslab import model

    return model.fit(release, types=2, progress=False, device="cpu", threads=1,
                     max_minutes=0.01).model


@pytest.mark.parametrize("pairs", [True, 1.5, [1], [(0, 1, 2)], "01"])
def test_fit_quality_of_no_week_pairs_names_week_pairs(pairs: object, release: object,
                                                      fitted: object) -> None:
    from topicslab import validate
    from topicslab.errors import InputError

    with pytest.raises(InputError, match="field 'week_pairs': week_pairs must be a list"):
        validate.fit_quality(release, fitted, week_pairs=pairs)  # type: ignore[arg-type]


def test_week_pairs_and_weeks_in_other_containers_are_still_taken(
        release: object, fitted: object, small: object) -> None:
    """The checks above read their values once: pairs from a generator or an array (a
    generator was consumed by the check, leaving no pair), weeks as an array (refused by a
    Sequence test)."""
    import numpy as np

    from topicslab import validate

    want = validate.fit_quality(release, fitted, week_pairs=[(0, 1)]).loss
    for pairs in (((0, 1) for _ in range(1)), np.array([[0, 1]])):
        assert validate.fit_quality(release, fitted, week_pairs=pairs).loss == want
    got = validate.fidelity(small, small, weeks=np.array([1]), trials=1, targets=20, seed=1)
    assert [g["weeks"] for g in got.to_dict()["gaps"]] == [1, 1]


def test_save_statistics_of_an_unknown_schema_names_the_schema(release: object,
                                                               tmp_path: Path) -> None:
    """A ValueError without a field; a ParameterError is still a ValueError."""
    from topicslab import dp
    from topicslab.errors import InputError

    with pytest.raises(InputError, match="field 'schema': schema must be 'current' or 'legacy'"):
        dp.save_statistics(tmp_path / "s", release, schema="new")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        dp.save_statistics(tmp_path / "s", release, schema="new")  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kind", ["directory", "pipe", "device", "dangling"])
def test_a_run_s_record_of_the_wrong_kind_is_named_as_such(kind: str, work: Path) -> None:
    """OUT/stages.json a directory, a pipe, a link to /dev/zero or to nothing: "holds files
    but no stages.json, so it is not a run's output directory" -- it has one."""
    from refusal import check_refused, invoke, tree

    out = work / "out"
    out.mkdir()
    (out / "report.html").write_text("<html></html>")
    record = out / "stages.json"
    if kind == "directory":
        record.mkdir()
    elif kind == "pipe":
        os.mkfifo(record)
    elif kind == "device":
        record.symlink_to("/dev/zero")
    else:
        record.symlink_to("nothing-here.json")
    before = tree(work)
    res = invoke(["run", "--preset", "smoke", "--users", "300", "--fit-steps", "2", "--types",
                  "2", "--targets", "50", "--trials", "2", "--no-disclosure", "-q", "--out",
                  str(out)])
    line = check_refused(res.output, res.exit_code, "stages.json, field '--out': is ")
    assert "where a run keeps the record of its stages" in line
    assert tree(work) == before


@pytest.mark.parametrize("damage", ["empty", "cut"])
def test_a_checkpoint_that_cannot_be_read_names_resume(damage: str, work: Path) -> None:
    """An empty checkpoint: "cannot read checkpoint ()"; one cut short: torch's paragraph on
    miniz -- neither named --resume nor said what to do."""
    from refusal import check_refused, invoke, population_and_stats, tree

    population_and_stats(work)
    fit = ["fit", "--stats", str(work / "stats"), "--out", str(work / "m"), "--types", "2",
           "--steps", "2", "--checkpoint-every", "1", "--no-progress", "--target", "none",
           "--no-noise-stop", "--threads", "1"]
    assert invoke(fit).exit_code == 0
    checkpoint = work / "m" / "checkpoints" / "checkpoint.pt"
    data = checkpoint.read_bytes()
    checkpoint.write_bytes(b"" if damage == "empty" else data[: len(data) // 2])
    before = tree(work)
    res = invoke([*fit, "--resume"])
    line = check_refused(res.output, res.exit_code, "checkpoint.pt, field '--resume': cannot be "
                         "read as a checkpoint (")
    assert "()" not in line and "drop --resume" in line
    assert tree(work) == before


_WRITE_INTO_READ_ONLY = """
import os, sys
import numpy as np
from refusal import random_profiles
from topicslab import io
from topicslab.datamodel import TopicSets
os.chmod("o", 0o555)  # (as a directory made read-only while a command works)
try:
    io.write_sets(sys.argv[1], TopicSets(random_profiles(20, 2), "v2"))
except Exception as exc:
    print(type(exc).__name__, exc)
"""


@pytest.mark.parametrize("name", ["o/x.csv", "o/x.parquet"])
def test_a_directory_made_read_only_names_the_output_not_its_temporary(
        name: str, work: Path) -> None:
    """The output's directory read-only when the temporary is made (``convert`` or a run's
    population after chmod 555 during the work, or from Python): "PermissionError ... Permission
    denied: '/abs/o/.x.csv.<tag>.tmp'" (the CLI: "this user may not read (or write) it") -- a
    hidden file that was never made; mkstemp names it by its absolute path, which did not match
    the relative output."""
    import shutil

    setpriv = shutil.which("setpriv")
    prefix: list[str] = []
    if os.geteuid() == 0:
        probe = subprocess.run([setpriv, "--inh-caps=-all", "--bounding-set=-all", "true"],
                               capture_output=True, check=False) if setpriv else None
        if probe is None or probe.returncode != 0:
            pytest.skip("root, and no setpriv to drop the privileges that bypass permissions")
        prefix = [str(setpriv), "--inh-caps=-all", "--bounding-set=-all"]
    (work / "o").mkdir()
    env = _env()
    env["PYTHONPATH"] += os.pathsep + str(Path(__file__).parent)
    try:
        res = subprocess.run([*prefix, sys.executable, "-c", _WRITE_INTO_READ_ONLY, name],
                             capture_output=True, text=True, env=env, timeout=120, cwd=work)
    finally:
        (work / "o").chmod(0o755)
    assert res.stdout.startswith(f"InputError {name}: permission denied: directory o does not "
                                 "let this user create or replace files"), res.stdout + res.stderr
    assert list((work / "o").iterdir()) == []
