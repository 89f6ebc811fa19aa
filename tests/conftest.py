"""Shared test configuration."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from typing import Any

import pytest

InterruptOnCall = Callable[..., None]

# modules (node ids) where a test failed: their temporary directories stay for a look
_FAILED_MODULES: set[str] = set()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.failed and item.module is not None:
        _FAILED_MODULES.add(item.module.__name__)
    return report


@pytest.fixture(scope="module", autouse=True)
def _module_temp_dirs_removed(request: pytest.FixtureRequest,
                              tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Removes what a test file made under the session's temporary directory once the file
    has passed. A run writes about 70 MB per end-to-end run and 11 GB in all, which pytest
    keeps to the end of the session (its module fixtures' directories even with
    ``tmp_path_retention_policy = "failed"``); the CI machine's disk ran out on it. A file
    runs whole on one worker (``--dist loadfile``), so what appeared meanwhile is its own,
    except a directory whose name starts with a dot: a helper's, made once for the process."""
    base = tmp_path_factory.getbasetemp()
    before = set(base.iterdir())
    yield
    if request.module.__name__ in _FAILED_MODULES:
        return
    for path in set(base.iterdir()) - before:
        if not path.name.startswith("."):
            shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def interrupt_on_call(monkeypatch: pytest.MonkeyPatch) -> InterruptOnCall:
    """``interrupt_on_call(module, name, call=1)`` makes ``module.name`` raise
    KeyboardInterrupt on its ``call``-th call (1-based): Ctrl-C at a chosen point of a write."""

    def patch(module: object, name: str, call: int = 1) -> None:
        real = getattr(module, name)
        calls: list[int] = []

        def wrapper(*args: object, **kwargs: object) -> object:
            calls.append(1)
            if len(calls) == call:
                raise KeyboardInterrupt
            return real(*args, **kwargs)

        monkeypatch.setattr(module, name, wrapper)

    return patch


@pytest.fixture
def run_python() -> Callable[[str], Any]:
    """``run_python(script)`` runs ``script`` in a fresh interpreter with this package on its
    path (what a new process imports, which the test's own process has long imported); fails
    on a non-zero exit, returns the ``CompletedProcess``."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from topicslab import io as tio

    def run(script: str) -> Any:
        env = {**os.environ, "PYTHONPATH": str(Path(tio.__file__).parents[2])}
        res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             env=env, timeout=300)
        assert res.returncode == 0, res.stderr
        return res

    return run
