"""The published statistics of the real release that the reference population is calibrated to.

Dick et al. §4.2 publishes the top 10 q_single, top 10 q_within and top 10 q_across values of
the DP release over 100M+ Chrome users (4 weeks, 2024-12-16..2025-01-12), plus the derived
week-to-week persistence q_across(o, o) / q_single(o) of the five most common topics.
Tolerances are the calibration requirements of the reference population (relative errors).
"""

from __future__ import annotations

from dataclasses import dataclass

from topicslab.taxonomy import Taxonomy, resolve

#: Relative tolerances by statistic kind.
TOLERANCE = {"single": 0.15, "within": 0.25, "across": 0.25, "persistence": 0.15}

_NEWS = "/News"
_AE = "/Arts & Entertainment"
_SHOP = "/Shopping"
_SPORTS = "/Sports"
_CVG = "/Games/Computer & Video Games"
_IT = "/Internet & Telecom"
_TV = "/Arts & Entertainment/TV & Video"

_SINGLE = [
    (_NEWS, 34.60), (_AE, 24.52), (_SHOP, 23.34), (_SPORTS, 18.31), (_CVG, 17.70),
    (_IT, 12.97), ("/Computers & Electronics/Software", 11.82),
    ("/Computers & Electronics", 10.46), ("/Food & Drink/Cooking & Recipes", 9.72),
    (_TV, 8.02),
]
_WITHIN = [
    (_AE, _NEWS, 11.77), (_NEWS, _SPORTS, 8.58), (_AE, _IT, 6.74), (_IT, _NEWS, 5.27),
    (_AE, _CVG, 5.00), (_SPORTS, "/Sports/Soccer", 4.60), (_AE, _TV, 4.58),
    (_NEWS, _SHOP, 4.41), (_NEWS, _TV, 4.18), (_NEWS, "/News/Local News", 4.17),
]
_ACROSS = [
    (_NEWS, _NEWS, 22.01), (_AE, _AE, 12.27), (_SHOP, _SHOP, 12.05),
    (_SPORTS, _SPORTS, 11.66), (_CVG, _CVG, 10.84), (_NEWS, _AE, 10.16), (_AE, _NEWS, 10.11),
    (_SPORTS, _NEWS, 8.20), (_NEWS, _SPORTS, 7.97), (_NEWS, _SHOP, 5.86),
]
_PERSISTENT = [_NEWS, _AE, _SHOP, _SPORTS, _CVG]


@dataclass(frozen=True)
class Target:
    """One published value.

    Attributes:
        kind: ``"single"``, ``"within"``, ``"across"`` or ``"persistence"``.
        labels: topic label(s); one for single/persistence, two for pairs (across: week J-1,
            then week J).
        ids: taxonomy ids of the labels.
        value: the published value as a probability (persistence: the ratio).
        tolerance: allowed relative error.
    """

    kind: str
    labels: tuple[str, ...]
    ids: tuple[int, ...]
    value: float
    tolerance: float

    @property
    def name(self) -> str:
        sep = " -> " if self.kind == "across" else ", "
        short = sep.join(lab for lab in self.labels)
        return f"{self.kind}({short})"


#: why the targets take at least two weeks of sets
ACROSS_WHY = ("the across-week targets and persistence ratios compare consecutive weeks (one "
              "week measured them as 0)")


def published_targets(taxonomy: Taxonomy | str = "v2") -> list[Target]:
    """The 30 published values and 5 persistence ratios (Dick et al. §4.2), in a fixed order."""
    tax = resolve(taxonomy)
    if tax.version != "v2":  # (an UnknownTopicError of the first label v1 does not have)
        from topicslab.errors import ParameterError

        raise ParameterError(f"the published statistics are of taxonomy v2 topics, not "
                             f"{tax.version}: compare or calibrate v2 populations",
                             field="taxonomy")

    def t(kind: str, labels: tuple[str, ...], value: float) -> Target:
        return Target(kind, labels, tuple(tax.find(lab) for lab in labels), value,
                      TOLERANCE[kind])

    out = [t("single", (lab,), v / 100) for lab, v in _SINGLE]
    out += [t("within", (a, b), v / 100) for a, b, v in _WITHIN]
    out += [t("across", (a, b), v / 100) for a, b, v in _ACROSS]
    single = dict(_SINGLE)
    across = {(a, b): v for a, b, v in _ACROSS}
    out += [t("persistence", (lab,), across[(lab, lab)] / single[lab]) for lab in _PERSISTENT]
    return out
