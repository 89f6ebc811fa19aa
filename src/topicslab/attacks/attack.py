"""The attack interface and registry: pluggable match-set attacks (Carey et al. App. E.1;
docs/design.md §Exact attack engine).

An attack here is any rule that names the site-1 user maximising

    score(i) = sum_{s in M(i)} gain(o, s),      M(i) = {s : W_i^s = o^s}

for the query trace ``o`` (ties broken uniformly at random). It learns what it needs from
website 1's table only (``fit``), then gives the per-week gains of each query (``gains``).
The Hamming attack (gain 1) and the asymmetric weighted Hamming attack of Theorem 1 (gain
``Δ(o^s)``, the mismatch minus the match distance) are of this form, and so is any attack whose
distance is a sum over weeks of a match term and a mismatch term that depend on the query only:
such attacks run on the exact engine unchanged. Register new ones with ``register_attack``.

A scorer that compares whole sequences (the learned attack: topics of one week against
another week's, co-occurring topics) is not a sum of per-week match gains. It is a
``TraceAttack``: fitted on website 1 like the others, it decides its own argmax sets
(``outcomes``: argmax size, whether the true user is in it, best score), and the protocol
runs it in the same trials, on the same targets and tie-break streams, as the match-set
attacks, which keep the exact engine to themselves.

Public names:
    MatchSetAttack                 base class: name, fit(site1, mechanism), gains(queries),
                                   describe()
    TraceAttack                    base class: name, fit(site1, mechanism),
                                   outcomes(queries, true_rows), describe()
    register_attack(name, factory) add an attack under a name (factory takes keyword options)
    make_attack(name, **options)   a fresh attack instance
    available_attacks()            registered names (hamming, asymmetric, then others)
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from topicslab._checks import value_shown
from topicslab.api import Mechanism
from topicslab.attacks.outcomes import TargetOutcomes
from topicslab.errors import InputError


class MatchSetAttack(abc.ABC):
    """A re-identification attack that scores users by their match set with the query."""

    #: registry name, used in results and on the command line
    name: str = "attack"
    #: whether ``fit`` reads a strided view of the traces as it is (a risk curve then
    #: passes each r's week columns without copying them: 0.5 s per trial at 10M users)
    fits_views: bool = False

    @abc.abstractmethod
    def fit(self, site1: npt.NDArray[np.integer], mechanism: Mechanism | None = None) -> None:
        """Learn from website 1's table of traces ``[n, r]`` only (never from profiles)."""

    @abc.abstractmethod
    def gains(self, queries: npt.NDArray[np.integer]) -> npt.NDArray[np.float64]:
        """Per-query, per-week score of a match: ``float64[Q, r]`` (finite)."""

    def describe(self) -> dict[str, Any]:
        """JSON-able description of the fitted attack (parameters, weights summary)."""
        return {"name": self.name}


class TraceAttack(abc.ABC):
    """A re-identification attack that scores whole traces and decides its own argmax sets."""

    #: name in results and on the command line
    name: str = "attack"

    @abc.abstractmethod
    def fit(self, site1: npt.NDArray[np.integer], mechanism: Mechanism | None = None) -> None:
        """Learn from website 1's table of traces ``[n, c]`` only (never from profiles)."""

    @abc.abstractmethod
    def outcomes(self, queries: npt.NDArray[np.integer],
                 true_rows: npt.NDArray[np.int64]) -> TargetOutcomes:
        """Each query's argmax set over the fitted website 1 (size, whether ``true_rows[q]``
        is in it, best score), every website-1 user compared: the expected success is then
        ``1/|argmax|``, as for the match-set attacks."""

    def describe(self) -> dict[str, Any]:
        """JSON-able description of the attack (and what it recorded over the trials)."""
        return {"name": self.name}


_REGISTRY: dict[str, Callable[..., MatchSetAttack]] = {}


def register_attack(name: str, factory: Callable[..., MatchSetAttack]) -> None:
    """Register ``factory`` (called with keyword options) under ``name`` (replaces any)."""
    if not name or not name.replace("_", "").replace("-", "").isalnum():
        raise ValueError(f"attack names are alphanumeric (with - or _), got {name!r}")
    if not callable(factory):  # (5 was registered, and failed only when the attack was made)
        raise TypeError(f"register_attack takes a factory (a callable), got "
                        f"{type(factory).__name__}")
    _REGISTRY[name] = factory


_BUILTIN = ("hamming", "asymmetric")


def available_attacks() -> list[str]:
    """Names of the registered attacks: the built-in ones first, then in registration order."""
    builtin = [n for n in _BUILTIN if n in _REGISTRY]
    return builtin + [n for n in _REGISTRY if n not in _BUILTIN]


def make_attack(name: str, **options: Any) -> MatchSetAttack:
    """A fresh instance of the attack registered under ``name``."""
    # (a list or an array was the registry's "TypeError: unhashable type")
    factory = _REGISTRY.get(name) if isinstance(name, str) else None
    if factory is None:
        raise InputError(f"unknown attack {value_shown(name)}; choose from "
                         f"{', '.join(available_attacks())}",
                         field="attack")
    import inspect

    try:  # (an option the attack does not take was the factory's TypeError)
        inspect.signature(factory).bind(**options)
    except TypeError:
        takes = [p.name for p in inspect.signature(factory).parameters.values()
                 if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]
        raise InputError(f"attack {name!r} takes no option {', '.join(map(repr, options))}; "
                         f"its options: {', '.join(takes) or 'none'}",
                         field="options") from None
    except ValueError:  # a factory without a signature: as before
        pass
    return factory(**options)


__all__ = ["MatchSetAttack", "TraceAttack", "available_attacks", "make_attack",
           "register_attack"]
