"""Cross-site re-identification: attacks, an exact fast engine, the protocol and the bounds.

Implements Carey et al., "A new framework for measuring re-identification risk"):
two colluding websites, website 1 holding every user's r-week trace of Topics API answers and
website 2 a target's trace; the attacker names a user of website 1.

Protocol (``protocol``):
    ReidProtocol(targets=10240, trials=10, setting="random-user", engine="exact")
                                  the protocol's parameters, checked once; check_call_weeks
    measure_risk(sets, *, attacks=("hamming", "asymmetric"), weeks=4, targets=10240,
                 trials=10, seed=0, mechanism=None, progress=True, populations=None,
                 setting="random-user", engine="exact") -> RiskResult
    measure_risk_traces(site1, site2=None, *, attacks=("hamming",), targets, trials, seed,
                        mechanism, progress, setting, engine) -> RiskResult
    risk_curve(sets, weeks=(1, 2, 4, 6, 8), **options) -> RiskCurve
    RiskResult (.attacks[name].risk_mean / risk_std / ci95 / expected_risk_mean, .to_dict()),
    AttackRisk, RiskCurve, evaluate_attacks, evaluate_suffixes, split_sites, trial_api_seed,
    wilson_interval, student_interval

Attacks (pluggable match-set attacks and whole-trace attacks, ``attack``):
    MatchSetAttack, TraceAttack, register_attack, make_attack, available_attacks
    HammingAttack ("hamming"), AsymmetricAttack ("asymmetric"), asymmetric_weights
    estimate_popularity, lemma10_radius (Lemma 10)

Learned attack (``topicslab.attacks.learned``, imported on demand: it needs PyTorch):
    train_attack, save_attack, load_attack, attack_outcomes, measure_risk_learned
                                        Carey et al. Appendix E.1.3; asymmetric + learned residual

Engines:
    MatchSetCounter, match_set_counts   exact match-set counts without all pairs (docs/design.md)
    argmax_members                      materialised argmax sets (small data)
    brute_force_counts, brute_force_outcomes, brute_force_members   the reference
    subset_scores, match_masks, TargetOutcomes, outcomes_from_counts, outcomes_from_gains

Matching setting (``matching``): the one-to-one assignment attack (Carey et al. §3)
    MatchingOptions(matching="per-item"|"assignment", candidates=32, objective="loglik")
    matching_attack(site1, queries, true_rows, attacks, *, candidates, objective, seed)
                                        -> list[MatchingOutcome]
    candidate_edges, solve_assignment, cutoff_dummies

Bounds (``bounds``):
    reid_bounds(sets, *, weeks, mechanism, seed, popularity) -> ReidBounds
    full_information_bound, partial_information_bound, matching_bound,
    optimal_matching_accuracy, ldp_bound, ldp_delta, k_anonymity, mutual_information_bound,
    answer_epsilon, profile_anonymity, ProfileAnonymity
"""

from topicslab.attacks.asymmetric import AsymmetricAttack, asymmetric_weights
from topicslab.attacks.attack import (
    MatchSetAttack,
    TraceAttack,
    available_attacks,
    make_attack,
    register_attack,
)
from topicslab.attacks.bounds import (
    ProfileAnonymity,
    ReidBounds,
    answer_epsilon,
    full_information_bound,
    k_anonymity,
    ldp_bound,
    ldp_delta,
    matching_bound,
    mutual_information_bound,
    optimal_matching_accuracy,
    partial_information_bound,
    profile_anonymity,
    reid_bounds,
)
from topicslab.attacks.bruteforce import (
    brute_force_counts,
    brute_force_members,
    brute_force_outcomes,
)
from topicslab.attacks.engine import MatchSetCounter, argmax_members, match_set_counts
from topicslab.attacks.hamming import HammingAttack
from topicslab.attacks.matching import (
    MatchingOptions,
    MatchingOutcome,
    candidate_edges,
    cutoff_dummies,
    matching_attack,
    solve_assignment,
)
from topicslab.attacks.outcomes import TargetOutcomes, outcomes_from_counts, outcomes_from_gains
from topicslab.attacks.popularity import estimate_popularity, lemma10_radius
from topicslab.attacks.protocol import (
    AttackRisk,
    ReidProtocol,
    RiskCurve,
    RiskResult,
    check_call_weeks,
    evaluate_attacks,
    evaluate_suffixes,
    measure_risk,
    measure_risk_traces,
    risk_curve,
    split_sites,
    student_interval,
    trial_api_seed,
    wilson_interval,
)
from topicslab.attacks.scoring import match_masks, subset_scores

__all__ = [
    "AsymmetricAttack",
    "AttackRisk",
    "HammingAttack",
    "MatchSetAttack",
    "MatchSetCounter",
    "MatchingOptions",
    "MatchingOutcome",
    "ProfileAnonymity",
    "ReidBounds",
    "ReidProtocol",
    "RiskCurve",
    "RiskResult",
    "TargetOutcomes",
    "TraceAttack",
    "answer_epsilon",
    "argmax_members",
    "asymmetric_weights",
    "available_attacks",
    "brute_force_counts",
    "brute_force_members",
    "brute_force_outcomes",
    "candidate_edges",
    "check_call_weeks",
    "cutoff_dummies",
    "estimate_popularity",
    "evaluate_attacks",
    "evaluate_suffixes",
    "full_information_bound",
    "k_anonymity",
    "ldp_bound",
    "ldp_delta",
    "lemma10_radius",
    "make_attack",
    "match_masks",
    "match_set_counts",
    "matching_attack",
    "matching_bound",
    "measure_risk",
    "measure_risk_traces",
    "mutual_information_bound",
    "optimal_matching_accuracy",
    "outcomes_from_counts",
    "outcomes_from_gains",
    "partial_information_bound",
    "profile_anonymity",
    "register_attack",
    "reid_bounds",
    "risk_curve",
    "solve_assignment",
    "split_sites",
    "student_interval",
    "subset_scores",
    "trial_api_seed",
    "wilson_interval",
]
