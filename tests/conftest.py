"""Shared test configuration."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

InterruptOnCall = Callable[..., None]


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
