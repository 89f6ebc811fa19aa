"""A figure laid out with ``tight_layout`` is drawn once when saved; the crop to what is
drawn (the default) measures it with one more draw."""

from __future__ import annotations

import pytest

from topicslab._plotting import png_bytes, pyplot


@pytest.mark.parametrize(("laid_out", "draws"), [(False, 2), (True, 1)])
def test_a_laid_out_figure_is_drawn_once(monkeypatch: pytest.MonkeyPatch, laid_out: bool,
                                         draws: int) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1], [1, 0])
    fig.tight_layout()
    calls: list[int] = []
    real = type(fig).draw

    def counted(self: object, renderer: object) -> None:
        calls.append(1)
        real(self, renderer)

    monkeypatch.setattr(type(fig), "draw", counted)
    data = png_bytes(fig, laid_out=laid_out)
    assert data.startswith(b"\x89PNG") and len(calls) == draws
