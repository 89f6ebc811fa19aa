"""The Topics API mechanism, vectorised over users (Dick et al. §3, Algorithm 1).

Public names:
    Mechanism                    k (5), p (0.05), taxonomy (v2), lookback (1)
    top_k(counts, ...)           weekly profiles from dense visit counts [..., m]
    top_k_sparse(indptr, ...)    the same from CSR counts (the fast path)
    answers(sets, sites, ...)    per-(site, user, epoch) answers, keyed-hash deterministic
    observe(sets, sites, ...)    site traces for r call-weeks (lookback-aware)
    answer_probability(...)      (1-p)/k + p/m in the profile, p/m outside
    EMPTY                        -1: an empty slot / a withheld answer
"""

from topicslab.api.answers import Mechanism, answer_probability, answers, observe
from topicslab.api.topk import EMPTY, top_k, top_k_sparse

__all__ = [
    "EMPTY",
    "Mechanism",
    "answer_probability",
    "answers",
    "observe",
    "top_k",
    "top_k_sparse",
]
