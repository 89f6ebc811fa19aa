"""Ctrl-C during a command (issue 15): one line ``interrupted: <command> stopped; <what was
kept>``, exit code 130, no traceback (unless ``--debug``), and what was on disk before is
intact with no hidden temporary left.

Ctrl-C is simulated by raising ``KeyboardInterrupt`` from a function the command calls
half-way through its work or its writing. Inputs are tiny (a 12-topic taxonomy, 300 users).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from topicslab.cli import app
from topicslab.taxonomy import Taxonomy

#: the ``interrupt_on_call`` fixture (tests/conftest.py)
Interrupter = Callable[..., None]

runner = CliRunner()

TAX12 = Taxonomy.from_rows("test12", [(i * 3 + 1, f"/Topic {i:02d}") for i in range(12)])


def _snapshot(root: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): None if p.is_dir() else p.read_bytes()
            for p in sorted(root.rglob("*"))}


def _interrupted_line(res: Any, command: str, *, printed_results: bool = False) -> str:
    """The one line an interrupted command ends with; checks the exit code and that there is
    no traceback. Before it, at most the last frame of a progress bar (or, with
    ``printed_results``, what the command had printed before Ctrl-C)."""
    assert res.exit_code == 130, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert lines[-1].startswith(f"interrupted: {command} stopped; "), res.output
    assert res.output.count("interrupted:") == 1, res.output
    assert printed_results or all("━" in ln for ln in lines[:-1]), res.output
    assert "Traceback" not in res.output
    return lines[-1]



def _statistics(seed: int = 0) -> Any:
    from topicslab.datamodel import TopicSets
    from topicslab.dp import statistics

    rng = np.random.default_rng(seed)
    sets = np.sort(np.stack([np.stack([rng.choice(12, 5, replace=False) for _ in range(2)])
                             for _ in range(300)]), axis=-1).astype(np.int16)
    data = TopicSets(sets, TAX12, np.arange(300, dtype=np.int64))
    return statistics.compute_statistics(data, epsilon=10.0, delta=1e-6, seed=seed)


@pytest.fixture
def small_stats(monkeypatch: pytest.MonkeyPatch) -> None:
    """``stats`` reads nothing and computes the 12-topic statistics (fast, small files)."""
    from topicslab import dp
    from topicslab import io as tio

    monkeypatch.setattr(tio, "read_sets", lambda path, **options: None)
    monkeypatch.setattr(dp, "compute_statistics", lambda data, **opts: _statistics(1))


STATS = ["stats", "--sets", "pop.parquet", "--out", "stats", "--seed", "0"]


def test_interrupted_stats_writes_nothing(work: Path, small_stats: None,
                                          monkeypatch: pytest.MonkeyPatch,
                                          interrupt_on_call: Interrupter) -> None:
    from topicslab.dp import release

    interrupt_on_call(release, "write_text_atomic", 3)  # two files written
    line = _interrupted_line(runner.invoke(app, STATS), "stats")
    assert line.endswith("nothing written (no partial output left)")
    assert list(work.iterdir()) == []


def test_interrupted_stats_keeps_the_older_release(work: Path, small_stats: None,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   interrupt_on_call: Interrupter) -> None:
    from topicslab import dp
    from topicslab.dp import release

    dp.save_statistics(work / "stats", _statistics(0))
    before = _snapshot(work)
    interrupt_on_call(release, "write_text_atomic", 3)
    _interrupted_line(runner.invoke(app, STATS), "stats")
    assert _snapshot(work) == before


def test_debug_shows_the_interruption(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from topicslab import qif

    def ctrl_c(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(qif, "parameter_table", ctrl_c)
    line = _interrupted_line(runner.invoke(app, ["qif"]), "qif")
    assert "nothing written" in line
    with pytest.raises(KeyboardInterrupt):  # the traceback's exception, not the one line
        runner.invoke(app, ["--debug", "qif"])


def test_interrupted_run_names_the_finished_stages(work: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import topicslab.experiment
    from topicslab.experiment.cache import StageCache

    def stopped_after_two_stages(preset: str, out: Path, **kwargs: object) -> None:
        Path(out).mkdir(exist_ok=True)
        cache = StageCache(out)
        cache.record("population", "k1", {"users": 1})
        cache.record("dp_statistics", "k2", {"k": 5})
        raise KeyboardInterrupt

    monkeypatch.setattr(topicslab.experiment, "run", stopped_after_two_stages)
    line = _interrupted_line(runner.invoke(app, ["run", "--preset", "smoke", "--out", "r"]),
                             "run")
    assert "finished stages kept in r (population, dp_statistics)" in line
    assert "continues from them" in line


def test_interrupted_run_before_any_stage(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import topicslab.experiment

    def stopped(preset: str, out: Path, **kwargs: object) -> None:
        Path(out).mkdir(exist_ok=True)
        raise KeyboardInterrupt

    monkeypatch.setattr(topicslab.experiment, "run", stopped)
    line = _interrupted_line(runner.invoke(app, ["run", "--preset", "smoke", "--out", "r"]),
                             "run")
    assert "no stage had finished" in line
    assert not (work / "r").exists()  # the empty output directory is removed


def _paper_model(seed: int) -> Any:
    from topicslab.model import TypeMixture

    rng = np.random.default_rng(seed)
    return TypeMixture(rng.normal(size=(2, 1, 5, 12)).astype(np.float32), TAX12)


@pytest.fixture
def fake_fit(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """``fit`` on 12-topic statistics whose optimiser returns at once (optionally after
    writing a checkpoint into the listed directories)."""
    from topicslab import dp
    from topicslab import model as tm

    checkpoints: list[Path] = []
    monkeypatch.setattr(dp, "load_statistics", lambda path: _statistics(0))

    def fit(*args: object, checkpoint_dir: Path, **kwargs: object) -> Any:
        if checkpoints:
            checkpoint_dir.mkdir(parents=True)
            (checkpoint_dir / "checkpoint.pt").write_bytes(b"state")
            raise KeyboardInterrupt
        return SimpleNamespace(model=_paper_model(1), history=[{"loss": 1.0}])

    monkeypatch.setattr(tm, "fit", fit)
    return checkpoints


FIT = ["fit", "--stats", "st", "--out", "model", "--model", "paper", "--types", "2",
       "--weeks", "1", "--no-progress", "--export-release", "release.json"]


def test_interrupted_fit_names_what_it_completed(work: Path, fake_fit: list[Path],
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 interrupt_on_call: Interrupter) -> None:
    from topicslab import model as tm

    interrupt_on_call(tm, "export_release_parameters")
    line = _interrupted_line(runner.invoke(app, FIT), "fit")
    assert line.endswith("kept the complete model; nothing half-written")
    assert sorted(p.name for p in (work / "model").iterdir()) == [
        "fit_history.json", "model.json", "model.safetensors"]
    assert not (work / "release.json").exists()


def test_interrupted_fit_points_to_its_checkpoints(work: Path, fake_fit: list[Path]) -> None:
    fake_fit.append(work / "model")
    line = _interrupted_line(runner.invoke(app, FIT), "fit")
    assert "checkpoints kept in model/checkpoints (add --resume to continue)" in line


def test_interrupted_fit_does_not_claim_an_earlier_fits_checkpoints(
        work: Path, fake_fit: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """F13: checkpoints left by an earlier fit, which this one never wrote, are not called its
    own; a checkpoint this fit writes (or one it resumes) is."""
    from topicslab import model as tm

    old = work / "model" / "checkpoints" / "checkpoint.pt"
    old.parent.mkdir(parents=True)
    old.write_bytes(b"an earlier fit")

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(tm, "fit", interrupted)
    line = _interrupted_line(runner.invoke(app, FIT), "fit")
    assert "this fit wrote no checkpoint" in line and "earlier fit" in line
    assert old.read_bytes() == b"an earlier fit"
    line = _interrupted_line(runner.invoke(app, [*FIT, "--resume"]), "fit")
    assert "checkpoints kept in model/checkpoints (add --resume to continue)" in line


def test_interrupted_model_save_keeps_the_older_model(work: Path, fake_fit: list[Path],
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      interrupt_on_call: Interrupter) -> None:
    from topicslab.model import files, save_model

    save_model(work / "model", _paper_model(0))
    before = _snapshot(work)
    interrupt_on_call(files, "write_text_atomic")  # model.json, after weights
    line = _interrupted_line(runner.invoke(app, FIT), "fit")
    assert line.endswith("nothing written (no partial output left)")
    assert _snapshot(work) == before


# ---- sample: a new output replaces the old set of shards as a whole ------------------------

@pytest.fixture
def v2_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from topicslab.model import TypeMixture, save_model
    from topicslab.taxonomy import resolve

    tax = resolve("v2")
    rng = np.random.default_rng(0)
    d = tmp_path_factory.mktemp("model")
    save_model(d, TypeMixture(rng.normal(size=(2, 1, 5, tax.size)).astype(np.float32), tax))
    return d


def _sample(model: Path, users: int, shards: int) -> list[str]:
    return ["sample", "--model", str(model), "--users", str(users), "--seed", "1", "--out",
            "synth/synth.tfrecord", "--shards", str(shards), "--chunk-users", "100"]


def test_sample_replaces_an_older_set_of_shards(work: Path, v2_model: Path) -> None:
    from topicslab import io as tio

    (work / "synth").mkdir()
    (work / "synth" / "notes.txt").write_text("kept")
    assert runner.invoke(app, _sample(v2_model, 400, 4)).exit_code == 0
    res = runner.invoke(app, _sample(v2_model, 300, 2))
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in (work / "synth").iterdir()) == [
        "notes.txt", "synth-00000-of-00002.tfrecord", "synth-00001-of-00002.tfrecord"]
    back = tio.read_sets(work / "synth", format="tfrecord")
    assert back.n_users == 300 and len(set(back.user_ids.tolist())) == 300
    # one shard: the plain name, and the older shards go
    assert runner.invoke(app, _sample(v2_model, 200, 1)).exit_code == 0
    assert sorted(p.name for p in (work / "synth").iterdir()) == ["notes.txt",
                                                                  "synth.tfrecord"]


def test_interrupted_sample_keeps_the_older_set(work: Path, v2_model: Path,
                                                monkeypatch: pytest.MonkeyPatch,
                                                interrupt_on_call: Interrupter) -> None:
    from topicslab import io as tio

    (work / "synth").mkdir()
    assert runner.invoke(app, _sample(v2_model, 400, 4)).exit_code == 0
    before = _snapshot(work)
    interrupt_on_call(tio, "write_sets_tfrecord", 2)  # one shard written
    line = _interrupted_line(runner.invoke(app, _sample(v2_model, 400, 4)), "sample")
    assert line.endswith("nothing written (no partial output left)")
    assert _snapshot(work) == before


def test_interrupted_figures_keep_the_finished_json(work: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    interrupt_on_call: Interrupter) -> None:
    """The line names the complete file written before Ctrl-C; the figures directory (two
    figures, written as one) does not appear with one of them."""
    from topicslab import disclosure

    interrupt_on_call(disclosure, "ln_m_figure")  # after rates.png
    res = runner.invoke(app, ["disclosure", "--personas", "20", "--epochs", "5", "--rho",
                              "0.1", "--no-whitebox", "-q", "--json",
                              "out.json", "--figures", "figs"])
    line = _interrupted_line(res, "disclosure", printed_results=True)
    assert line.endswith("kept the complete out.json; nothing half-written"), res.output
    assert sorted(p.name for p in work.iterdir()) == ["out.json"]


def test_real_ctrl_c_through_the_console_script(tmp_path: Path) -> None:
    """A real SIGINT to ``topicslab population`` once its hidden temporary file exists
    (writing has begun): one line, exit 130, and the directory is left empty."""
    import signal
    import subprocess
    import sys
    import time

    cmd = [sys.executable, "-c", "from topicslab.cli import main; main()", "population",
           "--users", "3000000", "--out", "pop.parquet"]
    # a shell may start background jobs with SIGINT ignored: give the child the default
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 120
        while not list(tmp_path.glob(".pop.parquet.*")) and proc.poll() is None:
            assert time.monotonic() < deadline, "the writer never started"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert lines[-1] == ("interrupted: population stopped; nothing written (no partial "
                         "output left)"), err
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def _swallowed_ctrl_c() -> None:
    """A real SIGINT delivered inside a ctypes callback, as when Ctrl-C lands in numba's
    compiler: Python's handler raises ``KeyboardInterrupt`` there, and ctypes swallows it."""
    import ctypes
    import signal

    ctypes.CFUNCTYPE(None)(lambda: signal.raise_signal(signal.SIGINT))()


def test_ctrl_c_swallowed_by_a_library_still_stops_the_command(
        work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The console script's latch remembers the signal: the next progress step raises it
    again, so the command stops with its one line and writes nothing."""
    import signal
    import sys

    from topicslab import _atomic
    from topicslab import population as pop

    real = pop.generate_chunks

    def chunks(*args: Any, **kwargs: Any) -> Any:
        for i, chunk in enumerate(real(*args, **kwargs)):
            if i == 0:
                _swallowed_ctrl_c()
            yield chunk

    monkeypatch.setattr(pop, "generate_chunks", chunks)
    monkeypatch.setattr(sys, "unraisablehook", sys.unraisablehook)  # restored after
    previous = _atomic.latch_interrupts()
    try:
        res = runner.invoke(app, ["population", "--users", "3000", "--weeks", "2",
                                  "--chunk-users", "1000", "--out", "pop.parquet"])
    finally:
        signal.signal(signal.SIGINT, previous)
    # the bar stopped before its first step shows no bar character: allow that frame
    line = _interrupted_line(res, "population", printed_results=True)
    assert line.endswith("nothing written (no partial output left)"), res.output
    assert "Exception ignored" not in res.output
    assert list(work.iterdir()) == []
    assert not _atomic.interrupt_seen()  # handled: the next command starts clean


def test_a_swallowed_ctrl_c_never_lets_a_write_commit(work: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import signal
    import sys

    from topicslab import _atomic

    monkeypatch.setattr(sys, "unraisablehook", sys.unraisablehook)
    previous = _atomic.latch_interrupts()
    try:
        with pytest.raises(KeyboardInterrupt), _atomic.atomic_path(work / "a.txt") as tmp:
            tmp.write_text("half")
            _swallowed_ctrl_c()  # no exception reaches here...
            tmp.write_text("whole")
    finally:
        signal.signal(signal.SIGINT, previous)
        _atomic.clear_interrupt()
    assert list(work.iterdir()) == []  # ...but the rename never happens
