"""The asymmetric weighted Hamming attack (Theorem 1 with Lemma 11; Carey et al. App. E.1.2).

Under the parametric family of Appendix D (top sets i.i.d. across users, independent across
weeks, ``p_s[o] = p[o]``) the optimal partial-information attacker names the user minimising

    Σ_{s: W_i^s = o^s} w_match(o^s) + Σ_{s: W_i^s ≠ o^s} w_mismatch(o^s),
    w_match(t)    = −log( q_out + (q_in − q_out)·q_in·p[t] / (q_out + (q_in − q_out)·p[t]) ),
    w_mismatch(t) = −log( q_out + (q_in − q_out)·α(t) ),   α(t) = (k−1)·p[t] / (k − p[t])

(Lemma 11 under Assumption 1). The match term is −log P(site 2 shows t | site 1 shows t): a
match on a rare topic is worth more than one on a popular topic. Both weights depend only on
the *query's* topic (hence "asymmetric"), so the distance is ``C(o) − Σ_{s ∈ M(i)} Δ(o^s)`` with
``Δ = w_mismatch − w_match``: a match-set attack with gain ``Δ``. ``p`` is estimated from
website 1's answers only (Lemma 10, pooled over weeks, pseudo-count, clipped): the attacker
never sees profiles.

Public names:
    asymmetric_weights(p, q_in, q_out, k) -> (w_match, w_mismatch)
    AsymmetricAttack(pseudo_count=1.0, clip=1e-6, popularity=None)
                                   .fit / .gains / .describe / .weights_jsonl()
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from topicslab._checks import integer, integer_array, number, refuse, refuse_complex
from topicslab._json import dumps
from topicslab.api import Mechanism
from topicslab.attacks.attack import MatchSetAttack, register_attack
from topicslab.attacks.popularity import TopicTally, popularity_from_counts
from topicslab.errors import InputError


def asymmetric_weights(p: npt.ArrayLike, q_in: float, q_out: float, k: int
                       ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Theorem 1's per-topic distances for popularities ``p`` (Lemma 11 for the mismatch).

    Returns ``(w_match, w_mismatch)``, each ``float64`` of ``p``'s shape.
    """
    # (text was NumPy's "could not convert"; ParameterError is a ValueError, as before)
    refuse_complex(p, "p")
    try:
        pp = np.asarray(p, dtype=np.float64)
    except (TypeError, ValueError):
        raise refuse("popularities must be numbers", "p") from None
    if np.any((pp <= 0) | (pp >= 1)) or not np.isfinite(pp).all():
        raise refuse("popularities must lie in (0, 1); clip the estimates", "p")
    k = integer(k, "k", at_least=1)  # (k = 2.5 weighted as a set of 2.5 topics)
    q_in = number(q_in, "q_in", lo=0.0, hi=1.0)
    q_out = number(q_out, "q_out", lo=0.0, hi=1.0)
    if not q_in > q_out >= 0:
        raise refuse("need q_in > q_out >= 0 and k >= 1", "q_in")
    gap = q_in - q_out
    p_in_given_match = q_in * pp / (q_out + gap * pp)  # Bayes: P(t ∈ S | W = t)
    alpha = (k - 1) * pp / (k - pp)  # Lemma 11: P(t ∈ S | W ∈ S, W ≠ t)
    w_match = -np.log(q_out + gap * p_in_given_match)
    w_mismatch = -np.log(q_out + gap * alpha)
    return w_match, w_mismatch


class AsymmetricAttack(MatchSetAttack):
    """Theorem 1's attack with ``p`` estimated from website 1 (Lemma 10).

    Args:
        pseudo_count: added to each topic's count before estimating ``p``.
        clip: estimates are clipped into ``[clip, 1 - clip]``.
        popularity: a known ``p[m]`` to use instead of estimating (e.g. to study an attacker
            with side information); ``None`` (default) estimates from website 1 only.
    """

    name = "asymmetric"
    fits_views = True

    def __init__(self, *, pseudo_count: float = 1.0, clip: float = 1e-6,
                 popularity: npt.ArrayLike | None = None) -> None:
        # checked here, not at the first fit: pseudo_count=-1 and clip=2 were ValueErrors deep
        # in the trials, and a given popularity of NaN, -1 or 2 was clipped into (0, 1)
        self.pseudo_count = number(pseudo_count, "pseudo_count", lo=0.0)
        self.clip = number(clip, "clip", lo=0.0, hi=0.5, lo_open=True, hi_open=True)
        self._given = None
        if popularity is not None:
            refuse_complex(popularity, "popularity")
            try:
                given = np.asarray(popularity, dtype=np.float64)
            except (TypeError, ValueError):
                raise refuse(f"popularity must be an array of probabilities, got "
                             f"{popularity!r:.60}", "popularity") from None
            if given.ndim != 1 or not (np.isfinite(given) & (given >= 0)
                                       & (given <= 1)).all():
                raise refuse("popularity must be a 1-d array of probabilities in [0, 1], one "
                             "per topic", "popularity")
            self._given = given
        self.popularity: npt.NDArray[np.float64] | None = None
        self.w_match: npt.NDArray[np.float64] | None = None
        self.w_mismatch: npt.NDArray[np.float64] | None = None
        self._mech: Mechanism | None = None
        self._n_answers = 0

    def fit(self, site1: npt.NDArray[np.integer], mechanism: Mechanism | None = None) -> None:
        mech = mechanism or Mechanism()
        if not mech.q_in > mech.q_out:
            raise InputError("the asymmetric attack needs p < 1: with p = 1 every answer is a "
                             "random topic, as likely outside the profile as in it (q_in = "
                             "q_out); use the hamming attack", field="p")
        m = mech.tax.size
        # one pass counts the answers and finds their range (a strided view is read in place)
        tally = TopicTally.of(integer_array(site1, "answers"), m)
        if tally.high >= m:
            raise InputError(f"the asymmetric attack models the Topics API: category "
                             f"{tally.high} is not a topic of taxonomy {mech.tax.version} "
                             f"({m} topics)", field="traces")
        if self._given is not None:
            if self._given.shape != (m,):
                raise InputError(f"popularity must have {m} entries", field="popularity")
            p = np.clip(self._given, self.clip, 1.0 - self.clip)
        else:
            tally.refuse_outside(m)
            p = popularity_from_counts(tally.counts, mech.q_in, mech.q_out,
                                       pseudo_count=self.pseudo_count, clip=self.clip)
        self.popularity = p
        self.w_match, self.w_mismatch = asymmetric_weights(p, mech.q_in, mech.q_out, mech.k)
        self._mech = mech
        self._n_answers = int(tally.counts.sum())

    def gains(self, queries: npt.NDArray[np.integer]) -> npt.NDArray[np.float64]:
        if self.w_match is None or self.w_mismatch is None:
            raise RuntimeError("fit the attack on website 1 first")
        q = np.asarray(queries)
        m = self.w_match.shape[0]
        if q.size and q.max() >= m:
            raise InputError(f"query category {int(q.max())} is not a topic ({m} topics)",
                             field="traces")
        delta = self.w_mismatch - self.w_match
        idx = np.where(q >= 0, q, 0)
        return np.where(q >= 0, delta[idx], 0.0)

    def weights_jsonl(self) -> str:
        """The fitted weights in the public reference pipeline's format: one JSON line per
        topic, ``{"token_id": taxonomy id, "match_weight": .., "mismatch_weight": ..}``."""
        if self.w_match is None or self.w_mismatch is None or self._mech is None:
            raise RuntimeError("fit the attack on website 1 first")
        ids = self._mech.tax.ids
        return "".join(
            dumps({"token_id": int(i), "match_weight": float(a), "mismatch_weight": float(b)})
            + "\n" for i, a, b in zip(ids, self.w_match, self.w_mismatch, strict=True))

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "pseudo_count": self.pseudo_count,
                               "clip": self.clip,
                               "popularity_source": "given" if self._given is not None
                               else "lemma10(site 1)"}
        if self.popularity is not None and self._mech is not None:
            assert self.w_match is not None and self.w_mismatch is not None
            delta = self.w_mismatch - self.w_match
            out.update({
                "answers_used": self._n_answers,
                "q_in": self._mech.q_in, "q_out": self._mech.q_out, "k": self._mech.k,
                "popularity_min": float(self.popularity.min()),
                "popularity_max": float(self.popularity.max()),
                "gain_min": float(delta.min()), "gain_max": float(delta.max()),
            })
        return out


register_attack("asymmetric", AsymmetricAttack)

__all__ = ["AsymmetricAttack", "asymmetric_weights"]
