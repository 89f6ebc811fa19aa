"""Bad input, the fortieth independent round: the cover levels' walk log and the streams.

- The walk log (``qif.walk_log``) given a FIFO read it for ever (``cover_levels(p, m,
  log=FIFO)`` hung); a path under a regular file was a ``NotADirectoryError`` traceback (the
  clean-up of the temporary failed too); a path holding a NUL character was Python's
  "embedded null byte"; a header of ``"version": true`` (or ``1.0``) was read as version 1.
- A log removed while the walks ran came back as the following walks' lines with no
  header: the re-run refused the whole file ("its first line is not the log's header").
- A damaged log, or a file that is not one, was found only when the walks began: ``reid
  --bounds --certify --certify-log FILE`` refused it after every attack trial (at 1M users,
  hours), ``reid_bounds(certify_log=)`` after the other bounds; ``certify_log=5`` was named
  ``log``, the argument of ``cover_levels``.
- An interrupted ``reid --certify-log FILE`` said "nothing written (no partial output left)"
  beside a log of finished walks, which a re-run resumes.
- The output's directory removed or moved while the command ran (the closing rename's
  ``FileNotFoundError``), or replaced by a file (``NotADirectoryError`` / ``FileExistsError``):
  "error: FileNotFoundError: ..." naming the hidden temporary, exit code 1.
- A reader that stops reading (``topicslab reid ... | head``, a closed pipe): rich's console
  ended the process with exit code 1 and no line, before ``reid`` wrote its ``--json`` and
  ``--figure``; ``qif --json --plot F`` the same (its JSON went through ``typer.echo``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from refusal import check_refused, invoke, random_profiles, tree

from topicslab.errors import InputError


def _profiles(n: int = 30, r: int = 5, m: int = 9, k: int = 3, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.stack([np.stack([rng.choice(m, k, replace=False) for _ in range(r)])
                     for _ in range(n)]).astype(np.int32)


def _population(directory: Path, users: int = 40) -> Path:
    from topicslab import io as tio
    from topicslab.datamodel import TopicSets

    # topics from the whole taxonomy: over a few topics Corollary 1 is exact (nothing to
    # certify, no walk)
    rng = np.random.default_rng(3)
    sets = np.sort(np.stack([np.stack([rng.choice(469, 5, replace=False) for _ in range(5)])
                             for _ in range(users)]), axis=-1).astype(np.int16)
    path = directory / "pop.parquet"
    tio.write_sets(path, TopicSets(sets, "v2", np.arange(users, dtype=np.int64)))
    return path


def _damaged_log(path: Path) -> Path:
    from topicslab.qif.cover_levels import cover_levels

    cover_levels(_profiles(), 9, log=path)
    lines = path.read_text(encoding="utf-8").splitlines()
    obj = json.loads(lines[1])
    obj["sums"] = [v + 1 for v in obj["sums"]]
    lines[1] = json.dumps(obj)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# ---- the walk log's location and header ----------------------------------------------------


def test_a_walk_log_that_is_a_pipe_is_refused_not_read_for_ever(tmp_path: Path) -> None:
    """Was read for ever (the open of a FIFO waits for a writer)."""
    from topicslab.qif.cover_levels import cover_levels

    fifo = tmp_path / "walks.jsonl"
    os.mkfifo(fifo)

    def hung(signum: int, frame: object) -> None:
        raise AssertionError("the walk log's FIFO was read (hung)")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(20)
    try:
        with pytest.raises(InputError, match="not a regular file"):
            cover_levels(_profiles(), 9, log=fifo)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_a_walk_log_under_a_regular_file_is_refused(tmp_path: Path) -> None:
    """Was a NotADirectoryError traceback (the temporary's clean-up failed as well)."""
    from topicslab.qif.cover_levels import cover_levels

    (tmp_path / "f").write_text("x", encoding="utf-8")
    with pytest.raises(InputError, match="the walk log: Not a directory"):
        cover_levels(_profiles(), 9, log=tmp_path / "f" / "walks.jsonl")


def test_a_walk_log_path_with_a_nul_is_bad_input() -> None:
    """Was Python's ValueError "embedded null byte", no InputError."""
    from topicslab.qif.cover_levels import cover_levels

    with pytest.raises(InputError, match="NUL"):
        cover_levels(_profiles(), 9, log="walks\0.jsonl")


@pytest.mark.parametrize("version", ["true", "1.0"])
def test_a_walk_log_of_another_version_number_kind_is_refused(tmp_path: Path,
                                                              version: str) -> None:
    """``true`` and ``1.0`` were read as version 1."""
    from topicslab.qif.cover_levels import cover_levels

    log = tmp_path / "walks.jsonl"
    header = '{"format": "topicslab.cover_levels.walks", "version": ' + version + "}\n"
    log.write_text(header, encoding="utf-8")
    with pytest.raises(InputError, match="version") as caught:
        cover_levels(_profiles(), 9, log=log)
    assert caught.value.row == 1 and caught.value.field == "version"


def test_a_walk_log_removed_during_the_walks_is_written_again_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The next walk's line made a file with no header, which the re-run refused whole."""
    import importlib

    cl = importlib.import_module("topicslab.qif.cover_levels")
    p = _profiles()
    fresh = cl.cover_levels(p, 9)
    log = tmp_path / "walks.jsonl"
    real = cl.walk_sums
    calls: list[int] = []

    def removing_the_log(*args: Any) -> Any:
        calls.append(1)
        if len(calls) == 3:
            log.unlink()
        return real(*args)

    monkeypatch.setattr(cl, "walk_sums", removing_the_log)
    assert cl.cover_levels(p, 9, log=log) == fresh
    calls.clear()
    assert cl.cover_levels(p, 9, log=log) == fresh
    assert calls == []  # every walk in the log again
    assert len(log.read_text(encoding="utf-8").splitlines()) == 1 + fresh.box_walks


# ---- a bad log refused before the work -----------------------------------------------------


def test_reid_bounds_refuses_a_damaged_log_before_the_other_bounds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Was refused when the walks began, after the other bounds."""
    from topicslab.attacks import bounds
    from topicslab.datamodel import TopicSets

    log = _damaged_log(tmp_path / "walks.jsonl")

    def work(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the bounds were computed before the log was checked")

    monkeypatch.setattr(bounds, "topics_channel", work)
    sets = TopicSets(random_profiles(40, 5, seed=3), "v2")
    with pytest.raises(InputError, match="does not match the line") as caught:
        bounds.reid_bounds(sets, weeks=5, certify=True, certify_log=log)
    assert caught.value.row == 2 and caught.value.field == "digest"


def test_reid_bounds_names_a_certify_log_of_no_path_by_its_name() -> None:
    """``certify_log=5`` was named ``log`` (cover_levels' argument), after the other bounds."""
    from topicslab.attacks import reid_bounds
    from topicslab.datamodel import TopicSets

    sets = TopicSets(random_profiles(40, 5, seed=3), "v2")
    with pytest.raises(InputError) as caught:
        reid_bounds(sets, weeks=5, certify=True, certify_log=5)  # type: ignore[arg-type]
    assert caught.value.field == "certify_log"


def test_reid_refuses_a_damaged_certify_log_before_the_attacks(
        work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Was refused after every attack trial, when the certified bracket began."""
    from topicslab import attacks

    pop = _population(work)
    log = _damaged_log(work / "walks.jsonl")

    def attacked(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the attacks ran before the log was checked")

    monkeypatch.setattr(attacks, "measure_risk", attacked)
    before = tree(work)
    res = invoke(["reid", "--sets", str(pop), "--weeks", "5", "--trials", "1", "--bounds",
                  "--certify", "--certify-log", str(log), "--no-progress"])
    line = check_refused(res.output, res.exit_code, "row 2, field 'digest'")
    assert "walks.jsonl" in line
    assert tree(work) == before


def test_reid_refuses_a_certify_log_that_is_not_a_log_before_the_attacks(
        work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from topicslab import attacks

    pop = _population(work)
    other = work / "other.jsonl"
    other.write_text('{"user": 1}\n', encoding="utf-8")
    monkeypatch.setattr(attacks, "measure_risk", lambda *a, **k: pytest.fail("attacked"))
    res = invoke(["reid", "--sets", str(pop), "--weeks", "5", "--trials", "1", "--bounds",
                  "--certify", "--certify-log", str(other), "--no-progress"])
    check_refused(res.output, res.exit_code, "row 1, field 'format'")
    assert other.read_text(encoding="utf-8") == '{"user": 1}\n'


# ---- an interrupted certified reid names its log -------------------------------------------


def test_an_interrupted_certified_reid_names_its_walk_log(
        work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Said "nothing written (no partial output left)" beside a log of finished walks."""
    import importlib

    cl = importlib.import_module("topicslab.qif.cover_levels")
    pop = _population(work)
    real = cl.walk_sums
    calls: list[int] = []

    def stopped_on_the_third(*args: Any) -> Any:
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(cl, "walk_sums", stopped_on_the_third)
    log = work / "walks.jsonl"
    res = invoke(["reid", "--sets", str(pop), "--weeks", "5", "--trials", "1", "--bounds",
                  "--certify", "--certify-log", str(log), "--no-progress"])
    assert res.exit_code == 130, res.output
    line = [ln for ln in res.output.splitlines() if ln.startswith("interrupted:")][-1]
    assert f"the 2 certified walks finished are kept in {log}" in line, line
    assert "nothing written" not in line
    assert len(log.read_text(encoding="utf-8").splitlines()) == 3  # header + 2 walks


# ---- a reader that stops reading -----------------------------------------------------------


def _closed_reader(args: list[str], cwd: Path,
                   stderr_too: bool = False) -> subprocess.CompletedProcess[bytes]:
    """``topicslab ARGS`` whose standard output (and with ``stderr_too`` standard error, as
    ``2>&1 | head``) is a pipe nobody reads (closed at once)."""
    from topicslab import io as tio

    env = {**os.environ, "PYTHONPATH": str(Path(tio.__file__).parents[2]), "COLUMNS": "80"}
    env.pop("TOPICSLAB_DEBUG", None)
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run([sys.executable, "-c", "from topicslab._main import main; main()",
                               *args], stdout=write,
                              stderr=write if stderr_too else subprocess.PIPE, env=env,
                              cwd=cwd, check=False, timeout=120)
    finally:
        os.close(write)


@pytest.mark.parametrize("stderr_too", [False, True])
def test_reid_whose_reader_stopped_still_writes_its_files(tmp_path: Path,
                                                          stderr_too: bool) -> None:
    """Exit code 1 and no line, and no --json written (with standard error in the pipe too,
    through the progress bar's own console)."""
    pop = _population(tmp_path, users=30)
    res = _closed_reader(["reid", "--sets", str(pop), "--weeks", "3", "--trials", "1",
                          "--json", "r.json"], tmp_path, stderr_too)
    assert res.returncode == 0, res.stderr
    assert b"Traceback" not in (res.stderr or b"")
    assert json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["users"] == 30


def test_qif_json_whose_reader_stopped_still_writes_the_figure(tmp_path: Path) -> None:
    """Exit code 1 and no line, and no figure."""
    res = _closed_reader(["qif", "--json", "--epochs", "1..2", "--plot", "t.png"], tmp_path)
    assert res.returncode == 0, res.stderr.decode()
    assert b"Traceback" not in res.stderr
    assert (tmp_path / "t.png").stat().st_size > 0


# ---- the output's directory changed during the work ----------------------------------------


@pytest.mark.parametrize(("change", "named"), [
    ("remove", "X/p.parquet: directory X no longer exists: it was removed or moved"),
    ("file", "X/p.parquet: X is a file where a directory was expected"),
])
def test_population_whose_directory_changed_during_the_work(
        work: Path, monkeypatch: pytest.MonkeyPatch, change: str, named: str) -> None:
    """Was "error: FileNotFoundError: ... '.p.parquet.xxxx.tmp' -> 'X/p.parquet'" (or
    NotADirectoryError), exit code 1."""
    from topicslab import population as pop

    real = pop.generate_chunks

    def changing(*args: Any, **kwargs: Any) -> Any:
        for chunk in real(*args, **kwargs):
            shutil.rmtree(work / "X", ignore_errors=True)
            if change == "file":
                (work / "X").write_text("x", encoding="utf-8")
            yield chunk

    monkeypatch.setattr(pop, "generate_chunks", changing)
    (work / "X").mkdir()
    res = invoke(["population", "--users", "50", "--weeks", "2", "--seed", "0", "--out",
                  "X/p.parquet"])
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip() and "━" not in ln]
    assert len(lines) == 1 and lines[0].startswith("error: "), res.output
    assert named in lines[0], res.output
    assert "Traceback" not in res.output and ".tmp" not in res.output
    assert sorted(p.name for p in work.iterdir()) == (["X"] if change == "file" else [])
