"""Helpers of the model tests: small custom taxonomies, random models, exact statistics."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from topicslab.model import TypeMixture
from topicslab.taxonomy import Taxonomy


def small_taxonomy(m: int = 12) -> Taxonomy:
    rows = [(i * 3 + 1, f"/Topic {i:02d}") for i in range(m)]
    return Taxonomy.from_rows(f"test{m}", rows)


@dataclass
class Stats:
    """Duck-typed DP statistics (the fitter needs only these fields)."""

    q_single: np.ndarray
    q_within: np.ndarray
    q_across: np.ndarray
    taxonomy: Any
    k: int


def random_model(tax: Taxonomy, T: int, r: int, k: int, seed: int = 0,
                 scale: float = 2.0) -> TypeMixture:
    rng = np.random.default_rng(seed)
    theta = (rng.normal(size=(T, r, k, tax.size)) * scale).astype(np.float32)
    return TypeMixture(theta, tax, {"seed": seed})


def stats_of(model: TypeMixture) -> Stats:
    """Exact statistics of a model, averaged over weeks / week pairs (stationary targets)."""
    qs, qw, qa = model.statistics()
    return Stats(qs.mean(0), qw.mean(0), qa.mean(0), model.taxonomy, model.k)


def persistent_model(tax: Taxonomy, T: int = 3, M: int = 2, k: int = 5,
                     seed: int = 1) -> TypeMixture:
    """A random persistent-types model (modes, mode stays and slot stays at random)."""
    rng = np.random.default_rng(seed)
    return TypeMixture(rng.normal(size=(T, M, k, tax.size)).astype(np.float32), tax,
                       {"weeks": 4, "seed": seed},
                       stay=rng.uniform(size=(T, M, k)).astype(np.float32),
                       mode_weights=rng.dirichlet(np.ones(M), size=T).astype(np.float32),
                       mode_stay=rng.uniform(size=T).astype(np.float32))
