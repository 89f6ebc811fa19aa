"""Shared test configuration."""

from __future__ import annotations

from collections.abc import Callable

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
