"""Shared matplotlib plumbing for every figure of the package: the Agg backend (no display;
render to bytes), PNG bytes of a figure, and ``data:`` URIs to embed them in HTML."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

from topicslab.errors import TopicsLabError


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend."""
    try:
        import matplotlib
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise TopicsLabError("plots need matplotlib: pip install matplotlib") from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def png_bytes(fig: Any, path: str | Path | None = None, *, dpi: int = 110) -> bytes:
    """The figure as PNG bytes (also written to ``path`` if given); the figure is closed."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    pyplot().close(fig)
    data = buf.getvalue()
    if path is not None:
        from topicslab._atomic import write_bytes_atomic

        write_bytes_atomic(path, data)
    return data


def png_data_uri(data: bytes) -> str:
    """A ``data:`` URI embedding PNG bytes in HTML."""
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")
