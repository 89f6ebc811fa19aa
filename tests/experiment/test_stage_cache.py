"""The stage cache of ``topicslab run`` verifies content (issue 15): a cached artefact that was
truncated or changed after its stage finished is not reused; the stage is recomputed (and the
log says why), as is everything downstream of it, and nothing crashes. Tiny fake stages keep
this fast; the real pipeline is covered by ``test_run_smoke``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from topicslab.experiment.cache import StageCache
from topicslab.experiment.pipeline import _Runner


class _TwoStages:
    """``make`` writes ``model.bin``; ``use`` reads it; each counts its runs."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.runs = {"make": 0, "use": 0}
        self.log: list[str] = []

    def _make(self) -> dict[str, Any]:
        self.runs["make"] += 1
        (self.out / "model.bin").write_bytes(b"weights" * 1000)
        return {"bytes": 7000}

    def _use(self) -> dict[str, Any]:
        self.runs["use"] += 1
        (self.out / "used.bin").write_bytes(b"synthetic" * 100)
        return {"read": len((self.out / "model.bin").read_bytes())}

    def run(self) -> dict[str, Any]:
        runner = _Runner(self.out, StageCache(self.out), self.log.append)
        key, _ = runner.stage("make", {"p": 1}, [], ["model.bin"], self._make)
        _, used = runner.stage("use", {}, [key], ["used.bin"], self._use)
        return used


def _lines(log: list[str], stage: str) -> list[str]:
    return [line for line in log if line.startswith(f"{stage}:")]


def test_unchanged_artefacts_are_reused(tmp_path: Path) -> None:
    stages = _TwoStages(tmp_path)
    stages.run()
    stages.run()
    assert stages.runs == {"make": 1, "use": 1}
    record = json.loads((tmp_path / "stages.json").read_text())
    assert record["make"]["artefacts"]["model.bin"].startswith("sha256:")


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[10] ^= 1
    path.write_bytes(bytes(data))


def _remove(path: Path) -> None:
    path.unlink()


def test_truncated_artefact_is_recomputed_with_its_downstream(tmp_path: Path) -> None:
    for damage, reason in ((_truncate, "truncated or changed"),
                           (_flip_a_byte, "truncated or changed"), (_remove, "missing")):
        stages = _TwoStages(tmp_path)
        stages.run()
        damage(tmp_path / "model.bin")
        used = stages.run()
        assert used == {"read": 7000}, damage.__name__
        assert stages.runs["make"] >= 1 and stages.runs["use"] >= 1
        make_log = _lines(stages.log, "make")
        assert any("recomputing" in line and reason in line for line in make_log), make_log
        assert any("recomputing (make was recomputed)" in line
                   for line in _lines(stages.log, "use")), stages.log
        # the recomputed stage is recorded again: the next run reuses it
        again = _TwoStages(tmp_path)
        again.run()
        assert again.runs == {"make": 0, "use": 0}


def test_record_without_hashes_is_recomputed_not_trusted(tmp_path: Path) -> None:
    stages = _TwoStages(tmp_path)
    stages.run()
    path = tmp_path / "stages.json"
    record = json.loads(path.read_text())
    del record["make"]["artefacts"]  # as written before records held hashes
    path.write_text(json.dumps(record))
    stages.run()
    assert stages.runs == {"make": 2, "use": 2}
    assert any("no content hash" in line for line in stages.log)


def _corrupt_record(text: str) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        path.write_text(text)
    return write


def test_damaged_record_recomputes_without_crashing(tmp_path: Path) -> None:
    for text in ('{"make": ', '{"make": {"key": 3, "summary": []}}', "[]",
                 '{"make": "x", "use": null}'):
        stages = _TwoStages(tmp_path)
        stages.run()
        _corrupt_record(text)(tmp_path / "stages.json")
        before = dict(stages.runs)
        stages.run()
        assert stages.runs["make"] == before["make"] + 1, text


def test_each_artefact_is_hashed_once_per_run(tmp_path: Path, monkeypatch: Any) -> None:
    from topicslab.experiment import cache

    stages = _TwoStages(tmp_path)
    stages.run()  # computed: hashed when recorded
    hashed: list[str] = []
    real = cache.file_fingerprint

    def counting(path: str | Path) -> str:
        hashed.append(Path(path).name)
        return real(path)

    monkeypatch.setattr(cache, "file_fingerprint", counting)
    stages.run()  # cached: hashed when checked
    assert hashed == ["model.bin", "used.bin"]
    hashed.clear()
    _truncate(tmp_path / "model.bin")
    stages.run()
    # model.bin: checked (mismatch), then recorded after the recomputation; used.bin is
    # stale anyway (made from the old model): not checked, only recorded once rewritten
    assert hashed == ["model.bin", "model.bin", "used.bin"]
