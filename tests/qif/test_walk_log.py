"""The cover levels' walk log (``qif.walk_log``): a resumed computation gives the same bracket
without walking again, a stop mid-line loses only that walk and a Ctrl-C none that finished,
one log serves several computations (not those of other counting code), one writer holds it
at a time, and a damaged line, a repeated walk with other sums, or a file that is not a
writable log, is refused with the file, the line and the field named."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import numpy as np
import pytest

from topicslab.errors import InputError
from topicslab.qif.cover_levels import cover_levels

# (the package's ``cover_levels`` function shadows the module of that name as an attribute)
cl = importlib.import_module("topicslab.qif.cover_levels")


def _profiles(seed: int, n: int = 40, r: int = 5, m: int = 9, k: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = np.stack([rng.choice(m, k, replace=False) for _ in range(r)])
    users = [base.copy() if rng.random() < 0.4 else
             np.stack([rng.choice(m, k, replace=False) for _ in range(r)]) for _ in range(n)]
    return np.stack(users).astype(np.int32)


def _counting_walks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = cl.walk_sums

    def counted(*args: object) -> list[int]:
        calls.append(1)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(cl, "walk_sums", counted)
    return calls


def _flat(text: str) -> str:
    return "".join(text.split())


def test_a_resumed_computation_walks_nothing_again_and_gives_the_same_levels(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = _profiles(1)
    fresh = cover_levels(p, 9)
    log = tmp_path / "walks.jsonl"
    calls = _counting_walks(monkeypatch)
    first = cover_levels(p, 9, log=log)
    assert first == fresh
    assert len(calls) == fresh.box_walks
    # header + one line per walk
    assert len(log.read_text().splitlines()) == 1 + fresh.box_walks
    assert first.logged == 0
    calls.clear()
    again = cover_levels(p, 9, log=log)
    assert again == fresh and calls == []
    assert again.logged == fresh.box_walks


def test_walks_of_other_counting_code_are_not_reused(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    bu = importlib.import_module("topicslab.qif.box_unions")
    p = _profiles(11)
    log = tmp_path / "walks.jsonl"
    fresh = cover_levels(p, 9, log=log)
    monkeypatch.setattr(bu, "WALK_VERSION", bu.WALK_VERSION + 1)
    calls = _counting_walks(monkeypatch)
    assert cover_levels(p, 9, log=log) == fresh
    assert len(calls) == fresh.box_walks  # all counted again by the "new" code
    assert len(log.read_text().splitlines()) == 1 + 2 * fresh.box_walks  # the old ones kept


def test_a_stop_mid_line_loses_only_that_walk(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    p = _profiles(2)
    log = tmp_path / "walks.jsonl"
    fresh = cover_levels(p, 9, log=log)
    lines = log.read_text().splitlines(keepends=True)
    kept = 1 + 7  # the header and seven walks; the eighth's line cut short by a stop
    log.write_text("".join(lines[:kept]) + lines[kept][: len(lines[kept]) // 2])
    calls = _counting_walks(monkeypatch)
    assert cover_levels(p, 9, log=log) == fresh
    assert len(calls) == fresh.box_walks - 7
    # the cut line dropped, the walks after it logged again in the same order
    assert log.read_text() == "".join(lines)


def test_one_log_serves_several_computations(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "walks.jsonl"
    a, b = _profiles(3), _profiles(4)
    level_a, level_b = cover_levels(a, 9, log=log), cover_levels(b, 9, log=log)
    level_a10 = cover_levels(a, 10, log=log)  # another m: another computation
    assert len(log.read_text().splitlines()) == 1 + 3 * level_a.box_walks
    calls = _counting_walks(monkeypatch)
    assert cover_levels(b, 9, log=log) == level_b
    assert cover_levels(a, 9, log=log) == level_a
    assert cover_levels(a, 10, log=log) == level_a10
    assert calls == []
    assert cover_levels(a[:, 1:], 9, log=log) == cover_levels(a[:, 1:], 9)
    assert len(calls) == 2 * cover_levels(a[:, 1:], 9).box_walks


@pytest.mark.parametrize("edit, field", [
    (lambda obj: obj.update(sums=[obj["sums"][0] + 1, *obj["sums"][1:]]), "digest"),
    (lambda obj: obj.update(sums=[-1] * len(obj["sums"])), "sums"),
    (lambda obj: obj.update(sums=["12"] * len(obj["sums"])), "sums"),
    (lambda obj: obj.update(sums=obj["sums"] + [0]), "sums"),
    (lambda obj: obj.update(walk=[[0.5], [[]]]), "walk"),
    (lambda obj: obj.update(walk="weeks"), "walk"),
    (lambda obj: obj.pop("fingerprint"), "fingerprint"),
])
def test_an_edited_line_is_refused_by_row_and_field(tmp_path: Path, edit: object,
                                                    field: str) -> None:
    p = _profiles(5)
    log = tmp_path / "walks.jsonl"
    cover_levels(p, 9, log=log)
    lines = log.read_text().splitlines()
    obj = json.loads(lines[3])
    edit(obj)  # type: ignore[operator]
    lines[3] = json.dumps(obj)
    log.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as err:
        cover_levels(p, 9, log=log)
    assert (err.value.file, err.value.row, err.value.field) == (str(log), 4, field)


def test_a_line_moved_to_another_computation_is_refused(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    cover_levels(_profiles(6), 9, log=a)
    cover_levels(_profiles(7), 9, log=b)
    lines = a.read_text().splitlines()
    moved = json.loads(lines[2])
    moved["fingerprint"] = json.loads(b.read_text().splitlines()[1])["fingerprint"]
    lines[2] = json.dumps(moved)
    a.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as err:
        cover_levels(_profiles(6), 9, log=a)
    assert (err.value.row, err.value.field) == (3, "digest")


@pytest.mark.parametrize("text, row, field", [
    ("", 1, None),
    ("a,b,c\n1,2,3\n", 1, None),
    ('{"format": "other"}\n', 1, "format"),
    ('{"format": "topicslab.cover_levels.walks", "version": 9}\n', 1, "version"),
    ("[1, 2]\n", 1, None),
    (b"\xff\xfe\n", 1, None),
])
def test_a_file_that_is_not_a_walk_log_is_refused(tmp_path: Path, text: str | bytes, row: int,
                                                  field: str | None) -> None:
    log = tmp_path / "walks.jsonl"
    log.write_bytes(text if isinstance(text, bytes) else text.encode())
    before = log.read_bytes()
    with pytest.raises(InputError) as err:
        cover_levels(_profiles(8), 9, log=log)
    assert (err.value.file, err.value.row, err.value.field) == (str(log), row, field)
    assert log.read_bytes() == before  # refused, untouched


def test_a_damaged_middle_line_is_refused(tmp_path: Path) -> None:
    p = _profiles(9)
    log = tmp_path / "walks.jsonl"
    cover_levels(p, 9, log=log)
    lines = log.read_text().splitlines()
    lines[5] = lines[5][:20]
    log.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as err:
        cover_levels(p, 9, log=log)
    assert (err.value.row, err.value.field) == (6, None)
    assert "not a JSON line" in str(err.value)


def test_bad_log_locations_are_refused_before_any_walk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting_walks(monkeypatch)
    with pytest.raises(InputError, match="is a directory"):
        cover_levels(_profiles(10), 9, log=tmp_path)
    with pytest.raises(InputError, match="cannot create the walk log"):
        cover_levels(_profiles(10), 9, log=tmp_path / "missing" / "walks.jsonl")
    with pytest.raises(InputError, match="must be a file path"):
        cover_levels(_profiles(10), 9, log=5)  # type: ignore[arg-type]
    assert calls == []
    assert list(tmp_path.iterdir()) == []


def test_reid_certify_log_resumes_and_its_bad_uses_are_one_line_errors(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from topicslab import io as tio
    from topicslab.cli import app
    from topicslab.population import generate

    pop = tmp_path / "pop.parquet"
    tio.write_sets(pop, generate(600, 5, seed=3))
    log = tmp_path / "walks.jsonl"
    base = ["reid", "--sets", str(pop), "--weeks", "5", "--targets", "100", "--bounds",
            "--certify", "--no-progress"]
    first = CliRunner().invoke(app, [*base, "--json", str(tmp_path / "a.json"),
                                     "--certify-log", str(log)])
    assert first.exit_code == 0, first.output
    walks = len(log.read_text().splitlines()) - 1
    assert walks == 1 + 5 + 10 + 10 + 5
    calls = _counting_walks(monkeypatch)
    again = CliRunner().invoke(app, [*base, "--json", str(tmp_path / "b.json"),
                                     "--certify-log", str(log)])
    assert again.exit_code == 0, again.output
    assert calls == []
    # without the white space: the console wraps a long path anywhere (under pytest-xdist
    # the temporary directories are longer)
    flat_first, flat_again = ("".join(res.output.split()) for res in (first, again))
    assert _flat(f"note: walk log {log}: 0 of the 31 walks read from it, 31 counted and "
                 "added") in flat_first
    assert _flat(f"note: walk log {log}: 31 of the 31 walks read from it") in flat_again
    assert "countedandadded" not in flat_again
    interval = [json.loads((tmp_path / f).read_text())["bounds"]["full_information_interval"]
                for f in ("a.json", "b.json")]
    assert interval[0] == interval[1] and interval[0] is not None

    notes = tmp_path / "notes.jsonl"
    notes.write_text("hello\n")
    txt, missing = tmp_path / "w.txt", tmp_path / "no" / "w.jsonl"
    cases = [
        (base[:-2], log, "field '--certify-log'",
         "--certify-log records the walks of --certify: add --certify"),
        (base, txt, f"{txt}, field '--certify-log'", "this option writes JSON-lines files: "
                                                     "the name must end in .jsonl"),
        (base, missing, f"{missing}, field '--certify-log'", "does not exist"),
        (base, tmp_path, f"{tmp_path}, field '--certify-log'", "is an existing directory"),
        (base, notes, f"{notes}, row 1", "is not a walk log of topicslab's cover levels"),
    ]
    for command, path, where, words in cases:
        res = CliRunner().invoke(app, [*command, "--certify-log", str(path)])
        assert res.exit_code == 2, (path, res.output)
        line = res.output.strip()
        assert len(line.splitlines()) == 1, line
        assert line.startswith(f"error: {where}") and words in line, line
    assert calls == []
    assert notes.read_text() == "hello\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "a.json", "b.json", "notes.jsonl", "pop.parquet", "walks.jsonl"]


def test_reid_stopped_mid_certify_says_where_its_walks_are_and_resumes(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    from topicslab import io as tio
    from topicslab.attacks import reid_bounds
    from topicslab.population import generate

    pop = tmp_path / "pop.parquet"
    sets = generate(4000, 6, seed=4)
    tio.write_sets(pop, sets)
    log = tmp_path / "walks.jsonl"
    command = [sys.executable, "-m", "topicslab", "reid", "--sets", str(pop), "--weeks", "6",
               "--targets", "100", "--bounds", "--certify", "--no-progress",
               "--certify-log", str(log)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=env, text=True)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if log.exists() and len(log.read_text().splitlines()) >= 3:  # the header, two walks
            break
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()[0]
    proc.send_signal(signal.SIGINT)
    output = proc.communicate(timeout=120)[0]
    assert proc.returncode == 130, output
    kept = len(log.read_text().splitlines()) - 1
    assert kept >= 2
    assert output.strip().splitlines()[-1] == (
        f"interrupted: reid stopped; the {kept} certified walks finished are kept in {log} "
        "(the same command with it resumes there); nothing else written")
    resumed = subprocess.run([*command, "--json", str(tmp_path / "a.json")], env=env,
                             capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    fresh = reid_bounds(sets, weeks=6, certify=True).full_information_interval
    a = json.loads((tmp_path / "a.json").read_text())["bounds"]["full_information_interval"]
    assert fresh is not None and a == list(fresh)
    assert len(log.read_text().splitlines()) == 1 + 1 + 6 + 15 + 20 + 15  # each walk once


def test_a_walk_repeated_with_other_sums_is_refused(tmp_path: Path) -> None:
    """A copied line changed with its digest recomputed (the digest guards against damage
    only): the later line replaced the earlier one, and a level came out wrong."""
    wl = importlib.import_module("topicslab.qif.walk_log")
    p = _profiles(12)
    log = tmp_path / "walks.jsonl"
    cover_levels(p, 9, log=log)
    lines = log.read_text().splitlines()
    obj = json.loads(lines[1])
    obj["sums"] = [v - 1 for v in obj["sums"]]
    obj["digest"] = wl._digest(obj["fingerprint"], wl._key(*obj["walk"]), obj["sums"])
    log.write_text("\n".join([*lines, json.dumps(obj)]) + "\n")
    with pytest.raises(InputError) as err:
        cover_levels(p, 9, log=log)
    assert (err.value.row, err.value.field) == (len(lines) + 1, "sums")
    assert "repeats the walk of row 2 with other sums" in str(err.value)
    # the same walk twice with the same sums (two runs that both finished it) is fine
    log.write_text("\n".join([*lines, lines[1]]) + "\n")
    assert cover_levels(p, 9, log=log) == cover_levels(p, 9)


def test_one_writer_at_a_time_and_a_read_only_log_is_refused_first(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    wl = importlib.import_module("topicslab.qif.walk_log")
    p = _profiles(13)
    log = tmp_path / "walks.jsonl"
    cover_levels(p[:, :4], 9, log=log)
    calls = _counting_walks(monkeypatch)
    with wl.WalkLog(log, np.zeros((1, 1, 1), np.int32), 9):  # another computation holds it
        with pytest.raises(InputError, match="is in use by another computation"):
            cover_levels(p, 9, log=log)
    assert calls == []
    if os.geteuid() != 0:  # (root writes whatever the mode says)
        log.chmod(0o444)
        with pytest.raises(InputError, match="cannot open the walk log for appending"):
            cover_levels(p, 9, log=log)
        with pytest.raises(InputError, match="is not writable"):
            wl.check_walk_log(log)
        assert calls == []
        log.chmod(0o644)
    assert cover_levels(p, 9, log=log) == cover_levels(p, 9)


def test_a_ctrl_c_during_a_walk_keeps_that_walk(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel does not look at signals, so a Ctrl-C waits for the walk under way; it is
    held back until that walk is logged (without the hold, it struck right after the walk,
    before its line was written, and the wait was for nothing)."""
    import signal

    p = _profiles(14)
    log = tmp_path / "walks.jsonl"
    real = cl.walk_sums
    calls: list[int] = []

    def interrupted_in_the_third(*args: object) -> list[int]:
        calls.append(1)
        out = real(*args)  # type: ignore[arg-type]
        if len(calls) == 3:
            signal.raise_signal(signal.SIGINT)  # as if Ctrl-C came during the kernel
        return out

    monkeypatch.setattr(cl, "walk_sums", interrupted_in_the_third)
    # Python's own Ctrl-C handler, as in a terminal (a job started in the background by a
    # shell without job control, `pytest &`, ignores SIGINT from its start)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            cover_levels(p, 9, log=log)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert len(log.read_text().splitlines()) == 1 + 3
    monkeypatch.setattr(cl, "walk_sums", real)
    assert cover_levels(p, 9, log=log) == cover_levels(p, 9)
