"""Bad input, the twenty-seventh independent round (issue 15): options at and past their
boundaries, other commands' files as inputs, special output files, environments and
interruptions.

- ``NUMBA_NUM_THREADS=²`` (a Unicode digit that ``int()`` cannot read) failed inside the
  environment check with ``ValueError`` and a traceback; ``COLUMNS=²`` and ``LINES=²`` did the
  same inside rich, before any command ran.
- ``NUMBA_THREADING_LAYER=tbb`` (or ``safe``) where Intel TBB is not installed passed the
  check of the layer's name and failed at the first parallel kernel, once the command had
  begun, as an unexpected failure: "error: ValueError: No threading layer could be loaded"
  with exit code 1.
- ``run --users 200000000`` was refused as "the release fidelity of 2 trials x 4 weeks needs
  about 47.7 GiB ...; use fewer --fidelity-trials": an option the user had not given, and
  whose least value (1) cannot fit either; the population is what does not fit (``--users``).
- A second Ctrl-C (or kill) while the first one's clean-up removed the atomic writes'
  temporaries left a temporary behind (``.o.parquet.XXXX.tmp`` after ``ingest``), under the
  line "nothing written (no partial output left)".
- A second Ctrl-C while an interrupted command's exit unwound printed a second line,
  "interrupted: topicslab stopped while starting; nothing written", under the command's own;
  a Ctrl-C just after a command had written its outputs said "nothing written" too.
- A Ctrl-C while Typer parsed the arguments (about 0.35 s after the start, as it imports
  pydantic) ended with exit code 130 and no line at all: Typer turns it into ``Exit(130)``.
- ``reid --targets ²`` failed as "error: ValueError: invalid literal for int()" (exit code 1).
- ``disclosure --script`` read ``! wait ３`` (full-width digit) as 3: every other reader of
  files takes ASCII digits only (round 24: population parameters, CSV ids).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from refusal import check_refused, console_script, invoke_refused, random_profiles, small_population

from topicslab import io as tio
from topicslab.datamodel import TopicSets

_SRC = str(Path(tio.__file__).parents[2])


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small v2 population as Parquet."""
    return small_population(tmp_path_factory.mktemp("round27"))


@pytest.mark.parametrize("name", ["NUMBA_NUM_THREADS", "NUMBA_DISABLE_JIT"])
def test_a_unicode_digit_in_a_numba_variable_is_one_line(tmp_path: Path, name: str) -> None:
    proc = console_script(["qif"], {name: "²"}, tmp_path)
    check_refused(proc.stderr, proc.returncode, name)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("name", ["COLUMNS", "LINES"])
def test_a_unicode_digit_as_the_terminal_size_is_ignored(tmp_path: Path, name: str) -> None:
    """rich ignores a size it cannot read as a number; '²' is such a size (not a traceback)."""
    proc = console_script(["qif", "--m", "0"], {name: "²"}, tmp_path)
    check_refused(proc.stderr, proc.returncode, "--m")
    proc = console_script(["qif"], {name: "²"}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Topics API capacities" in proc.stdout


def _tbb_loads() -> bool:
    probe = ("from numba.np.ufunc.parallel import _check_tbb_version_compatible as c; c(); "
             "from numba.np.ufunc import tbbpool")
    return subprocess.run([sys.executable, "-c", probe], capture_output=True,
                          check=False).returncode == 0


@pytest.mark.skipif(_tbb_loads(), reason="Intel TBB is installed here: the layer loads")
@pytest.mark.parametrize("layer", ["tbb", "safe"])
def test_a_threading_layer_that_cannot_load_is_refused_up_front(inputs: Path, tmp_path: Path,
                                                                layer: str) -> None:
    out = tmp_path / "stats"
    proc = console_script(["stats", "--sets", str(inputs / "pop.parquet"), "--out", str(out)],
                           {"NUMBA_THREADING_LAYER": layer}, tmp_path)
    line = check_refused(proc.stderr, proc.returncode, "NUMBA_THREADING_LAYER")
    assert "TBB" in line
    assert not list(tmp_path.iterdir())


def test_a_threading_layer_that_loads_still_runs(inputs: Path, tmp_path: Path) -> None:
    """Guard: a layer that can be loaded here (the workqueue always can) is not refused."""
    out = tmp_path / "stats"
    proc = console_script(["stats", "--sets", str(inputs / "pop.parquet"), "--out", str(out)],
                           {"NUMBA_THREADING_LAYER": "workqueue"}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (out / "q_within.json").is_file()


def _available() -> int:
    from topicslab._resources import available_memory

    return available_memory() or 1 << 40


def test_a_fidelity_check_too_large_for_its_users_names_the_users(tmp_path: Path) -> None:
    """The users of one trial alone exceed the memory: name --users, not the trials."""
    from refusal import invoke

    # the population and its synthetic twin take ~80 bytes a user (4 weeks), the fidelity
    # check ~240: this many users pass the first check and fail the second
    users = str(_available() // 150)
    invoke_refused(invoke, ["run", "--preset", "smoke", "--out", "{out}", "--users", users],
                   tmp_path, tmp_path, "field '--users'")
    res = invoke(["run", "--preset", "smoke", "--out", str(tmp_path / "o"), "--users", users])
    assert "release fidelity" in res.output and "fewer --users" in res.output, res.output
    assert "fidelity-trials" not in res.output


def test_a_fidelity_check_of_too_many_trials_still_names_the_trials(tmp_path: Path) -> None:
    """Guard: where the trials are what does not fit, --fidelity-trials is still named."""
    from refusal import invoke

    invoke_refused(invoke, ["run", "--preset", "smoke", "--out", "{out}",
                            "--fidelity-trials", str(10**12)], tmp_path, tmp_path,
                   "use fewer --fidelity-trials")


@pytest.mark.parametrize("kind", ["atomic_path", "atomic_paths", "atomic_dir"])
def test_a_second_ctrl_c_during_the_clean_up_leaves_no_temporary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    from topicslab import _atomic

    real = _atomic._full_disk

    def second_ctrl_c(exc: BaseException, final: Path) -> OSError | None:
        signal.raise_signal(signal.SIGINT)  # Python's handler: KeyboardInterrupt right here
        return real(exc, final)

    monkeypatch.setattr(_atomic, "_full_disk", second_ctrl_c)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            if kind == "atomic_path":
                with _atomic.atomic_path(tmp_path / "o.parquet") as tmp:
                    tmp.write_text("x")
                    raise KeyboardInterrupt
            elif kind == "atomic_paths":
                with _atomic.atomic_paths([tmp_path / "a.csv", tmp_path / "b.csv"]) as tmps:
                    tmps[0].write_text("x")
                    raise KeyboardInterrupt
            else:
                with _atomic.atomic_dir(tmp_path / "d") as tmp:
                    (tmp / "f.json").write_text("{}")
                    raise KeyboardInterrupt
    finally:
        signal.signal(signal.SIGINT, previous)
    assert list(tmp_path.iterdir()) == []


_UNWINDING = """
import topicslab.cli
from topicslab.cli import _app
def done():
    _app._state.update(command="convert", kept=None, interrupted_said=False)
    {body}
    raise KeyboardInterrupt
topicslab.cli.main = done
from topicslab._main import main
main()
"""


def _unwinding(body: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": _SRC}
    env.pop("TOPICSLAB_DEBUG", None)
    return subprocess.run([sys.executable, "-c", _UNWINDING.format(body=body), "convert"],
                          capture_output=True, text=True, env=env, check=False, cwd=cwd)


def test_a_second_ctrl_c_while_the_command_exits_adds_no_line(tmp_path: Path) -> None:
    """The command said it was interrupted; a second Ctrl-C while its exit unwinds (here:
    raised after the line) ends the same way, with that one line."""
    proc = _unwinding("_app.OneLineErrors._print_interrupted()", tmp_path)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 130, proc.stderr
    assert lines == ["interrupted: convert stopped; nothing written (no partial output left)"]


def test_a_ctrl_c_after_the_outputs_were_written_names_them(tmp_path: Path) -> None:
    """A Ctrl-C that reaches the entry point once the command has written its output: the
    line names the complete output, not "stopped while starting; nothing written"."""
    proc = _unwinding("from topicslab._atomic import write_text_atomic; "
                      "write_text_atomic('o.txt', 'x')", tmp_path)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 130, proc.stderr
    assert lines == ["interrupted: convert stopped; kept the complete o.txt; nothing "
                     "half-written"], lines
    assert (tmp_path / "o.txt").read_text() == "x"


def test_a_ctrl_c_while_the_arguments_are_parsed_says_so(monkeypatch: pytest.MonkeyPatch,
                                                          ) -> None:
    from refusal import invoke

    from topicslab.cli._app import OneLineErrors

    def interrupted(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(OneLineErrors, "make_context", interrupted)
    res = invoke(["qif"])
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert res.exit_code == 130, res.output
    assert len(lines) == 1 and lines[0].startswith("interrupted: topicslab stopped; "), lines


def test_a_unicode_digit_as_targets_is_refused(inputs: Path, tmp_path: Path) -> None:
    from refusal import invoke

    invoke_refused(invoke, ["reid", "--sets", "{in}/pop.parquet", "--targets", "²",
                            "--trials", "1", "--no-progress"], inputs, tmp_path, "--targets")


def test_a_script_wait_in_other_digits_is_refused(tmp_path: Path) -> None:
    from refusal import invoke

    script = tmp_path / "s.txt"
    script.write_text("! probe: a.com\n! wait \uff13\nhttps://x.com\n", encoding="utf-8")
    res = invoke(["disclosure", "--script", str(script)])
    line = check_refused(res.output, res.exit_code, "row 2, field 'wait'")
    assert str(script) in line
    script.write_text("! probe: a.com\n! wait 3\nhttps://x.com\n", encoding="utf-8")
    assert invoke(["disclosure", "--script", str(script)]).exit_code == 0  # (guard)


def test_an_interrupted_run_tells_its_stages_from_an_earlier_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from refusal import invoke

    import topicslab.experiment

    out = tmp_path / "run"
    out.mkdir()
    (out / "stages.json").write_text(json.dumps(
        {name: {"key": "0" * 16, "summary": {}} for name in ("population", "dp_statistics",
                                                             "fit")}))

    def interrupted(*_args: object, log: object = None, **_kwargs: object) -> None:
        assert callable(log)
        log("population: running")
        log("population: 0.5 s")  # this run's population (its record replaced the old one)
        log("dp_statistics: running")
        raise KeyboardInterrupt

    monkeypatch.setattr(topicslab.experiment, "run", interrupted)
    res = invoke(["run", "--preset", "smoke", "--out", str(out), "-q"])
    assert res.exit_code == 130, res.output
    line = next(ln for ln in res.output.splitlines() if ln.startswith("interrupted:"))
    assert "(population); the same command continues from them" in line, line
    assert "dp_statistics, fit are an earlier run's" in line, line


def test_attack_train_into_its_shard_directory_is_refused(inputs: Path, tmp_path: Path
                                                          ) -> None:
    from refusal import invoke

    shards = tmp_path / "shards"
    shards.mkdir()
    tio.write_sets(shards / "s.tfrecord", TopicSets(random_profiles(), "v2",
                                                     np.arange(300, dtype=np.int64)), shards=2)
    invoke_refused(invoke, ["attack-train", "--sets", str(shards), "--out", str(shards / "a"),
                            "--epochs", "0", "--no-progress"], shards, inputs,
                   "lies inside the input --sets")
