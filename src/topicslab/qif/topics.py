"""Structured Topics API channels and their closed forms (never materialised).

Equation numbers refer to Alvim, Fernandes, McIver, Nunes, "The Privacy-Utility Trade-off in the
Topics API" (CCS 2024). With m = 629 topics and s = 5 there are C(629, 5) ~ 8e11 possible top-s
sets, so every quantity here follows from the structure of the reporting channel (eq 11)

    C_BN(+)_rDP[sigma, t] = p = (1-r)/s + r/m   if t in sigma,   q = r/m   otherwise,

whose columns contain only the two values p and q.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import Literal

from topicslab._checks import MAX_COUNT, choice, integer, is_real, number, value_shown
from topicslab.qif.errors import QIFError, QIFParameterError

#: Taxonomy sizes used in the paper (Sec. 5-6). "v2" is the largest v2 id (629); the v2
#: taxonomy actually has 469 topics; both are supported.
TAXONOMY_SIZES: dict[str, int] = {
    "citizen_lab": 31,
    "google_v1_seen": 169,
    "topics_v1": 349,
    "topics_v2_count": 469,
    "topics_v2_max_id": 629,
    "google_nl_v2": 1091,
    "iab_audience_1_1": 1679,
}

#: The Topics API's current parameters: top-5 sets, 5% random topics.
DEFAULT_S = 5
DEFAULT_R = 0.05
#: The most epochs of the exact multi-epoch capacities (App. C): they enumerate the integer
#: partitions of the epochs; 40 epochs take about a second, 60 more than half a minute, and
#: the count explodes beyond (1,000,000 never ends).
MAX_EPOCHS = 40
#: The largest taxonomy: three orders of magnitude past the largest the paper considers (IAB
#: audience, 1,679 topics). The App. C capacities count the m^k topic tuples of k epochs in
#: floating point: m <= 10^6 and k <= ``MAX_EPOCHS`` keep them below 10^240 (float64 ends
#: near 1.8e308; 10^8 topics over 40 epochs overflowed).
MAX_TOPICS = 10**6
#: The largest top-s set: the Topics API's is 5 and the paper varies s in 1..9. C(m, s) sets
#: (footnote 20) is an exact integer of the tables: at s <= 1,000 and m <= ``MAX_TOPICS`` it
#: has at most ~3,500 digits, within Python's 4,300-digit limit for printing an integer
#: (s = 10^8 never finished computing it).
MAX_SET_SIZE = 1000


def check_params(m: int, s: int, r: float) -> None:
    """Raise :class:`QIFParameterError` unless ``(m, s, r)`` is a valid ``ReportingChannel``
    (see there for the ranges and why)."""
    ReportingChannel(m, s, r)


def check_epochs(epochs: int | range | list[int]) -> list[int]:
    """Numbers of epochs of the multi-epoch capacities, each in 1..``MAX_EPOCHS``, at most
    ``MAX_EPOCHS`` of them (each is a computation of up to a second)."""
    # one number of epochs as any integer: a NumPy integer (np.int64(3), as arrays give
    # them) was "'numpy.int64' object is not iterable", and 2.5 or None the same TypeError
    given: object = epochs
    ks: list[object] = (list(given) if isinstance(given, Iterable) and not isinstance(
        given, str | bytes) and getattr(given, "ndim", None) != 0 else [given])
    if not ks:
        raise QIFParameterError("no number of epochs given", field="epochs")
    if len(ks) > MAX_EPOCHS:
        raise QIFParameterError(f"at most {MAX_EPOCHS} numbers of epochs, got {len(ks)}",
                                field="epochs")
    return [_epoch_count(k, "epochs") for k in ks]


def _epoch_count(k: object, field: str) -> int:
    """One number of epochs ``k`` of the argument ``field``, in 1..``MAX_EPOCHS``."""
    return integer(k, field, at_least=1, at_most=MAX_EPOCHS, error=QIFParameterError,
                   why="the exact capacities enumerate partitions of the epochs and take "
                       f"hours beyond {MAX_EPOCHS}")


def p_q(m: int, s: int, r: float) -> tuple[float, float]:
    """The two values of the reporting channel (eq 11): ``p = (1-r)/s + r/m``, ``q = r/m``."""
    check_params(m, s, r)
    return (1.0 - r) / s + r / m, r / m


#: The counting channel (eq 25) uses the same p and q.
counting_pq = p_q


def counting_a_q(m: int, s: int, r: float) -> tuple[float, float]:
    """``A = p/q`` and ``q`` of Sec. 4.2.1 / footnote 21 (``A = e^epsilon``)."""
    p, q = p_q(m, s, r)
    return (math.inf if q == 0 else p / q), q


def generalisation_capacity(m: int, s: int) -> int:
    """Bayes capacity of ``C_G`` (eq 16): the number of possible top-s sets, C(m, s)."""
    check_params(m, s, 0.0)
    return math.comb(m, s)


def bounded_noise_capacity(m: int, s: int) -> float:
    """Bayes capacity of ``C_BN`` (eq 18): ``m / s``."""
    check_params(m, s, 0.0)
    return m / s


def reporting_bayes_capacity(m: int, s: int, r: float) -> float:
    """Multiplicative Bayes capacity of ``C_BN(+)_rDP`` and of ``C_T`` (eq 21).

    ``sum_t max_sigma C[sigma, t] = m p = r + m (1-r) / s``: every topic is in some set.
    """
    p, _ = p_q(m, s, r)
    return r + m * (1.0 - r) / s if p else 0.0


def reporting_max_case_capacity(m: int, s: int, r: float) -> float:
    """Max-case capacity ``e^epsilon = p/q = 1 + m (1-r) / (r s)`` (eq 23; eq 9).

    ``r = 0`` gives infinity (a column mixes zeros and non-zeros); with ``m = s`` there is a
    single set and nothing can be distinguished.
    """
    check_params(m, s, r)
    if m == s:
        return 1.0
    if r == 0:
        return math.inf
    return 1.0 + m * (1.0 - r) / (r * s)


def reporting_epsilon(m: int, s: int, r: float) -> float:
    """Discrete-metric DP parameter ``epsilon = ln(1 + m (1-r) / (r s))`` (eq 22)."""
    return math.log(reporting_max_case_capacity(m, s, r))


def r_for_capacity(target: float, m: int, s: int, decimals: int = 2) -> float:
    """The r for which ``r + m (1-r)/s = target`` (eq 21), rounded *down* (Table 7).

    Rounding down keeps the capacity at or above the target, as in Table 7 where every row's
    r is chosen to match the v1 capacity 66.36.
    """
    check_params(m, s, 0.0)
    if m == s:
        raise QIFError("with m = s the capacity is 1 for every r")
    lo, hi = 1.0, m / s  # capacity at r = 1 and at r = 0
    # (True was a capacity of 1, text "'<=' not supported", Decimal('NaN') decimal's
    # InvalidOperation, and the refusal of NaN or 0 named no argument)
    target = number(target, "target", lo=lo, hi=hi, error=QIFParameterError,
                    why=f"the capacities of m={m}, s={s} lie between r = 1 and r = 0")
    # (decimals = 2.5 floored to multiples of 1/316.2, 400 overflowed a float)
    decimals = integer(decimals, "decimals", at_least=0, at_most=12, error=QIFParameterError,
                       why="r is a probability read to 12 decimals")
    exact = (m / s - target) / (m / s - 1.0)
    scale = 10**decimals
    # Round the product first so a value like 0.47 * 100 = 46.99999... floors to 47.
    return math.floor(round(exact * scale, 9)) / scale


def multiplicity_partitions(k: int) -> Iterator[tuple[int, ...]]:
    """Integer partitions of ``k`` in non-increasing order (the multiplicities of a k-tuple)."""
    def rec(rest: int, largest: int) -> Iterator[tuple[int, ...]]:
        if rest == 0:
            yield ()
            return
        for part in range(min(rest, largest), 0, -1):
            for tail in rec(rest - part, part):
                yield (part, *tail)
    # (k = 2.5 was a TypeError from range)
    k = integer(k, "k", at_least=0, error=QIFParameterError)
    yield from rec(k, k)


#: the longest tuple ``tuples_with_partition`` counts (k! is exact: 10^4! takes milliseconds)
_MAX_TUPLE_LENGTH = 10_000


def tuples_with_partition(m: int, lam: tuple[int, ...]) -> int:
    """How many tuples in ``[m]^k`` have value multiplicities ``lam`` (a partition of k).

    ``m!/(m-d)! / prod_j mult_j!`` ways to pick the d distinct values (parts of equal size are
    interchangeable) times the multinomial ``k! / prod_i lam_i!`` arrangements.
    """
    # (a negative part was factorial's ValueError, m = 5.5 perm's TypeError, a part of 10**9
    # a factorial that ran for hours)
    m = integer(m, "m", at_least=0, error=QIFParameterError)
    if isinstance(lam, str | bytes) or not isinstance(lam, tuple | list):
        raise QIFParameterError(f"lam must be a tuple of positive integers, got "
                                f"{value_shown(lam, 40)}",
                                field="lam")
    lam = tuple(integer(part, "lam", at_least=1, error=QIFParameterError) for part in lam)
    k, d = sum(lam), len(lam)
    if k > _MAX_TUPLE_LENGTH:
        raise QIFParameterError(f"lam must be a partition of k <= {_MAX_TUPLE_LENGTH:,}, got "
                                f"k = {k:,}: its factorials take hours past that", field="lam")
    values = math.perm(m, d)  # 0 when d > m: no such tuple
    for size in set(lam):
        values //= math.factorial(lam.count(size))
    arrangements = math.factorial(k)
    for part in lam:
        arrangements //= math.factorial(part)
    return values * arrangements


Mode = Literal["parallel", "kronecker"]


def multi_epoch_capacity(m: int, s: int, r: float, k: int, mode: Mode = "parallel") -> float:
    """Bayes capacity of k epochs of the reporting channel (App. C).

    ``parallel`` (eq 30, the same top-s set every epoch):
    ``sum_{t in [m]^k} max_sigma prod_i C[sigma, t_i] = sum_t p^{A(t)} q^{k-A(t)}``, where
    ``A(t)`` (the most epochs one s-set can cover) is the sum of the s largest multiplicities
    of ``t``; grouping tuples by their multiplicity partition gives a sum over partitions of k.
    For ``k <= s`` every tuple is covered, so it equals ``(r + m(1-r)/s)^k``.

    ``kronecker`` (eq 24, independent sets per epoch): ``(r + m(1-r)/s)^k`` by Theorem 2.
    """
    check_params(m, s, r)
    # (a NumPy integer was "not iterable"; [3] was taken as 3 and [1, 2] "too many values
    # to unpack"; the field named was 'epochs')
    k = _epoch_count(k, "k")
    # (an unknown mode was answered as kronecker when k <= s, without a word)
    choice(mode, "mode", ("parallel", "kronecker"), error=QIFParameterError)
    one = reporting_bayes_capacity(m, s, r)
    if mode == "kronecker" or k <= s:
        return one**k
    p, q = p_q(m, s, r)
    terms = []
    for lam in multiplicity_partitions(k):
        covered = sum(lam[:s])
        count = tuples_with_partition(m, lam)
        if count:
            # math.pow keeps huge counts (ints) times tiny powers finite via floats.
            terms.append(float(count) * p**covered * q ** (k - covered))
    return math.fsum(terms)


def multi_epoch_max_case_capacity(m: int, s: int, r: float, k: int) -> float:
    """Max-case capacity of k epochs: ``(1 + m(1-r)/(r s))^k`` in both readings.

    Parallel: the worst column repeats one topic k times, against a set that contains it and
    one that does not; Kronecker: max-case capacity is multiplicative.
    """
    k = _epoch_count(k, "k")
    one = reporting_max_case_capacity(m, s, r)
    return one**k


def p_correct(n_users: int, s: int, r: float) -> float:
    """Probability of counting a topic's occurrences correctly among N users (Fig. 5, eq 27).

    The N-fold Kronecker power of the counting channel (eq 25) under the uniform prior on
    membership has posterior Bayes vulnerability ``((p + 1 - q)/2)^N`` by Corollary 3; eq 27 as
    printed omits the factor ``2^-N``. ``p - q = (1-r)/s``, so m drops out.
    """
    # (1.5 users gave a probability of its own; a negative count was refused, NaN was not)
    n_users = integer(n_users, "n_users", at_least=0, at_most=MAX_COUNT,
                      error=QIFParameterError, why="the population size")
    check_params(s, s, r)
    return ((1.0 + (1.0 - r) / s) / 2.0) ** n_users


def iba_theorem7_bounds(r: float, prior_iba: float) -> tuple[float, float]:
    """Theorem 7: ``(1-r) <= V_IBA[pi > C_BN(+)_rDP] <= (1-r) + r V_IBA(pi)``.

    The lower bound is stated for ``r < 0.5`` (it comes from Lemma 6 with Thm 5).
    """
    # (a prior vulnerability of 2 gave an upper bound of 1.05, r = NaN NaN bounds)
    r = number(r, "r", lo=0.0, hi=1.0, error=QIFParameterError,
               why="r is the probability of a random topic")
    prior_iba = number(prior_iba, "prior_iba", lo=0.0, error=QIFParameterError)
    if prior_iba > 1.0 + 1e-9:  # (a sum of a prior's weights may round past 1)
        raise QIFParameterError(f"prior_iba must be in [0, 1], got {prior_iba:g}: a "
                                "vulnerability is a probability", field="prior_iba")
    prior_iba = min(prior_iba, 1.0)
    return 1.0 - r, (1.0 - r) + r * prior_iba


def iba_tight_lower_bound(m: int, s: float, r: float) -> float:
    """A tighter lower bound ``(1-r) + r s/m`` on the posterior IBA vulnerability.

    Guessing the observed topic itself gains ``sum_sigma pi_sigma sum_{t in sigma} p = s p``.
    With sets of varying size, pass the mean set size as ``s``. It is attained by the uniform
    prior on all C(m, s) sets.
    """
    # (m = NaN or inf gave a bound of 1 - r, r = True one of 0 and a Decimal decimal's
    # InvalidOperation; "need m >= 1 and r in [0, 1]" named neither)
    m = integer(m, "m", at_least=1, at_most=MAX_TOPICS, error=QIFParameterError,
                why="the taxonomy size")
    r = number(r, "r", lo=0.0, hi=1.0, error=QIFParameterError,
               why="r is the probability of a random topic")
    # (s = NaN gave NaN, s > m a bound above 1)
    s = number(s, "s", lo=0.0, hi=m, lo_open=True, error=QIFParameterError,
               why="s is the (mean) number of topics in a set of the m")
    return (1.0 - r) + r * s / m


def iba_uniform_prior(m: int, s: int) -> float:
    """Prior IBA vulnerability (Thm 4) under the uniform prior on all C(m, s) sets: ``s/m``."""
    check_params(m, s, 0.0)
    return s / m


def round_half_up(x: float, decimals: int) -> float:
    """Round as the paper prints (66.415 -> 66.42), immune to binary representation."""
    # (decimals = 400 was decimal's InvalidOperation, True one decimal)
    decimals = integer(decimals, "decimals", at_least=-12, at_most=12, error=QIFParameterError,
                       why="x is read to 12 decimals")
    # (True was rounded as 1, text was "must be real number, not str", naming no argument)
    if not is_real(x):
        raise QIFParameterError(f"x must be a number, got {value_shown(x, 40)}", field="x")
    try:
        v = float(x)  # (a Fraction was "unsupported format string passed to
        # Fraction.__format__")
    except OverflowError:
        raise QIFParameterError("x must be a number within a float's range, got an integer "
                                "past it", field="x") from None
    if not math.isfinite(v):
        return v
    # the digits of every float (1e308 has 309 before the point: decimal's 28-digit context
    # was "InvalidOperation" quantizing it)
    with localcontext() as ctx:
        ctx.prec = 400
        d = Decimal(f"{v:.12f}").quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)
    return float(d)


@dataclass(frozen=True)
class ReportingChannel:
    """The structured channel ``C_BN(+)_rDP`` on all C(m, s) top-s sets (eq 11), and the one
    check of the Topics API's parameters in QIF (``check_params`` builds one).

    Rows are never materialised; use :func:`topicslab.qif.channels.reporting_channel` for an
    explicit matrix when m and s are small. A bad parameter is a ``QIFParameterError``
    naming the field (``m``, ``s``, ``r``: the ``qif`` options of the same names).

    Attributes:
        m: taxonomy size, in s..``MAX_TOPICS``: a set holds s distinct topics of the m, and
            the multi-epoch capacities overflow float64 past 10^6 topics.
        s: top-s set size (5 in the API), in 1..``MAX_SET_SIZE``: at least one topic; C(m, s)
            must stay an integer the tables can print.
        r: probability of a random topic, in [0, 1] (a probability; the API's 0.05).
    """

    m: int
    s: int = DEFAULT_S
    r: float = DEFAULT_R

    def __post_init__(self) -> None:
        err = QIFParameterError
        s = integer(self.s, "s", at_least=1, at_most=MAX_SET_SIZE, error=err,
                    why="a set holds at least one topic, and C(m, s) must stay printable")
        m = integer(self.m, "m", at_least=s, at_most=MAX_TOPICS, error=err,
                    why=f"the taxonomy must have at least s = {s} topics, and the "
                        "capacities overflow float64 past 10^6")
        r = number(self.r, "r", lo=0.0, hi=1.0, error=err,
                   why="r is the probability of a random topic")
        object.__setattr__(self, "m", m)
        object.__setattr__(self, "s", s)
        object.__setattr__(self, "r", r)

    @property
    def p(self) -> float:
        return p_q(self.m, self.s, self.r)[0]

    @property
    def q(self) -> float:
        return p_q(self.m, self.s, self.r)[1]

    @property
    def n_sets(self) -> int:
        """Number of rows, C(m, s) (footnote 20)."""
        return math.comb(self.m, self.s)

    def entry(self, sigma: frozenset[int] | set[int] | tuple[int, ...], t: int) -> float:
        """``C[sigma, t]`` for one set and one topic."""
        return self.p if t in sigma else self.q

    def bayes_capacity(self, epochs: int = 1, mode: Mode = "parallel") -> float:
        """Eq 21 (one epoch) or App. C (several)."""
        return multi_epoch_capacity(self.m, self.s, self.r, epochs, mode)

    def max_case_capacity(self, epochs: int = 1) -> float:
        """Eq 23 (one epoch) raised to the number of epochs."""
        return multi_epoch_max_case_capacity(self.m, self.s, self.r, epochs)

    def epsilon(self, epochs: int = 1) -> float:
        """``k`` epochs compose to ``k * epsilon`` (eq 22)."""
        return math.log(self.max_case_capacity(epochs))

    def posterior_bayes_uniform(self, epochs: int = 1) -> float:
        """Posterior Bayes vulnerability under the uniform prior on sets: capacity / C(m, s)."""
        return self.bayes_capacity(epochs) / self.n_sets

    def iba_uniform(self) -> tuple[float, float]:
        """(prior, posterior) IBA vulnerability under the uniform prior on all sets.

        By symmetry guessing the observed topic is optimal: posterior ``s p = (1-r) + r s/m``.
        """
        return iba_uniform_prior(self.m, self.s), self.s * self.p


def parameter_row(m: int, s: int, r: float, epochs: int = 1) -> dict[str, float | int]:
    """One row of the parameter-only table (Tables 5-7 and App. C)."""
    ch = ReportingChannel(m, s, r)
    epochs = _epoch_count(epochs, "epochs")  # (np.int64(3): "'numpy.int64' ... not iterable")
    a, q = counting_a_q(m, s, r)
    return {
        "m": m,
        "s": s,
        "r": r,
        "epochs": epochs,
        "n_sets": ch.n_sets,
        # r = 0 in the App. C closed form: tuples coverable by one set, over s^k.
        "bounded_noise_capacity": multi_epoch_capacity(m, s, 0.0, epochs),
        "bayes_capacity": ch.bayes_capacity(epochs, "parallel"),
        "bayes_capacity_kronecker": ch.bayes_capacity(epochs, "kronecker"),
        "max_case_capacity": ch.max_case_capacity(epochs),
        "epsilon": ch.epsilon(epochs),
        "p": ch.p,
        "q": q,
        "A": a,
        "iba_posterior_uniform": ch.iba_uniform()[1],
    }


def parameter_table(m: int, s: int, r: float, epochs: range | list[int] | int = 1,
                    ) -> list[dict[str, float | int]]:
    """Rows of :func:`parameter_row` for each number of epochs (``check_epochs``)."""
    check_params(m, s, r)
    ks = check_epochs(epochs)
    return [parameter_row(m, s, r, k) for k in ks]


__all__ = [
    "DEFAULT_R",
    "DEFAULT_S",
    "MAX_EPOCHS",
    "MAX_SET_SIZE",
    "MAX_TOPICS",
    "TAXONOMY_SIZES",
    "ReportingChannel",
    "bounded_noise_capacity",
    "check_epochs",
    "check_params",
    "counting_a_q",
    "counting_pq",
    "generalisation_capacity",
    "iba_theorem7_bounds",
    "iba_tight_lower_bound",
    "iba_uniform_prior",
    "multi_epoch_capacity",
    "multi_epoch_max_case_capacity",
    "multiplicity_partitions",
    "p_correct",
    "p_q",
    "parameter_row",
    "parameter_table",
    "r_for_capacity",
    "reporting_bayes_capacity",
    "reporting_epsilon",
    "reporting_max_case_capacity",
    "round_half_up",
    "tuples_with_partition",
]
