"""Errors of the QIF toolkit: one-line messages the CLI prints without a traceback."""

from __future__ import annotations

from topicslab.errors import ParameterError, TopicsLabError


class QIFError(TopicsLabError):
    """Bad channel, prior, gain function or Topics API parameters (m, s, r)."""


class QIFParameterError(ParameterError, QIFError):
    """A Topics API parameter (m, s, r, the epochs) outside its range: a ``QIFError`` as every
    failure of the toolkit, and a ``ParameterError`` naming the field (the ``qif`` option)."""


__all__ = ["QIFError", "QIFParameterError"]
