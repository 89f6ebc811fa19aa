"""Bad input, the fifty-second independent round: the standard streams, the environment of a
real installation, every JSON input at its edges, the documentation run as written, and the
benchmark scripts.

- ``stats --explain`` of a privacy ledger whose shown text or views were edited to another
  kind of JSON value: a composed view's ``method`` or the claim's ``basis``/``warning`` as a
  number, list or object was "error: NotRenderableError: unable to render int" (rich), exit
  code 1; a composed view that is no object (``"basic": 1.5``) or a ``noise_vs_paper`` row of
  a text or null ``sigma_ratio`` "a ledger field has the wrong form (AttributeError: 'float'
  object has no attribute 'get')", naming no field; a claimed ε of ``"abc"``, ``NaN`` or
  ``true`` was printed as
  the release's claim, and so were a composed view's ε or δ of ``true`` or text; a
  within-week mechanism's ``"weeks": [true]`` was taken as week 1 (``True == 1``). Each is
  now refused naming the ledger and the field, as the target's ε already was.
- A model's ``model.json`` of ``"format_version": true``: read as version 1 (``True == 1``
  in Python). Refused, as a learned attack's is, naming ``format_version``.
- A release's ``output_parameters.json`` keyed ``"type \uff10"`` (a full-width digit) or
  ``"type 0.0"``: read as type 0, where every other reader takes ASCII digits only (rounds
  24, 27, 37). Refused naming the key (and "an epoch number", not "a epoch number").
- ``LearnedAttackConfig(lr=inf)`` (``l2``, ``listwise``, ``pair_pseudo_count`` too), and a
  learned attack's ``model.json`` whose config says ``1e400`` (read as infinity): taken, where
  NaN is refused; a training on an infinite rate or weight learns from NaN losses. Now an
  ``InputError`` naming the field (the gate alone may be infinite: any negative gate is off).
- A text input saved as UTF-16 or UTF-32 (Excel's "Unicode Text", Windows PowerShell's
  ``Out-File``): a CSV/TSV table (sets, visits, domains), a JSON file (a ledger, q_*.json,
  population parameters, a domain table, a model's or learned attack's model.json) or a
  query script was "'utf-8' codec can't decode byte 0xff in position 0", "Expecting value:
  line 1 column 2" or "the first line holds NUL bytes" -- nothing said what the file is or
  what to do. Each now says "is UTF-16 text, and topicslab reads UTF-8: save it as UTF-8"
  (``_json.wide_text``, ``read_document``).
- A large file given as a metadata file -- a privacy ledger (``stats --explain``), population
  parameters (``--params``), a model's or a learned attack's ``model.json``, a run's
  ``stages.json`` -- was read whole into memory before it was found not to be one (a 4 GiB
  file under ``ulimit -v``: "out of memory ...: use fewer users, weeks or types", exit code
  1, no file named). Such files hold kilobytes; one past 64 MiB is now refused before it is
  read, naming the file and asking whether it is the right one.
- ``attacks.learned.save_attack(d, None)`` (or text): "AttributeError: 'NoneType' object has
  no attribute 'scorer'"; ``LearnedTraceAttack("attackdir")`` was taken, to fail inside
  ``measure_risk``'s trials. Both are now the ``TypeError`` ``measure_risk_learned`` gives.
- The package read-only and ``XDG_CACHE_HOME`` a read-only directory: "numba has nowhere to
  keep its compiled code: ... the user cache (~/.cache)", a directory numba never tried; the
  line now names XDG_CACHE_HOME when it is set.
- ``NUMBA_NUM_THREADS=600`` under an address-space limit (``ulimit -v 6000000``, 8 MB
  stacks): "libgomp: Thread creation failed: Resource temporarily unavailable", exit code 1,
  at the first parallel kernel (without the limit 1,000 threads run). The count of threads a
  process may start now counts the stacks half of the limit holds, and the variable is
  refused up front naming it.
- A working directory this user may not search (``chmod 000 .`` after ``cd``): a relative
  name that leaves it (``reid --sets ../pop.parquet``) was "no such file" for a file that is
  there -- the check of the directories above a name looked at its absolute form, whose
  ``..`` hides the working directory. Now "the working directory ... cannot be searched ...;
  give the full path" (a name inside it was refused already).
- The benchmark scripts users are told to run (``bench_theory.py --figure``, ``bench_fidelity.py
  --json``, ``bench_matching.py``, ``bench_learned.py``, ``bench_learned_curve.py``; the
  refusals also ``bench_persistence.py``, ``bench_cover_levels.py``, ``bench_outofcore.py``,
  ``bench_spark.py``, ``bench_ingest.py``): an output
  in a missing directory failed with a traceback after the work (hours for
  ``bench_fidelity.py`` at its defaults), one named ``x.txt`` or an existing directory was
  written as given (or failed at the end), ``open(..., "w")`` left half a file when
  interrupted, and an input the library refuses (``--users 0``) was its traceback, exit code
  1. The outputs are now checked before the work and written atomically
  (``benchmarks/_outputs.py``), and a refusal is one line, exit code 2. ``run_stages.py``
  (README's measurement) put "topicslab run failed (2):" above the run's own refusal, exit
  code 1, and ``--repeats 0`` was an ``IndexError``.
- ``python -m topicslab.taxonomy.convert DIR`` (README, Development) of a missing or empty
  DIR, or of a file holding no table: a traceback (``FileNotFoundError``, ``ValueError``),
  exit code 1; the usage line exit code 1. Now one ``error:`` line naming the file, exit 2.
- README.md's "From Python" example ended in "TypeError: 'CalibrationTable' object is not
  subscriptable" (``calibration_table(sets)[:3]``); it now prints the first three rows'
  records, and this file runs the example (on 2,000 users).

Tried and found sound (no test): every command example of README.md and docs/*.md on 3,000
users (``population``, ``observe``, ``stats`` in every accounting and engine, ``--explain``,
``--overlap-lags``, ``fit``, ``sample``, ``validate``, ``reid`` with every attack, setting and
the learned model, ``attack-train``, ``qif``, ``disclosure``, ``convert --to profiles``, ``run
--sets``), docs/ingest.md's walk-through and ``api.py`` (the same output, byte for byte, but
the seconds), docs/fidelity.md's and docs/learned_attack.md's Python snippets; ``qif``,
``stats --explain``, ``disclosure --example`` and ``--help`` piped into ``head -1`` (exit 0),
standard output on /dev/full (one line, exit 2, the file kept), standard output, error or
input closed, ``FORCE_COLOR``, ``NO_COLOR``, ``TERM=dumb`` with ``COLUMNS=1``; the package
read-only as another user (numba's cache refused naming NUMBA_CACHE_DIR; matplotlib's
directories under an unwritable HOME go to a private temporary one), ``OMP_NUM_THREADS=1000``,
``MKL_NUM_THREADS=abc`` or ``-1``; the ledger, a model's and a learned attack's
``model.json``, population parameters and JSON domain tables with each value replaced by
NaN, ±Infinity, ±1e400, -0, true/false, null, text, 1.5, 3.0, [] and {}, and as UTF-16,
UTF-32, a top-level array, a trailing comma, empty, two documents, a NUL byte and 100,000
levels of nesting (each refused in one line naming the file, or read as the same value).

Each case holds to ``test_bad_inputs.py``'s contract (exit 2, one ``error:`` line naming the
file, row or field, nothing written; from Python an ``InputError`` naming the field).
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from refusal import (
    made_with_model,
    refused_leaving,
    unprivileged,
)

from topicslab.errors import InputError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """refusal's population, its release and a model fitted to it."""
    return made_with_model(tmp_path_factory.mktemp("made"))


@pytest.fixture(scope="module")
def ledger(made: Path) -> dict[str, Any]:
    """The privacy ledger of the small release."""
    return dict(json.loads((made / "stats" / "privacy_ledger.json").read_text()))


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return tmp_path


def _refused_python(argv: list[str], cwd: Path | None, prefix: list[str] | None = None,
                    **env: str) -> tuple[str, str]:
    """``python ARGV`` (after ``prefix``) with this checkout's package and ``env``: exit code
    2 and one ``error:`` line; (that line, standard output)."""
    full = {**os.environ, "PYTHONPATH": str(ROOT / "src"), **env}
    full.pop("TOPICSLAB_DEBUG", None)
    done = subprocess.run([*(prefix or []), sys.executable, *argv], capture_output=True,
                          text=True, env=full, cwd=cwd, check=False, timeout=300)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0], done.stdout


#: the command line under an address-space limit of {0} bytes
_UNDER_LIMIT = ("import resource; resource.setrlimit(resource.RLIMIT_AS, ({0}, {0})); "
                "from topicslab._main import main; main()")


# ---- stats --explain of a ledger edited to other kinds of values -------------------------------


def _set(*path: str | int, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(led: dict[str, Any]) -> None:
        at = led
        for key in path[:-1]:
            at = at[key]
        at[path[-1]] = value
    return edit


@pytest.mark.parametrize(("edit", "named"), [
    (_set("composition", "basic", "method", value=5), "field 'composition.basic.method'"),
    (_set("composition", "zcdp", "method", value=["x"]), "field 'composition.zcdp.method'"),
    (_set("composition", "basic", value=1.5), "field 'composition.basic'"),
    (_set("claimed", "basis", value={"a": 1}), "field 'claimed.basis'"),
    (_set("claimed", "warning", value=3), "field 'claimed.warning'"),
    (_set("claimed", "epsilon", value="abc"), "field 'claimed'"),
    (_set("claimed", "epsilon", value=True), "field 'claimed'"),
    (_set("noise_vs_paper", value=[{"name": "within_w0", "sigma_ratio": "a"}]),
     "field 'noise_vs_paper'"),
    (_set("noise_vs_paper", value=[{"name": "within_w0", "sigma_ratio": None}]),
     "field 'noise_vs_paper'"),
    (_set("composition", "zcdp", "epsilon", value=True), "field 'composition.zcdp'"),
    (_set("composition", "basic", "delta", value="1e-15"), "field 'composition.basic'"),
    (_set("mechanisms", 1, "weeks", value=[True]), "field 'contribution_bounding.weeks'"),
], ids=["method-number", "method-list", "view-number", "basis-object", "warning-number",
        "claimed-text", "claimed-bool", "ratio-text", "ratio-null", "composed-bool",
        "composed-text", "week-bool"])
def test_explain_of_a_ledger_of_other_kinds_is_refused(ledger: dict[str, Any], work: Path,
                                                        edit: Callable[[dict[str, Any]], None],
                                                        named: str) -> None:
    led = json.loads(json.dumps(ledger))
    edit(led)
    path = work / "privacy_ledger.json"
    path.write_text(json.dumps(led))
    line = refused_leaving(["stats", "--explain", str(path)], work, named)
    assert "privacy_ledger.json" in line and "restore the ledger" in line


def test_explain_of_a_claimed_nan_is_refused(ledger: dict[str, Any], work: Path) -> None:
    """``"epsilon": NaN`` (Python's JSON reads the literal) was shown as the claim."""
    led = json.loads(json.dumps(ledger))
    led["claimed"]["epsilon"] = math.nan
    path = work / "privacy_ledger.json"
    path.write_text(json.dumps(led))  # (writes the NaN literal)
    refused_leaving(["stats", "--explain", str(path)], work, "field 'claimed'")


# ---- text files of UTF-16 or UTF-32 -------------------------------------------------------------


def _text_inputs(work: Path, ledger: dict[str, Any]) -> dict[str, tuple[str, list[str], str]]:
    """name: (the file's UTF-8 text, the command reading ``{file}``, the option named)."""
    from topicslab.io.visits import sample_files
    from topicslab.population.params import reference_path

    visits, domains = sample_files()
    return {
        "sets.tsv": ("user_id\tepoch_0_topics\n1\t1;2;3;4;5\n",
                     ["reid", "--sets", "{file}", "--trials", "1"], "--sets"),
        "visits.csv": (visits.read_text(encoding="utf-8"),
                       ["ingest", "--visits", "{file}", "--domains", str(domains), "--out",
                        str(work / "o.csv")], "--visits"),
        "domains.json": ('{"football-daily.co.uk": [325]}',
                         ["ingest", "--visits", str(visits), "--domains", "{file}", "--out",
                          str(work / "o.csv")], "--domains"),
        "params.json": (reference_path("v2").read_text(encoding="utf-8"),
                        ["population", "--params", "{file}", "--users", "10", "--out",
                         str(work / "p.parquet")], "--params"),
        "privacy_ledger.json": (json.dumps(ledger), ["stats", "--explain", "{file}"],
                                "--explain"),
        "script.txt": ("keywords: a b\nprobe: p\nhello world\n",
                       ["disclosure", "--script", "{file}"], "--script"),
    }


@pytest.mark.parametrize("name", ["sets.tsv", "visits.csv", "domains.json", "params.json",
                                  "privacy_ledger.json", "script.txt"])
@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-32"])
def test_a_text_file_of_utf16_says_so(ledger: dict[str, Any], work: Path, name: str,
                                      encoding: str) -> None:
    """A file saved as UTF-16 (Excel's "Unicode Text", Windows PowerShell's ``Out-File``) was
    "'utf-8' codec can't decode byte 0xff in position 0", "Expecting value: line 1 column 2"
    or "the first line holds NUL bytes": nothing said what the file is or what to do."""
    text, args, option = _text_inputs(work, ledger)[name]
    (work / "in").mkdir()
    path = work / "in" / name
    path.write_bytes(text.encode(encoding))
    wide = "UTF-32" if encoding == "utf-32" else "UTF-16"
    line = refused_leaving([a.replace("{file}", str(path)) for a in args], work,
                           f"field '{option}'")
    assert f"is {wide} text" in line and "save it as UTF-8" in line, line


@pytest.mark.parametrize(("option", "name"), [("--explain", "privacy_ledger.json"),
                                            ("--params", "params.json"),
                                            ("--model", "model.json")])
def test_a_huge_file_as_metadata_is_refused_before_it_is_read(work: Path, option: str,
                                                              name: str) -> None:
    """A 4 GiB file (here sparse) given as a ledger, population parameters or a model's
    model.json was read whole into memory: under ``ulimit -v`` "out of memory ...: use fewer
    users, weeks or types" (exit code 1), without a limit gigabytes taken before "invalid
    JSON"."""
    (work / "m").mkdir()
    big = work / "m" / name
    with open(big, "wb") as fh:
        fh.truncate(4 << 30)
    (work / "m" / "model.safetensors").write_bytes(b"")  # (a model directory holds both)
    args = {"--explain": ["stats", "--explain", str(big)],
            "--params": ["population", "--params", str(big), "--users", "10", "--out",
                         str(work / "p.parquet")],
            "--model": ["sample", "--model", str(work / "m"), "--users", "10", "--seed", "0",
                        "--out", str(work / "s.parquet")]}[option]
    line, _ = _refused_python(["-c", _UNDER_LIMIT.format(3 << 30), *args], work)
    assert f"field '{option}'" in line and "4,096 MiB" in line, line
    assert "is it the right file?" in line
    assert sorted(p.name for p in work.iterdir()) == ["m"]


def test_a_model_json_of_format_version_true_is_refused(made: Path, work: Path) -> None:
    """``"format_version": true`` (Python's True equals 1) was read as version 1."""
    import shutil

    shutil.copytree(made / "model", work / "model")
    meta = work / "model" / "model.json"
    meta.write_text(re.sub(r'"format_version": 1', '"format_version": true', meta.read_text()))
    refused_leaving(["sample", "--model", str(work / "model"), "--users", "10", "--seed", "0",
                     "--out", str(work / "s.parquet")], work, "field 'format_version'")


@pytest.mark.parametrize(("old", "new", "named"), [
    ('"type 0"', '"type \uff10"', "key 'type \uff10' does not end in a type number"),
    ('"type 0"', '"type 0.0"', "key 'type 0.0' does not end in a type number"),
    ('"epoch 0"', '"epoch \uff10"', "does not end in an epoch number"),
], ids=["full-width-type", "decimal-type", "full-width-epoch"])
def test_release_parameters_keys_of_other_digits_are_refused(work: Path, old: str, new: str,
                                                             named: str) -> None:
    """A release's output_parameters.json keyed "type \uff10" (a full-width digit) or
    "type 0.0" was read as type 0, where every other reader takes the ASCII digits of an
    integer only."""
    import numpy as np

    from topicslab.model import TypeMixture
    from topicslab.model.files import export_release_parameters, import_release_parameters
    from topicslab.taxonomy import load

    theta = np.random.default_rng(0).normal(size=(2, 2, 5, 469)).astype(np.float32)
    path = work / "output_parameters.json"
    export_release_parameters(path, TypeMixture(theta, load("v2")))
    path.write_text(path.read_text().replace(old, new, 1), encoding="utf-8")
    with pytest.raises(InputError, match=re.escape(named)):
        import_release_parameters(path, "v2")


# ---- the learned attack's configuration --------------------------------------------------------


@pytest.mark.parametrize("field", ["lr", "l2", "listwise", "pair_pseudo_count"])
def test_an_infinite_learned_attack_setting_is_refused(field: str) -> None:
    from topicslab.attacks.learned import LearnedAttackConfig

    with pytest.raises(InputError, match="finite") as exc:
        LearnedAttackConfig(**{field: math.inf})
    assert exc.value.field == field


def test_a_learned_model_json_of_an_infinite_rate_is_refused(work: Path) -> None:
    """A ``model.json`` whose config says ``"lr": 1e400`` was loaded."""
    from topicslab.attacks.learned import (
        LearnedAttackConfig,
        _new_attack,
        load_attack,
        save_attack,
    )

    save_attack(work / "att", _new_attack(469, "v2", 4, 1, LearnedAttackConfig(), "cpu"))
    meta = work / "att" / "model.json"
    meta.write_text(re.sub(r'"lr": [^,\n]+', '"lr": 1e400', meta.read_text()))
    with pytest.raises(InputError) as exc:
        load_attack(work / "att")
    assert exc.value.field == "config.lr" and "model.json" in str(exc.value)


# ---- the environment ----------------------------------------------------------------------------


def test_threads_past_the_address_space_limit_are_refused(work: Path) -> None:
    """``NUMBA_NUM_THREADS=2000`` under ``ulimit -v`` 4 GB: libgomp could not make the
    threads' stacks ("Thread creation failed", exit code 1) at the first parallel kernel."""
    line, _ = _refused_python(["-c", _UNDER_LIMIT.format(4 << 30), "population", "--users",
                               "300", "--weeks", "2", "--out", str(work / "p.parquet")], work,
                              NUMBA_NUM_THREADS="2000")
    assert line.startswith("error: environment variable NUMBA_NUM_THREADS='2000'"), line
    assert "ulimit -v" in line
    assert list(work.iterdir()) == []


# ---- the documentation, as written --------------------------------------------------------------


def test_the_readme_python_example_runs(work: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """README.md's "From Python" block (on 2,000 users instead of 100,000)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("## From Python", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    assert "100_000" in block
    monkeypatch.chdir(work)
    exec(compile(block.replace("100_000", "2_000"), "README.md", "exec"), {})
    assert (work / "pop.parquet").is_file()
    assert "'name': 'single(" in capsys.readouterr().out


@pytest.mark.parametrize("call", ["save", "trace-attack"])
@pytest.mark.parametrize("value", [None, "attackdir"])
def test_a_learned_attack_of_no_attack_is_a_type_error(work: Path, call: str,
                                                       value: Any) -> None:
    """``save_attack(d, None)`` was "AttributeError: 'NoneType' object has no attribute
    'scorer'", and ``LearnedTraceAttack("attackdir")`` was taken, to fail inside the trials."""
    from topicslab.attacks.learned import LearnedTraceAttack, save_attack

    with pytest.raises(TypeError, match="takes a LearnedAttack"):
        if call == "save":
            save_attack(work / "att", value)
        else:
            LearnedTraceAttack(value)
    assert list(work.iterdir()) == []


# ---- the benchmark scripts ---------------------------------------------------------------------


@pytest.mark.parametrize(("script", "args", "named"), [
    ("bench_theory.py", ["--users", "300", "--weeks", "2", "--figure", "{work}/no/t.png"],
     "field '--figure': directory"),
    ("bench_theory.py", ["--users", "0", "--weeks", "2"], "field 'sets'"),
    ("bench_matching.py", ["--users", "300", "--weeks", "2", "--json", "{work}/m.txt"],
     "field '--json': this option writes JSON files"),
    ("bench_fidelity.py", ["--users", "300", "--json", "{work}"],
     "field '--json': is an existing directory"),
    ("run_stages.py", ["--preset", "bogus", "--repeats", "1"], "field '--preset'"),
    ("run_stages.py", ["--preset", "smoke", "--repeats", "0"], "field '--repeats'"),
    ("bench_persistence.py", ["--users", "0"], "field 'data'"),
], ids=["figure-missing-dir", "no-users", "json-extension", "json-directory", "stages-preset",
        "stages-repeats", "persistence-no-users"])
def test_a_benchmark_refuses_in_one_line_before_the_work(work: Path, script: str,
                                                         args: list[str], named: str) -> None:
    """A benchmark's output in a missing directory failed with a traceback after the work
    (``bench_fidelity.py`` at its defaults: hours), one of another extension was written as
    given, and an input the library refuses was its traceback (exit code 1)."""
    line, out = _refused_python([str(ROOT / "benchmarks" / script),
                                 *(a.format(work=work) for a in args)], work)
    assert named in line, line
    assert out == "" and list(work.iterdir()) == []


@pytest.mark.parametrize(("files", "named"), [
    ({}, "topics-utility-buckets-v1.md: No such file or directory"),
    ({"topics-utility-buckets-v1.md": "| x |\n"}, "no bucket rows found"),
    ({"topics-utility-buckets-v1.md": "| /Arts | High |\n", "taxonomy_v1.md": "junk\n"},
     "taxonomy_v1.md: no taxonomy rows found"),
], ids=["empty-dir", "no-buckets", "no-topics"])
def test_the_taxonomy_converter_refuses_in_one_line(work: Path, files: dict[str, str],
                                                    named: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m topicslab.taxonomy.convert DIR`` (README, Development) of an empty DIR or
    a file of no table: a traceback (FileNotFoundError, ValueError), exit code 1."""
    from topicslab.taxonomy import convert

    for name, text in files.items():
        (work / name).write_text(text)
    data = Path(convert.__file__).parent / "data"
    before = {p.name: p.stat().st_mtime_ns for p in data.iterdir()}
    with pytest.raises(SystemExit) as done:
        convert.main([str(work)])
    assert done.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and named in err[0], err
    assert {p.name: p.stat().st_mtime_ns for p in data.iterdir()} == before


_IN_UNSEARCHABLE_CWD = """
import os, sys
os.chdir(sys.argv[1])
os.chmod(".", 0)
sys.argv = ["topicslab", *sys.argv[2:]]
from topicslab._main import main
main()
"""


@pytest.mark.parametrize(("args", "option"), [
    (["reid", "--sets", "../pop.parquet", "--trials", "1"], "--sets"),
    (["population", "--users", "10", "--weeks", "2", "--out", "../p.parquet"], "--out"),
], ids=["input", "output"])
def test_a_relative_name_from_an_unsearchable_working_directory(work: Path, args: list[str],
                                                               option: str) -> None:
    """A working directory this user may not search (``chmod 000 .`` after ``cd``): a name
    relative to it that leaves it (``../pop.parquet``) was "no such file" for a file that is
    there (``abspath`` takes the ``..`` away, and with it the directory that blocks)."""
    import shutil

    prefix = unprivileged()
    if prefix is None:
        pytest.skip("root, and no setpriv to drop the privileges that bypass permissions")
    shutil.copy(Path(__file__).parents[2] / "README.md", work / "pop.parquet")  # (any file)
    (work / "cwd").mkdir()
    try:
        line, _ = _refused_python(["-c", _IN_UNSEARCHABLE_CWD, str(work / "cwd"), *args], None,
                                  prefix)
    finally:
        (work / "cwd").chmod(0o755)
    assert f"field '{option}': the working directory" in line and "give the full path" in line
    assert sorted(p.name for p in work.iterdir()) == ["cwd", "pop.parquet"]


def test_numba_without_a_cache_names_the_user_cache_it_tried(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """numba's user cache follows XDG_CACHE_HOME: with it set to a read-only directory (and the
    package read-only) the line named "the user cache (~/.cache)", a directory numba never
    tried."""
    from topicslab._main import _numba_cache_error

    monkeypatch.setenv("XDG_CACHE_HOME", "/srv/readonly-cache")
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    line = _numba_cache_error(RuntimeError(
        "cannot cache function '_holds': no locator available for file "
        "'/usr/lib/python3/site-packages/topicslab/qif/x.py'"))
    assert line is not None and "XDG_CACHE_HOME='/srv/readonly-cache'" in line, line
    assert "~/.cache" not in line
