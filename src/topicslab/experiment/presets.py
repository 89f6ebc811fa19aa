"""Named sizes of ``topicslab run`` (Dick et al. §6; measured times in benchmarks/RESULTS.md).

* ``smoke``: 20K users, the smallest run; exercises every stage and every report section
  (used by the tests).
* ``default``: the built-in experiment: 1M users, 4 weeks, persistent types (T = 100 types ×
  5 modes), release fidelity for r = 1..4 with every user a target, the paper's 10,240
  targets × 10 trials.
* ``paper``: the paper's size: 10M users, 8 weeks (fidelity for r = 1..8 with 200K random
  targets per trial), the same model (see benchmarks/RESULTS.md for its measured time).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from numbers import Integral
from typing import Any


@dataclass(frozen=True)
class Preset:
    """Sizes and budgets of one run. Every paper parameter has the paper's value by default,
    except the DP release's weeks and accounting: every simulated week under tight accounting
    (``stats_weeks=(0, 1), accounting="paper"`` is the paper's release; docs/fidelity.md §5c)."""

    users: int
    weeks: int = 4                   # weeks of population, fitted model and attacks
    stats_weeks: tuple[int, ...] | None = None  # weeks of the DP release; None: every week
                                     # simulated, averaged (Dick et al. §4.1 define the
                                     # statistics over a random week J; a release of weeks 0-1
                                     # only under-states the risk of a drifting population at
                                     # 8 weeks, docs/fidelity.md §4d); (0, 1): the paper's
                                     # counted weeks
    overlap_lags: int = 0            # lags of the persistence statistic (not in the paper;
                                     # docs/fidelity.md §4c); 0: the paper's release
    epsilon: float = 1.0986122886681098     # ln 3
    delta: float = 1e-15
    accounting: str = "tight"       # one zCDP budget for the release (dp.mechanism); "paper":
                                     # the paper's basic composition (25/25/50 for 2 weeks)
    model: str = "persistent"       # model variant: persistent | paper (Dick et al. §5)
    types: int | None = None         # T (None: the variant's; paper 500, persistent 100 × 5
                                     # modes = 500 components)
    optimizer: str = "default"
    fit_steps: int = 300             # full-objective steps (default optimiser)
    fit_minutes: float = 10.0        # wall-time cap of one fit
    fit_target: str | None = None    # "bar": stop at the quality bar (99.9% within 0.1 pp,
                                     # 90% within 20%); None: run the steps (fidelity needs
                                     # the converged fit, not the first one over the bar)
    targets: int = 10_240            # the paper's protocol: targets per trial ...
    trials: int = 10                 # ... and trials (one-std rule)
    refit_per_trial: bool = False    # the paper's protocol re-fits the model in every trial
    fidelity_trials: int = 2         # release fidelity: trials per r (fresh API answers and
                                     # fresh synthetic users each)
    fidelity_targets: int | None = None   # targets per trial (None: every user)
    fidelity_tolerance: float = 0.02      # verdict: |relative gap| ≤ this for every r, attack
    calibration_users: int = 1_000_000
    disclosure: bool = True
    disclosure_personas: int = 0     # 0: the disclosure module's default
    qif_weeks: int = 3
    theory: bool = False             # the population's risk against r with the Bayes attacker
                                     # and the framework's bounds (Carey et al. Fig. 2): exact
                                     # sums up to 3 weeks (Corollary 1: 4), sampled beyond
    learned: bool = False            # the learned attack (Carey et al. App. E.1.3) trained on
                                     # the synthetic sample and on the population, attacking
                                     # the population, r = 1..weeks
    learned_epochs: int = 0          # its training passes (0: the counted co-occurrence,
                                     # gated on validation: nearly all of the gain measured)
    learned_trials: int = 2          # its trials of ``targets`` targets per r

    def __post_init__(self) -> None:
        from topicslab._checks import MAX_COUNT, MAX_STEPS, MIN_FIT_MINUTES, is_real
        from topicslab.errors import InputError

        if self.model not in ("persistent", "paper"):
            raise InputError(f"model must be persistent or paper, got {self.model!r}",
                             field="--model")
        if self.fit_target not in (None, "bar"):
            raise InputError(f"fit_target must be None or 'bar', got {self.fit_target!r}",
                             field="fit_target")
        for name in ("fit_steps", "fidelity_trials", "types", "users", "weeks",
                     "learned_trials"):
            v = getattr(self, name)
            if v is None and name == "types":
                continue
            if (isinstance(v, bool) or not isinstance(v, Integral)
                    or not 1 <= int(v) <= MAX_COUNT):
                # (10**400 users or types was an OverflowError in the memory estimates)
                raise InputError(f"{name} must be a positive 64-bit integer, got {v!r}",
                                 field="--" + name.replace("_", "-"))
            object.__setattr__(self, name, int(v))  # a NumPy integer (refused before)
        if self.fit_steps > MAX_STEPS:  # (run --fit-steps refuses it; the Python API took it)
            raise InputError(f"fit_steps must be in 1..{MAX_STEPS:,} (the default is 300; "
                             f"fit_minutes gives the fit more time), got {self.fit_steps:,}",
                             field="--fit-steps")
        # fields of the Python API only (no option): calibration_users=-5 calibrated all but
        # the last 5 users, qif_weeks=2.5 or 0 failed after every other stage had run
        for name in ("calibration_users", "qif_weeks"):
            v = getattr(self, name)
            if (isinstance(v, bool) or not isinstance(v, Integral)
                    or not 1 <= int(v) <= MAX_COUNT):
                raise InputError(f"{name} must be a positive 64-bit integer, got {v!r}",
                                 field=name)
            object.__setattr__(self, name, int(v))
        if self.optimizer not in ("default", "paper"):  # ("xyz" ran the default one)
            raise InputError(f"optimizer must be default or paper, got {self.optimizer!r}",
                             field="optimizer")
        if self.optimizer == "paper" and self.model != "paper":
            # (refused by the fit only after the population and the DP release)
            raise InputError("the paper's optimiser fits the paper's types only (model "
                             "paper)", field="optimizer")
        # after the integers: the release's weeks are counted from ``weeks``
        self._check_stage_parameters()
        for name in ("refit_per_trial", "disclosure", "theory", "learned"):
            if not isinstance(getattr(self, name), bool):  # "no" was taken as true
                raise InputError(f"{name} must be True or False, got "
                                 f"{getattr(self, name)!r}", field=name)
        if self.learned:  # (imports torch: only when the stage runs)
            from topicslab.attacks.learned import LearnedAttackConfig

            try:
                LearnedAttackConfig(epochs=self.learned_epochs)
            except InputError as exc:
                raise InputError(exc.message, field="--learned-epochs") from None
        m = self.fit_minutes
        if not is_real(m) or not MIN_FIT_MINUTES <= m < float("inf"):  # (NumPy numbers too)
            # checked here, before the population and the statistics are computed: the fit
            # itself would refuse it only after them (and 0.001, which run --fit-minutes
            # refuses, was taken)
            raise InputError(f"fit_minutes must be a finite number >= {MIN_FIT_MINUTES}, got "
                             f"{m!r}", field="--fit-minutes")
        if not isinstance(m, int | float):  # a NumPy number, for the JSON of the results
            object.__setattr__(self, "fit_minutes", float(m))
        first = self.stats_weeks[0] if self.stats_weeks else 0
        room = self.weeks - 1 - first
        if self.overlap_lags and self.model == "paper":
            raise InputError("--overlap-lags adds a statistic that only persistent types fit: "
                             "with --model paper it would spend budget on nothing (drop it)",
                             field="--overlap-lags")
        if self.overlap_lags > room:
            raise InputError(f"overlap_lags must be at most {room} (weeks {self.weeks}, first "
                             f"released week {self.release_weeks[0]}), got {self.overlap_lags}",
                             field="--overlap-lags")
        t = self.fidelity_tolerance
        if not is_real(t) or not 0 < t < 1:
            # ("0.1" was a TypeError)
            raise InputError(f"fidelity_tolerance must be a number in (0, 1), got {t!r}",
                             field="fidelity_tolerance")
        if not isinstance(t, int | float):
            object.__setattr__(self, "fidelity_tolerance", float(t))

    def _check_stage_parameters(self) -> None:
        """The stages' parameters, checked by their own parameter objects (the DP release's
        budget and weeks, the paper protocol's and the fidelity check's targets and trials,
        the disclosure personas), so that a bad preset or override fails before any stage
        runs; a field the objects name differently is renamed to the run's option."""
        from topicslab.attacks import ReidProtocol
        from topicslab.disclosure import DisclosureDesign
        from topicslab.dp import ContributionBound, PrivacyBudget
        from topicslab.errors import ParameterError

        PrivacyBudget(self.epsilon, self.delta, self.accounting)  # type: ignore[arg-type]
        if self.stats_weeks is None:
            # every simulated week: consecutive and in range by construction, so its first
            # two stand in for the checks (a preset of 10^9 weeks built no 10^9-week tuple)
            weeks: tuple[int, ...] = (0, 1) if self.weeks > 1 else (0,)
        else:
            weeks = self.release_weeks
        late = [w for w in weeks if isinstance(w, Integral) and w >= self.weeks]
        if late:  # (found only by the DP stage, after the population was generated)
            raise ParameterError(f"release weeks must be in 0..{self.weeks - 1} (the run "
                                 f"simulates {self.weeks} weeks), got {late[0]}",
                                 field="--release-weeks")
        try:  # distinct, consecutive and increasing: the DP release's own rule
            ContributionBound(weeks=weeks, overlap_lags=self.overlap_lags)
        except ParameterError as exc:  # (--release-weeks 0,0 or -1 named 'weeks')
            raise ParameterError(exc.message, field="--release-weeks" if exc.field == "weeks"
                                 else exc.field) from None
        if self.weeks > 1 and len(weeks) < 2:
            # a release of one week has no across-week query: the fit learned, without a
            # word, that no topic persists (topicslab fit and run --stats refuse such a release)
            raise ParameterError(f"a release of one week ({weeks[0]}) has no across-week "
                                 f"statistic, and the run's model of {self.weeks} weeks needs "
                                 "one: release two or more consecutive weeks (e.g. 0,1, or all)",
                                 field="--release-weeks")
        ReidProtocol(self.targets, self.trials)
        try:
            ReidProtocol("all" if self.fidelity_targets is None else self.fidelity_targets)
        except ParameterError as exc:
            raise ParameterError(exc.message, field="fidelity_targets") from None
        if self.disclosure_personas:
            try:
                DisclosureDesign(personas=self.disclosure_personas)
            except ParameterError as exc:
                raise ParameterError(exc.message, field="disclosure_personas") from None

    @property
    def release_weeks(self) -> tuple[int, ...]:
        """The weeks the DP statistics count: ``stats_weeks``, or every simulated week."""
        return tuple(range(self.weeks)) if self.stats_weeks is None else tuple(self.stats_weeks)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["stats_weeks"] = list(self.release_weeks)
        return d

    def with_overrides(self, **kw: Any) -> Preset:
        """A copy with the non-``None`` overrides applied; a key that is no field of a preset
        is refused, naming it (it was dataclasses' "TypeError: Preset.__init__() got an
        unexpected keyword argument")."""
        known = [f.name for f in fields(self)]
        for key in kw:
            if key not in known:
                from topicslab._checks import value_shown
                from topicslab.errors import InputError

                raise InputError(f"unknown override {value_shown(key, 40)}; a run's overrides "
                                 f"are the fields of a preset: {', '.join(known)}",
                                 field=key)
        return replace(self, **{k: v for k, v in kw.items() if v is not None})


PRESETS: dict[str, Preset] = {
    "smoke": Preset(users=20_000, types=8, fit_steps=60, fit_minutes=0.25, targets=1_024,
                    trials=3, calibration_users=20_000, disclosure_personas=40),
    "default": Preset(users=1_000_000),
    # 200K random targets per fidelity trial: ~9 min per trial for r = 1..8 on 2 cores (every
    # one of the 10M users as a target would take ~7 h); --fidelity-trials narrows the intervals
    "paper": Preset(users=10_000_000, weeks=8, fidelity_targets=200_000),
}
