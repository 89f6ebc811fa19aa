"""All-or-nothing writers (issue 15): a failure or Ctrl-C inside a writer leaves the previous
state exactly as it was and no hidden temporary; a success replaces the old output as a whole.

Interruptions are simulated by raising ``KeyboardInterrupt`` from a function the writer calls
half-way through, as a Ctrl-C between two of its files would.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from topicslab import _atomic
from topicslab._atomic import (
    atomic_dir,
    atomic_path,
    atomic_paths,
    completed_writes,
    forget_completed_writes,
    interrupts_deferred,
    write_text_atomic,
)
from topicslab.taxonomy import Taxonomy

#: the ``interrupt_on_call`` fixture (tests/conftest.py)
Interrupter = Callable[..., None]


def _snapshot(root: Path) -> dict[str, bytes | None]:
    """Every entry under ``root``: file bytes, ``None`` for a directory."""
    return {str(p.relative_to(root)): None if p.is_dir() else p.read_bytes()
            for p in sorted(root.rglob("*"))}


def _no_temporaries(root: Path) -> None:
    hidden = [p.name for p in root.rglob(".*")]
    assert not hidden, hidden


def test_interrupted_new_directory_is_never_created(tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt), atomic_dir(tmp_path / "out") as tmp:
        (tmp / "a.json").write_text("1")
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_interrupted_existing_directory_keeps_its_old_content(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.json").write_text("old a")
    (out / "mine.txt").write_text("the user's")
    before = _snapshot(tmp_path)
    with pytest.raises(KeyboardInterrupt), atomic_dir(out, owned=("a.json",)) as tmp:
        (tmp / "a.json").write_text("new a")
        raise KeyboardInterrupt
    assert _snapshot(tmp_path) == before
    _no_temporaries(tmp_path)


def test_directory_write_replaces_owned_files_and_keeps_the_rest(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "sub").mkdir(parents=True)
    (out / "sub" / "old").write_text("x")
    for name, text in (("a.json", "old a"), ("b.json", "old b"), ("mine.txt", "keep")):
        (out / name).write_text(text)
    with atomic_dir(out, owned=("a.json", "b.json")) as tmp:
        (tmp / "a.json").write_text("new a")
        (tmp / "sub").mkdir()
        (tmp / "sub" / "new").write_text("y")
    assert _snapshot(out) == {"a.json": b"new a", "mine.txt": b"keep", "sub": None,
                              "sub/new": b"y"}
    _no_temporaries(tmp_path)


def test_new_directory_gets_the_usual_mode(tmp_path: Path) -> None:
    with atomic_dir(tmp_path / "out") as tmp:
        (tmp / "a").write_text("1")
    mask = os.umask(0)
    os.umask(mask)
    assert (tmp_path / "out").stat().st_mode & 0o777 == 0o777 & ~mask


def test_interrupted_file_keeps_the_old_bytes(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    path.write_text("old")
    with pytest.raises(KeyboardInterrupt), atomic_path(path) as tmp:
        tmp.write_text("half")
        raise KeyboardInterrupt
    assert path.read_text() == "old"
    _no_temporaries(tmp_path)


def test_file_set_appears_whole_and_replaces_stale_files(tmp_path: Path) -> None:
    old = [tmp_path / f"s-{i:05d}-of-00003.tfrecord" for i in range(3)]
    for p in old:
        p.write_text("old")
    new = [tmp_path / f"s-{i:05d}-of-00002.tfrecord" for i in range(2)]
    before = _snapshot(tmp_path)
    with pytest.raises(KeyboardInterrupt), atomic_paths(new, stale=old) as tmps:
        tmps[0].write_text("new 0")
        raise KeyboardInterrupt
    assert _snapshot(tmp_path) == before
    with atomic_paths(new, stale=old) as tmps:
        for i, t in enumerate(tmps):
            t.write_text(f"new {i}")
    assert sorted(p.name for p in tmp_path.iterdir()) == [p.name for p in new]


def test_ctrl_c_waits_for_the_end_of_a_deferred_block() -> None:
    # other tests (Spark) may have installed their own handler: start from Python's default
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        steps = []
        with pytest.raises(KeyboardInterrupt), interrupts_deferred():
            os.kill(os.getpid(), signal.SIGINT)
            steps.append("after the signal")
        assert steps == ["after the signal"]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, previous)


def test_ignored_ctrl_c_stays_ignored() -> None:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with interrupts_deferred():
            os.kill(os.getpid(), signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


def test_completed_writes_lists_what_is_complete(tmp_path: Path) -> None:
    forget_completed_writes()
    write_text_atomic(tmp_path / "done.json", "{}")
    with atomic_dir(tmp_path / "d") as tmp:
        write_text_atomic(tmp / "inner.json", "{}")  # moved on with its directory
    assert completed_writes() == [(tmp_path / "done.json").absolute(),
                                  (tmp_path / "d").absolute()]
    forget_completed_writes()
    assert completed_writes() == []


#: a 12-topic taxonomy keeps the release files (and the tests) small
TAX12 = Taxonomy.from_rows("test12", [(i * 3 + 1, f"/Topic {i:02d}") for i in range(12)])


def _statistics(seed: int) -> object:
    from topicslab import dp
    from topicslab.datamodel import TopicSets

    rng = np.random.default_rng(seed)
    sets = np.sort(np.stack([np.stack([rng.choice(12, 5, replace=False) for _ in range(2)])
                             for _ in range(200)]), axis=-1).astype(np.int16)
    data = TopicSets(sets, TAX12, np.arange(200, dtype=np.int64))
    return dp.compute_statistics(data, epsilon=10.0, delta=1e-6, seed=seed)


@pytest.mark.parametrize(("writer", "call"), [("release", 1), ("release", 4), ("ledger", 1)])
def test_interrupted_statistics_keep_the_previous_release(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          interrupt_on_call: Interrupter,
                                                          writer: str, call: int) -> None:
    """Ctrl-C before the first file, before the last data file and at the ledger (last)."""
    from topicslab.dp import ledger, release, save_statistics

    out = tmp_path / "stats"
    save_statistics(out, _statistics(0))  # type: ignore[arg-type]
    before = _snapshot(tmp_path)
    module = {"release": release, "ledger": ledger}[writer]
    interrupt_on_call(module, "write_text_atomic", call)
    with pytest.raises(KeyboardInterrupt):
        save_statistics(out, _statistics(1))  # type: ignore[arg-type]
    assert _snapshot(tmp_path) == before
    _no_temporaries(tmp_path)


def test_interrupted_first_statistics_leave_no_directory(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         interrupt_on_call: Interrupter) -> None:
    from topicslab.dp import release, save_statistics

    interrupt_on_call(release, "write_text_atomic", 3)
    with pytest.raises(KeyboardInterrupt):
        save_statistics(tmp_path / "stats", _statistics(0))  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


def test_statistics_in_the_other_schema_replace_the_old_files(tmp_path: Path) -> None:
    from topicslab.dp import load_statistics, save_statistics

    out = tmp_path / "stats"
    save_statistics(out, _statistics(0))  # type: ignore[arg-type]
    (out / "README").write_text("the user's notes")
    save_statistics(out, _statistics(1), schema="legacy")  # type: ignore[arg-type]
    assert sorted(p.name for p in out.iterdir()) == [
        "README", "privacy_ledger.json", "qacross.json", "qwithin.json", "taxonomy.json"]
    assert load_statistics(out, taxonomy=TAX12).taxonomy.size == 12


def test_interrupted_model_save_keeps_the_previous_pair(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        interrupt_on_call: Interrupter) -> None:
    from topicslab.model import TypeMixture, files, save_model

    tax = TAX12
    rng = np.random.default_rng(0)

    def model() -> TypeMixture:
        return TypeMixture(rng.normal(size=(2, 1, 5, tax.size)).astype(np.float32), tax)

    out = tmp_path / "model"
    save_model(out, model())
    before = _snapshot(tmp_path)
    # model.json is written after the weights: interrupt there
    interrupt_on_call(files, "write_text_atomic", 1)
    with pytest.raises(KeyboardInterrupt):
        save_model(out, model())
    assert _snapshot(tmp_path) == before
    _no_temporaries(tmp_path)
    assert _atomic.completed_writes()  # the first save was recorded


def _signal_after(monkeypatch: pytest.MonkeyPatch, name: str, signum: int) -> None:
    """``os.<name>`` sends this process ``signum`` once the call is done: a Ctrl-C (or kill)
    that arrives just after the temporary is made."""
    real = getattr(os, name)

    def then_signal(*args: object, **kwargs: object) -> object:
        result = real(*args, **kwargs)
        monkeypatch.setattr(os, name, real)
        os.kill(os.getpid(), signum)
        return result

    monkeypatch.setattr(os, name, then_signal)


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("kind", ["file", "files", "directory"])
def test_a_signal_just_after_the_temporary_is_made_leaves_none(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, signame: str) -> None:
    """The temporary was made and the signal delivered before the writer's cleanup had its
    name: the hidden temporary stayed (``population`` under ``kill``, about 1 case in 60)."""
    signum = getattr(signal, signame)
    previous = signal.signal(signum, signal.default_int_handler)
    try:
        _signal_after(monkeypatch, "chmod" if kind == "directory" else "fchmod", signum)
        with pytest.raises(KeyboardInterrupt):
            if kind == "file":
                with atomic_path(tmp_path / "a.bin") as tmp:
                    tmp.write_bytes(b"new")
            elif kind == "files":
                with atomic_paths([tmp_path / "a.bin", tmp_path / "b.bin"]) as tmps:
                    for tmp in tmps:
                        tmp.write_bytes(b"new")
            else:
                with atomic_dir(tmp_path / "out") as tmp:
                    (tmp / "a.bin").write_bytes(b"new")
    finally:
        signal.signal(signum, previous)
    assert list(tmp_path.iterdir()) == []


def test_a_signal_during_the_writability_probe_leaves_no_probe(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An output directory is probed with a file made and removed at once: a kill just after
    it was made left ``.topicslab-probe.*`` behind (``population`` under ``kill -USR1``)."""
    from topicslab import _paths

    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        _signal_after(monkeypatch, "close", signal.SIGTERM)
        with pytest.raises(KeyboardInterrupt):
            _paths._writable(tmp_path)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert list(tmp_path.iterdir()) == []
