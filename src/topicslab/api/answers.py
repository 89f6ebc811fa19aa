"""Per-site answers of the Topics API (Dick et al. §3, Algorithm 1).

When site ``w`` calls the API for user ``u`` in week ``i``: with probability ``p`` the answer is
a uniformly random topic of the taxonomy, otherwise a uniformly random element of the week's
profile. The answer is a pure function of ``(seed, user, site, week)`` (keyed hash), so it is
fixed for the week, independent across sites, and any slice can be regenerated on its own.

Two details the papers omit are available as options, off by default as in the papers:

* ``lookback``: Chrome returns the answers of the last three epochs. Observing ``r`` call-weeks
  then reveals ``r + lookback - 1`` epochs; ``observe`` returns exactly those epoch answers.
* caller filtering: Chrome withholds a profile topic the caller has not observed for the user.
  Pass ``witnessed`` (a probability, or an explicit mask) to model it; withheld answers are
  ``EMPTY`` (-1). Random (probability ``p``) answers are not filtered. Default: no filtering
  (the pessimistic assumption of both papers).

Profiles with fewer than k topics (e.g. raw samples of the type-mixture model) are padded with
distinct uniform topics keyed by ``(seed, user, week)`` only, as the browser pads once per week,
so every site sees the same padded profile.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from numba import njit, prange

from topicslab._checks import MAX_COUNT, choice, integer, integer_array, number, refuse, value_shown
from topicslab.api.hashing import (
    STREAM_ANSWER,
    STREAM_FILTER,
    STREAM_PAD,
    below,
    derive_key,
    hash3,
    next_word,
    probability_threshold,
)
from topicslab.api.topk import EMPTY, pad_row
from topicslab.taxonomy import VERSIONS, Taxonomy, resolve

_S11 = np.uint64(11)


@dataclass(frozen=True)
class Mechanism:
    """Parameters of the Topics API mechanism (defaults follow the papers), checked once.

    The one place the mechanism's parameters are checked: every command that simulates or
    attacks the API (``observe``, ``reid``, ``disclosure``) builds one, every engine takes
    one. A bad value is a ``ParameterError`` naming the field (``k``, ``p``, ``taxonomy``,
    ``lookback``: the commands' options of the same names). Checks that need the data (a
    lookback longer than the weeks observed, a k other than the data's) belong to the
    engines that see the data.

    Attributes:
        k: profile size (top-k topics per week; the API's top 5), in 1..m: a week's profile
            holds distinct topics of the taxonomy's m.
        p: probability that an answer is a uniformly random topic (Algorithm 1; 0.05 in
            Chrome), in [0, 1]: a probability. (p = 0 is allowed: the noiseless API.)
        taxonomy: taxonomy version (``v1``, ``v2``) or object.
        lookback: epochs returned per call (1 as in the papers; 3 in Chrome), at least 1: a
            call answers from at least the current epoch.
    """

    k: int = 5
    p: float = 0.05
    taxonomy: Taxonomy | str = "v2"
    lookback: int = 1

    def __post_init__(self) -> None:
        if isinstance(self.taxonomy, str):
            choice(self.taxonomy, "taxonomy", VERSIONS)
        elif not isinstance(self.taxonomy, Taxonomy):
            raise refuse(f"taxonomy must be a version ({', '.join(VERSIONS)}) or a Taxonomy, "
                         f"got {value_shown(self.taxonomy)}", "taxonomy")
        m = self.tax.size
        object.__setattr__(self, "k", integer(
            self.k, "k", at_least=1, at_most=m,
            why=f"a week's profile holds distinct topics of the taxonomy's {m}"))
        object.__setattr__(self, "p", number(
            self.p, "p", lo=0.0, hi=1.0, why="p is the probability of a random topic"))
        object.__setattr__(self, "lookback", integer(
            self.lookback, "lookback", at_least=1, at_most=MAX_COUNT,
            why="a call answers from at least the current epoch"))

    @property
    def tax(self) -> Taxonomy:
        return resolve(self.taxonomy)

    @property
    def q_in(self) -> float:
        """P(answer = o) for a topic o in the profile: (1-p)/k + p/m."""
        return (1.0 - self.p) / self.k + self.p / self.tax.size

    @property
    def q_out(self) -> float:
        """P(answer = o) for a topic o outside the profile: p/m."""
        return self.p / self.tax.size


#: users per parallel work item of ``_answers_kernel`` (its scratch rows are per item)
_ANSWER_BLOCK = 1024


@njit(cache=True, parallel=True)
def _answers_kernel(sets, user_keys, site_keys, week_keys, key, pad_key, thresh, m, k,
                    filter_key, filter_thresh, use_filter, mask, use_mask, out, repeat):
    n_users = sets.shape[0]
    n_weeks = sets.shape[1]
    n_sites = site_keys.shape[0]
    n_blocks = (n_users + _ANSWER_BLOCK - 1) // _ANSWER_BLOCK
    for blk in prange(n_blocks):
        # a block's scratch rows, allocated once: zeroing ``seen`` for every user was a good
        # part of the kernel (m words a user)
        padded = np.empty(k, dtype=np.int64)
        seen = np.zeros(m, dtype=np.int64)  # the last user-week (+1) each topic was in a profile
        for u in range(blk * _ANSWER_BLOCK, min(n_users, (blk + 1) * _ANSWER_BLOCK)):
            uk = user_keys[u]
            for w in range(n_weeks):
                stamp = u * n_weeks + w + 1
                filled = 0
                for s in range(k):
                    t = sets[u, w, s]
                    if t >= 0:
                        if seen[t] == stamp and repeat[u] < 0:  # a topic twice in a week
                            repeat[u] = w
                        seen[t] = stamp
                        padded[filled] = t
                        filled += 1
                if filled < k:
                    pad_row(padded, filled, k, m, pad_key, hash3(pad_key, uk, week_keys[w],
                                                                  np.uint64(1)))
                for j in range(n_sites):
                    h = hash3(key, uk, site_keys[j], week_keys[w])
                    h2 = next_word(h)
                    if (h >> _S11) < thresh:
                        out[j, u, w] = below(h2, m)
                        continue
                    slot = below(h2, k)
                    topic = padded[slot]
                    if use_mask and not mask[j, u, w, slot]:
                        out[j, u, w] = -1
                    elif use_filter and (hash3(filter_key, uk, site_keys[j], np.uint64(topic))
                                         >> _S11) >= filter_thresh:
                        out[j, u, w] = -1
                    else:
                        out[j, u, w] = topic


def _mechanism(mechanism: object, sets: Any = None) -> Mechanism:
    """``mechanism``, or the default one, of ``sets``' k and taxonomy when given (a dict, a
    number or text was an AttributeError deep inside; 0 or "" was taken for the default)."""
    if mechanism is not None and not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism takes a Mechanism, got {type(mechanism).__name__}")
    if mechanism is not None:
        return mechanism
    return Mechanism() if sets is None else Mechanism(k=sets.k, taxonomy=sets.taxonomy)


def _not_topic_sets(sets: object) -> None:
    """Refuse a ``TopicSets`` given as ``sets``: the engines take its array and the
    mechanism its taxonomy and k, which the caller states (``mechanism=``). A TypeError, as
    for the other arguments of a wrong type here (``mechanism``), with a one-line message."""
    if hasattr(sets, "sets") and hasattr(sets, "taxonomy") and hasattr(sets, "k"):
        raise TypeError(f"sets takes the array of topic sets: pass {type(sets).__name__}.sets, "
                        f"with mechanism=Mechanism(k={sets.k}, taxonomy=its .taxonomy)")


def answers(
    sets: npt.ArrayLike,
    sites: int | npt.ArrayLike = 2,
    *,
    seed: int = 0,
    mechanism: Mechanism | None = None,
    user_ids: npt.ArrayLike | None = None,
    first_week: int = 0,
    witnessed: float | npt.ArrayLike | None = None,
) -> npt.NDArray[np.int16]:
    """The answer each site receives for each user and epoch.

    Args:
        sets: ``int16[n_users, n_weeks, k]`` profiles (dense indices, ``-1`` = empty slot;
            short profiles are padded as the browser would).
        sites: number of sites (ids ``0..sites-1``) or an array of site ids.
        seed: the browser-side secret; answers are a pure function of it and the ids.
        mechanism: ``k``, ``p`` and taxonomy (defaults: 5, 0.05, v2).
        user_ids: global user ids (default ``0..n_users-1``): the hash key of each row, so a
            slice of users gets the answers it would get inside the full population.
        first_week: absolute index of ``sets[:, 0]`` (for slices of weeks).
        witnessed: caller filtering. ``None``: no filtering. A float ``q``: each (site, user,
            topic) is witnessed by the caller with probability ``q`` (fixed across weeks).
            A boolean ``[n_sites, n_users, n_weeks, k]`` mask: explicit per-slot witnessing
            (slots indexed after padding).

    Returns:
        ``int16[n_sites, n_users, n_weeks]`` dense topic indices (``-1`` = withheld).
    """
    mech = _mechanism(mechanism)
    tax = mech.tax
    _not_topic_sets(sets)  # (a TopicSets was "sets must be an integer array, got dtype object")
    # a fraction was truncated to a topic, a text witnessed probability ("0.5") read as a
    # number, a negative or fractional site id wrapped or truncated, an empty site array gave
    # no answer at all and a bad first_week was an OverflowError: each is refused by name
    arr = integer_array(sets, "sets")
    if arr.ndim != 3 or arr.shape[2] != mech.k:
        raise refuse(f"sets must have shape [n_users, n_weeks, {mech.k}], got {arr.shape}",
                     "sets")
    if arr.size and (arr.max() >= tax.size or arr.min() < EMPTY):
        raise refuse(f"sets must hold dense topic indices in 0..{tax.size - 1} or -1", "sets")
    arr = np.ascontiguousarray(arr if np.issubdtype(arr.dtype, np.integer)
                               else arr.astype(np.int16))
    n_users, n_weeks, k = arr.shape
    # sites="2" was read as 2 and sites=0 gave no trace at all, silently
    if np.isscalar(sites):
        n_sites = integer(sites, "sites", at_least=1)
        site_ids = None  # (drawn after the memory check: sites=10**12 was a MemoryError)
    else:
        site_ids = integer_array(sites, "sites")
        if site_ids.ndim != 1 or site_ids.size == 0 or int(site_ids.min()) < 0:
            raise refuse("sites must be a number of sites or a non-empty list of non-negative "
                         f"site ids, got an array of shape {site_ids.shape}"
                         + (f" holding {int(site_ids.min())}" if site_ids.size else ""),
                         "sites")
        n_sites = int(site_ids.size)
        twice = np.sort(site_ids)
        twice = twice[1:][twice[1:] == twice[:-1]]
        if twice.size:  # (as user_ids: one site twice got the same answers, not two sites')
            raise refuse(f"site id {int(twice[0])} appears more than once in sites; give "
                         "each site once", "sites")
    from topicslab._resources import require_memory  # (sites=10**9 was a MemoryError)

    # the site ids (8 bytes) and the answers (int16) of every site and user
    require_memory(8.0 * n_sites + 2.0 * n_sites * n_users * n_weeks,
                   f"the answers of {n_sites:,} sites x {n_users:,} users", field="sites")
    site_keys = (np.arange(n_sites, dtype=np.uint64) if site_ids is None
                 else np.ascontiguousarray(site_ids, dtype=np.uint64))
    user_keys = (np.arange(n_users, dtype=np.uint64) if user_ids is None
                 else np.ascontiguousarray(integer_array(user_ids, "user_ids")
                                           ).astype(np.uint64))
    if user_keys.shape != (n_users,):
        raise refuse("user_ids must have one entry per user", "user_ids")
    if user_ids is not None and n_users > 1 and not (user_keys[1:] > user_keys[:-1]).all():
        # two rows of one id got the same answers at every site: one user, not two (ids
        # in increasing order, as a population's are, have none: 0.3 s of sorting 10M ids)
        seen = np.sort(user_keys)
        twice = seen[1:][seen[1:] == seen[:-1]]
        if twice.size:
            raise refuse(f"user id {int(twice[0].astype(np.int64))} appears more than once in "
                         "user_ids; give each user once", "user_ids")
    first_week = integer(first_week, "first_week", at_least=0, at_most=MAX_COUNT)
    week_keys = np.arange(first_week, first_week + n_weeks, dtype=np.uint64)
    use_filter, use_mask = False, False
    filter_thresh = np.uint64(0)
    mask = np.ones((1, 1, 1, 1), dtype=np.bool_)
    if witnessed is not None:
        if np.isscalar(witnessed):
            use_filter = True
            filter_thresh = probability_threshold(number(
                witnessed, "witnessed", lo=0.0, hi=1.0,
                why="a probability that the caller witnessed a topic"))
        else:
            given = np.asarray(witnessed)
            if given.dtype != np.bool_:  # (a mask of 0.5s was cast to True: all witnessed)
                raise refuse("witnessed must be a probability or a boolean mask [n_sites, "
                             f"n_users, n_weeks, k], got an array of dtype {given.dtype}",
                             "witnessed")
            mask = np.ascontiguousarray(given)
            if mask.shape != (len(site_keys), n_users, n_weeks, k):
                raise refuse("witnessed mask must have shape [n_sites, n_users, n_weeks, k], "
                             f"got {mask.shape}", "witnessed")
            use_mask = True
    out = np.empty((len(site_keys), n_users, n_weeks), dtype=np.int16)
    repeat = np.full(n_users, -1, dtype=np.int64)
    _answers_kernel(arr, user_keys, site_keys, week_keys, derive_key(seed, STREAM_ANSWER),
                    derive_key(seed, STREAM_PAD), probability_threshold(mech.p), tax.size, k,
                    derive_key(seed, STREAM_FILTER), filter_thresh, use_filter, mask, use_mask,
                    out, repeat)
    if (repeat >= 0).any():  # (answered as if the topic filled two slots: twice as likely)
        u = int(np.argmax(repeat >= 0))
        raise refuse(f"sets must hold distinct topics in a week: user {u} (index) holds a "
                     f"topic twice in week {int(repeat[u])}", "sets")
    return out


def observe(
    sets: npt.ArrayLike,
    sites: int | npt.ArrayLike = 2,
    *,
    weeks: int | None = None,
    seed: int = 0,
    mechanism: Mechanism | None = None,
    user_ids: npt.ArrayLike | None = None,
    witnessed: float | npt.ArrayLike | None = None,
) -> npt.NDArray[np.int16]:
    """Site traces for ``weeks`` call-weeks ending at the last week of ``sets``.

    With ``mechanism.lookback = L`` a caller observing ``r`` call-weeks sees the answers of
    ``r + L - 1`` epochs (the earlier ones from the API's cache), so the trace has that many
    columns and ``sets`` must hold at least that many weeks.

    Returns ``int16[n_sites, n_users, r + L - 1]``.
    """
    mech = _mechanism(mechanism)
    _not_topic_sets(sets)  # (a TopicSets was "sets have 0 weeks", then a bare TypeError)
    arr = np.asarray(sets)
    if arr.ndim != 3 or not np.issubdtype(arr.dtype, np.integer):
        raise refuse(f"sets must be an integer array [users, weeks, k], got {arr.dtype} of "
                     f"shape {arr.shape}", "sets")
    n_weeks = arr.shape[1]
    if weeks is None and n_weeks < mech.lookback:  # ("observing 0 call-week(s) with lookback
        # 4 needs 3 weeks of profiles; sets have 3": the count it blamed was its own)
        raise refuse(f"a lookback of {mech.lookback} epochs needs at least {mech.lookback} "
                     f"weeks of profiles for one call-week; sets have {n_weeks}", "weeks")
    # weeks=True was one week, and 2.5 or "2" a TypeError
    r = (n_weeks - mech.lookback + 1 if weeks is None
         else integer(weeks, "weeks", at_least=1, at_most=MAX_COUNT))
    need = r + mech.lookback - 1
    if r < 1 or need > n_weeks:
        raise refuse(f"observing {r} call-week(s) with lookback {mech.lookback} needs {need} "
                     f"weeks of profiles; sets have {n_weeks}", "weeks")
    first = n_weeks - need
    return answers(arr[:, first:], sites, seed=seed, mechanism=mech, user_ids=user_ids,
                   first_week=first, witnessed=witnessed)


def answer_probability(in_profile: bool, mechanism: Mechanism | None = None) -> float:
    """P(answer = o | o in profile) or P(answer = o | o not in profile) (Dick et al. §3)."""
    # a string ("no") was read as True, and a non-Mechanism failed on .q_in
    if not isinstance(in_profile, (bool, np.bool_)):
        raise TypeError(f"in_profile must be True or False, got {in_profile!r}")
    if mechanism is not None and not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism takes a Mechanism, got {type(mechanism).__name__}")
    mech = mechanism or Mechanism()
    return mech.q_in if in_profile else mech.q_out
