"""Progress bars: a bar left open by a suspended generator is closed before the CLI's line."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from topicslab import _progress


def _chunks() -> Iterator[int]:
    with _progress.task("work", 3) as advance:
        for i in range(3):
            advance(1)
            yield i


def test_close_bars_stops_a_bar_held_by_a_suspended_generator() -> None:
    gen = _chunks()
    assert next(gen) == 0  # the generator is suspended inside its bar
    (bar,) = _progress._open_bars
    assert bar.live.is_started
    _progress.close_bars()  # what the CLI does before printing its one line
    assert not bar.live.is_started and _progress._open_bars == []
    gen.close()  # closing the generator later stops it again, harmlessly
    assert _progress._open_bars == []


def test_a_finished_bar_is_forgotten() -> None:
    assert list(_chunks()) == [0, 1, 2]
    assert _progress._open_bars == []


def test_each_step_is_a_checkpoint_for_a_swallowed_ctrl_c() -> None:
    from topicslab import _atomic

    for enabled in (True, False):
        with _progress.task("work", 2, enabled=enabled) as advance:
            advance(1)
            _atomic._interrupt_seen = True
            try:
                with pytest.raises(KeyboardInterrupt):
                    advance(1)
            finally:
                _atomic.clear_interrupt()
