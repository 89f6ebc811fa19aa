"""Errors of the QIF toolkit: one-line messages the CLI prints without a traceback."""

from __future__ import annotations

from topicslab.errors import TopicsLabError


class QIFError(TopicsLabError):
    """Bad channel, prior, gain function or Topics API parameters (m, s, r)."""


__all__ = ["QIFError"]
