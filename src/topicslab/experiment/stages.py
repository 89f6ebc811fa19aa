"""The stages of the release experiment, declared: what each computes, from what, keyed on
what, and which files it leaves (Dick et al. §6; the data flow of docs/design.md).

Public names:
    Stage       one declared unit: ``name``, ``compute(ctx) -> summary``, ``params(ctx)`` (what
                its cache key holds besides its upstream), ``upstream`` (stage names),
                ``artefacts`` (files under OUT it writes), ``when(ctx)`` (whether it runs in
                this run), ``before(ctx)`` (run first, even when the stage is reused)
    STAGES      every stage in data-flow order

    population ─► dp_statistics ─► fit ─► sample ─► fidelity, validate
        │                                   │
        ├─► reid_population                 └─► reid_synthetic, learned_attack
        ├─► theory, qif            disclosure

A stage reads its inputs through the ``RunContext`` only and returns a JSON-able summary; the
pipeline (``pipeline``) runs each through the content cache, so a stage whose key (params +
upstream keys) and artefacts are unchanged is reused. Two declarations may share a name when
exactly one of them applies to a run (the population is generated or read from the user's
file; the DP statistics computed or loaded).

Nothing downstream of ``dp_statistics`` in the release path (fit, sample) reads private data:
they take ``ctx.statistics()`` and the model only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from topicslab.datamodel import TopicSets
from topicslab.errors import InputError, naming_option
from topicslab.experiment.context import RunContext

__all__ = ["STAGES", "Stage"]

Summary = dict[str, Any]


def _always(_ctx: RunContext) -> bool:
    return True


@dataclass(frozen=True)
class Stage:
    """One declared stage of the run (module docstring)."""

    name: str
    compute: Callable[[RunContext], Summary]
    params: Callable[[RunContext], dict[str, Any]]
    upstream: tuple[str, ...] = ()
    artefacts: Sequence[str] | Callable[[RunContext], list[str]] = ()
    when: Callable[[RunContext], bool] = _always
    #: False: no "running" line first (a stage that only reads the user's file: bad input
    #: there is one line)
    announce: bool = True
    before: Callable[[RunContext], None] | None = None

    def files(self, ctx: RunContext) -> list[str]:
        """The artefacts of this stage in ``ctx`` (paths under OUT)."""
        return list(self.artefacts(ctx) if callable(self.artefacts) else self.artefacts)


# ---------------------------------------------------------------------------- population
def _reference_population(ctx: RunContext) -> Summary:
    from topicslab import io as tio
    from topicslab import population

    cfg = ctx.cfg
    s = population.generate(cfg.users, cfg.weeks, seed=ctx.seed, progress=ctx.progress)
    n_cal = min(s.n_users, cfg.calibration_users)
    table = population.calibration_table(s.subset(users=slice(0, n_cal)))
    # written last: a Ctrl-C during the calibration table left OUT/pop.parquet of a stage
    # never recorded, under "no stage had finished"
    tio.write_sets(ctx.pop_path, s)
    ctx.keep_population(s)
    return {"users": s.n_users, "weeks": s.n_weeks, "taxonomy": s.taxonomy.version,
            "padded_user_weeks_share": table.padded_share, "calibration_users": n_cal,
            "calibration": table.to_records(),
            "calibration_within_tolerance": table.all_ok}


def _population_params(ctx: RunContext) -> dict[str, Any]:
    cfg = ctx.cfg
    # the users the calibration table counts, when fewer than the population (only then: the
    # key of every preset's run is unchanged): a run with calibration_users=500 reused the
    # table of 20,000 users
    fewer = min(cfg.users, cfg.calibration_users)
    return {"users": cfg.users, "weeks": cfg.weeks, "seed": ctx.seed,
            "params": _reference_fingerprint(),
            **({"calibration_users": fewer} if fewer < cfg.users else {})}


def _reference_fingerprint() -> str:
    from topicslab.population import load_reference

    return load_reference().fingerprint()


def _user_sets(ctx: RunContext) -> Summary:
    """The user's topic sets (read and checked by ``_check_user_sets``, first)."""
    s = ctx.population_sets()
    return {"users": s.n_users, "weeks": s.n_weeks, "taxonomy": s.taxonomy.version,
            "calibration": None}


def _check_user_sets(ctx: RunContext) -> None:
    """Read the user's topic sets and check them against this run's options before anything
    is computed from them; run even when the stage is reused (its key holds the file, not
    the options): a file accepted by a run of ``--release-weeks 0,1`` was reused by one of
    every week, and a week past k was refused only by the DP stage, naming no file."""
    from topicslab.dp import ContributionBound
    from topicslab.dp.bounding import distinct_per_week

    cfg, path = ctx.cfg, str(ctx.sets_path)
    with naming_option("--sets"):
        s = ctx.population_sets()
    if s.n_users == 0:  # found only by the validation stage, after the fit
        raise InputError("holds no users: there is nothing to run on", file=path,
                         field="--sets")
    if s.n_weeks < cfg.weeks:
        one = (" (a profile table without a week column holds one week per user: add "
               "user_id and week columns, one row per user and week)"
               if s.n_weeks == 1 else "")
        raise InputError(f"the run needs {cfg.weeks} weeks, the file has {s.n_weeks}{one}",
                         file=path, field="--sets")
    # a week of more than k distinct topics (sets of another k) failed only at the DP stage,
    # after OUT/stages.json was written, and without naming the file
    k = ContributionBound().k
    distinct = distinct_per_week(s.sets[:, list(cfg.release_weeks)])
    if (distinct > k).any():
        u, i = np.argwhere(distinct > k)[0]
        week = cfg.release_weeks[int(i)]
        raise InputError(f"user {int(s.user_ids[u])} has {int(distinct[u, i])} distinct "
                         f"topics in week {week}, more than the k={k} that the run's DP "
                         f"statistics take (the Topics API's top {k}); keep at most {k} "
                         "topics per week in the file", file=path, row=int(u) + 1,
                         field="--sets")
    if cfg.theory:
        # the bounds and the Bayes attacker take full profiles over the last r weeks: sets
        # with empty slots (as sampled ones have) were refused only at the theory stage,
        # after every other stage had run and OUT/stages.json was written
        empty = (s.sets[:, s.n_weeks - cfg.weeks:] < 0).any(axis=(1, 2))
        if empty.any():
            u = int(np.argmax(empty))
            raise InputError(f"user {int(s.user_ids[u])} has fewer than {s.k} topics in a "
                             "week, and --theory (the bounds and the Bayes attacker) needs "
                             "full profiles: drop --theory, or give sets with k topics every "
                             "week", file=path, row=u + 1, field="--sets")


# ---------------------------------------------------------------------------- DP statistics
def _release_files(ctx: RunContext) -> list[str]:
    # every file of the release: one missing is no finished stage (it was reused, and the
    # run failed later reading the directory)
    return (["stats/q_single.json", "stats/q_within.json", "stats/q_across.json",
             "stats/privacy_ledger.json", "stats/taxonomy.json"]
            + (["stats/q_overlap.json"] if ctx.cfg.overlap_lags else []))


def _release(ctx: RunContext) -> Summary:
    from topicslab import dp

    cfg = ctx.cfg
    st = dp.compute_statistics(ctx.population_sets(), weeks=cfg.release_weeks,
                               epsilon=cfg.epsilon, delta=cfg.delta,
                               accounting=cfg.accounting,  # type: ignore[arg-type]
                               overlap_lags=cfg.overlap_lags, seed=None)
    dp.save_statistics(ctx.stats_path, st)
    ctx.keep_statistics(st)
    assert st.ledger is not None
    return {"source": str(ctx.stats_path), "n_estimate": float(st.n_estimate),
            "topics": st.taxonomy.size, "k": st.k, "ledger": st.ledger.public().to_dict()}


def _release_params(ctx: RunContext) -> dict[str, Any]:
    cfg, lags = ctx.cfg, ctx.cfg.overlap_lags
    return {"weeks": list(cfg.release_weeks), "epsilon": cfg.epsilon, "delta": cfg.delta,
            "accounting": cfg.accounting,
            # (only when used: the key of a paper release is unchanged, so finished runs are
            # reused, not released a second time)
            **({"overlap_lags": lags} if lags else {})}


def _published_statistics(ctx: RunContext) -> Summary:
    import math

    from topicslab import dp

    try:
        st = dp.load_statistics(ctx.stats_path)
    except InputError as exc:  # named the directory, not the option
        raise exc.located(field="--stats") from None
    n = float(st.n_estimate)
    return {"source": str(ctx.stats_path), "n_estimate": n if math.isfinite(n) else None,
            "topics": st.taxonomy.size, "k": st.k,
            "ledger": None if st.ledger is None else st.ledger.public().to_dict()}


# ---------------------------------------------------------------------------- fit and sample
def _quantiles(arr: Any) -> dict[str, float] | None:
    if arr is None:
        return None
    qs = (0.1, 0.25, 0.5, 0.75, 0.9)
    return {str(q): float(v) for q, v in zip(qs, np.quantile(arr, qs), strict=True)}


def _fit(ctx: RunContext) -> Summary:
    from topicslab import model as tm

    cfg = ctx.cfg
    res = ctx.fit_once(ctx.seed)
    tm.save_model(ctx.model_dir, res.model)
    hist, mdl = list(res.history), res.model
    return {"model": mdl.variant, "types": mdl.types,
            "modes": mdl.modes if mdl.variant == "persistent" else None,
            "weeks": cfg.weeks, "optimizer": cfg.optimizer, "steps_limit": cfg.fit_steps,
            "seconds": float(res.seconds), "steps": int(res.steps), "stopped": res.stopped,
            # the Frobenius bound on a step's pair statistics (0: exact steps)
            "truncation": mdl.metadata.get("truncation"),
            "final_loss": float(hist[-1]["loss"]) if hist else None,
            "persistence": mdl.metadata.get("persistence"),
            "stay_quantiles": _quantiles(mdl.stay),
            "mode_stay_quantiles": _quantiles(mdl.mode_stay),
            "history": hist[:: max(1, len(hist) // 200)]}


def _fit_params(ctx: RunContext) -> dict[str, Any]:
    cfg = ctx.cfg
    return {"model": cfg.model, "types": cfg.types, "weeks": cfg.weeks,
            "optimizer": cfg.optimizer, "steps": cfg.fit_steps,
            # how the steps computed the statistics: a change refits
            "truncation": getattr(ctx.optimizer(), "truncation", None),
            "minutes": cfg.fit_minutes, "target": cfg.fit_target, "seed": ctx.seed}


def _sample(ctx: RunContext) -> Summary:
    import time

    from topicslab import model as tm

    t0 = time.perf_counter()
    n = ctx.synthetic_users
    tm.sample_to_file(ctx.fitted(), ctx.synth_path, n, seed=ctx.seed + SAMPLE_SEED,
                      weeks=ctx.cfg.weeks, progress=ctx.progress)
    return {"users": n, "weeks": ctx.cfg.weeks, "path": str(ctx.synth_path),
            "seconds": time.perf_counter() - t0}


# ---------------------------------------------------------------------------- the verdict
SAMPLE_SEED = 3  # the sample stage's seed offset: the release's synthetic users


def _fidelity(ctx: RunContext) -> Summary:
    from topicslab import validate as tv

    cfg, model = ctx.cfg, ctx.fitted()

    def synthetic(trial: int) -> Any:
        # trial 0: the release's users (as synth.parquet holds them); then fresh draws.
        # Drawn chunk by chunk into the attack's traces: no synthetic table beside the
        # population (the stage peaked at both, 3.6 GB, at the paper's scale)
        return ctx.drawn_synthetic(model, ctx.seed + (SAMPLE_SEED if trial == 0
                                                      else 2000 + trial))

    return tv.fidelity(ctx.population_sets(), synthetic, trials=cfg.fidelity_trials,
                       tolerance=cfg.fidelity_tolerance, targets=cfg.fidelity_targets,
                       seed=ctx.seed + 30, progress=ctx.progress).to_dict()


def _strip_arrays(d: dict[str, Any], limit: int = 2000) -> dict[str, Any]:
    """Drop raw per-term arrays (kept in errors.npz) from a JSON summary."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, list | np.ndarray) and len(v) > limit:
            continue
        out[k] = _strip_arrays(v, limit) if isinstance(v, dict) else v
    return out


def _save_errors(ctx: RunContext, fq: Any) -> None:
    from topicslab._atomic import atomic_dir

    path = ctx.out / "validation" / "errors.npz"
    # through a temporary directory: an interrupted write leaves no empty ``validation/``
    with atomic_dir(path.parent, owned=(path.name,)) as tmp, (tmp / path.name).open("wb") as fh:
        np.savez_compressed(fh, abs_err_pp=np.asarray(fq.abs_errors * 100, dtype=np.float32),
                            rel_err=np.asarray(fq.rel_errors, dtype=np.float32))


def _to_dict(x: Any) -> Any:
    return x.to_dict() if hasattr(x, "to_dict") else x


def _validate(ctx: RunContext) -> Summary:
    from topicslab import validate as tv

    fq = tv.fit_quality(ctx.statistics(), ctx.fitted())
    _save_errors(ctx, fq)
    summary: Summary = {"fit_quality": _strip_arrays(fq.to_dict())}
    syn = ctx.synthetic_sets()
    if ctx.has_population:
        pop = ctx.population_sets()
        summary["distinct_topics"] = _to_dict(tv.distinct_topics_comparison(pop, syn))
        summary["stationarity_population"] = _to_dict(tv.stationarity(pop))
    else:
        summary["distinct_topics"] = None
        summary["stationarity_population"] = None
    summary["stationarity_synthetic"] = _to_dict(tv.stationarity(syn))
    return summary


# ---------------------------------------------------------------------------- re-identification
ATTACKS = ("hamming", "asymmetric")


def reid_params(ctx: RunContext) -> dict[str, Any]:
    """The paper's protocol as the re-identification stages are keyed on it."""
    cfg = ctx.cfg
    return {"weeks": cfg.weeks, "targets": cfg.targets, "trials": cfg.trials,
            "seed": ctx.seed, "attacks": list(ATTACKS)}


def _reid_population(ctx: RunContext) -> Summary:
    from topicslab import attacks

    cfg = ctx.cfg
    return attacks.measure_risk(ctx.population_sets(), attacks=ATTACKS, weeks=cfg.weeks,
                                targets=cfg.targets, trials=cfg.trials, seed=ctx.seed + 10,
                                progress=ctx.progress).to_dict()


def _reid_synthetic(ctx: RunContext) -> Summary:
    from topicslab import attacks
    from topicslab import validate as tv

    cfg = ctx.cfg

    def per_trial(trial: int) -> Any:
        model = ctx.fitted()
        if cfg.refit_per_trial:
            res = ctx.fit_once(ctx.seed + 1 + trial)
            model = res.model
            q = tv.fit_quality(ctx.statistics(), model)
            ctx.refits.append({"trial": trial, "seed": ctx.seed + 1 + trial,
                               "seconds": res.seconds, "steps": res.steps, "loss": res.loss,
                               "share_rel_within_20pct": q.share_rel_within_20pct,
                               "share_within_2sigma": q.share_within_2sigma})
        # drawn chunk by chunk into the trial's traces (never a whole table)
        return ctx.drawn_synthetic(model, ctx.seed + 1000 + trial)

    # every trial draws its own users (per_trial): of the release's table only its shape
    # (weeks, k, taxonomy: the model's) is needed, so the table is let go first
    mdl = ctx.fitted()
    template = TopicSets(np.zeros((0, cfg.weeks, mdl.k), dtype=np.int16), mdl.taxonomy)
    ctx.let_go_of_synthetic()
    out = attacks.measure_risk(template, attacks=ATTACKS, weeks=cfg.weeks,
                               targets=cfg.targets, trials=cfg.trials, seed=ctx.seed + 20,
                               progress=ctx.progress, populations=per_trial).to_dict()
    out["refits"] = ctx.refits or None
    return out


def _theory(ctx: RunContext) -> Summary:
    from topicslab.attacks.theory import theory_curve

    cfg = ctx.cfg
    return theory_curve(ctx.population_sets(), weeks=range(1, cfg.weeks + 1),
                        targets=cfg.targets, trials=1, seed=ctx.seed + 40,
                        progress=ctx.progress).to_dict()


def _learned(ctx: RunContext) -> Summary:
    from topicslab.attacks.learned import LearnedAttackConfig
    from topicslab.attacks.learned_curve import learned_curve

    cfg = ctx.cfg
    return learned_curve(ctx.population_sets(), ctx.synthetic_sets(),
                         weeks=range(1, cfg.weeks + 1),
                         config=LearnedAttackConfig(epochs=cfg.learned_epochs),
                         targets=cfg.targets, trials=cfg.learned_trials,
                         seed=ctx.seed + 50, progress=ctx.progress).to_dict()


# ---------------------------------------------------------------------------- QIF, disclosure
def _qif_weeks(ctx: RunContext) -> int:
    return min(ctx.cfg.qif_weeks, ctx.cfg.weeks)


def _qif_head(ctx: RunContext) -> int:
    """The population's weeks the QIF section reads: its sequence of weeks, and at least two
    (with one week only, the section has no sequence table; with two or more, it has)."""
    return max(_qif_weeks(ctx), 2)


def _before_qif(ctx: RunContext) -> None:
    # nothing from here on needs the synthetic users, nor the population's later weeks
    # (together 1.4 GB at 10M users × 8 weeks under the QIF tables' 2 GB): let go of them,
    # even when QIF is reused
    ctx.let_go_of_synthetic()
    ctx.let_go_of_population(_qif_head(ctx))


def _qif(ctx: RunContext) -> Summary:
    from topicslab import qif

    s = ctx.population_head(_qif_head(ctx)) if ctx.has_population else None
    return qif.report_section(s, weeks=list(range(_qif_weeks(ctx))))


def _disclosure(ctx: RunContext) -> Summary:
    from topicslab import disclosure

    kw: dict[str, Any] = {"seed": ctx.seed, "progress": ctx.progress}
    if ctx.cfg.disclosure_personas:
        kw["personas"] = ctx.cfg.disclosure_personas
    res = disclosure.topics_experiment(**kw)
    return {"result": res.to_dict(), "section": disclosure.report_section(res)}


def _has_population(ctx: RunContext) -> bool:
    return ctx.has_population


STAGES: tuple[Stage, ...] = (
    Stage("population", _reference_population, _population_params,
          artefacts=("pop.parquet",), when=lambda ctx: ctx.input_kind == "reference"),
    Stage("population", _user_sets,
          lambda ctx: {"input": ctx.input_fingerprint, "taxonomy": ctx.sets_taxonomy},
          when=lambda ctx: ctx.input_kind == "sets", announce=False,
          before=_check_user_sets),
    Stage("dp_statistics", _release, _release_params, upstream=("population",),
          artefacts=_release_files, when=lambda ctx: ctx.input_kind != "stats"),
    Stage("dp_statistics", _published_statistics,
          lambda ctx: {"input": ctx.input_fingerprint},
          when=lambda ctx: ctx.input_kind == "stats", announce=False),
    # DP statistics only from here on, in the release path
    Stage("fit", _fit, _fit_params, upstream=("dp_statistics",),
          artefacts=("model/model.safetensors", "model/model.json")),
    Stage("sample", _sample,
          lambda ctx: {"users": ctx.synthetic_users, "weeks": ctx.cfg.weeks,
                       "seed": ctx.seed},
          upstream=("fit",), artefacts=("synth.parquet",)),
    Stage("fidelity", _fidelity,
          lambda ctx: {"weeks": ctx.cfg.weeks, "trials": ctx.cfg.fidelity_trials,
                       "targets": ctx.cfg.fidelity_targets,
                       "tolerance": ctx.cfg.fidelity_tolerance, "seed": ctx.seed},
          upstream=("population", "sample"), when=_has_population),
    Stage("validate", _validate, lambda ctx: {},
          upstream=("dp_statistics", "fit", "sample", "population"),
          artefacts=("validation/errors.npz",)),
    # the release's synthetic table is needed no more (validate was its last reader): it sat
    # beside the population and the attack's traces
    Stage("reid_population", _reid_population, reid_params, upstream=("population",),
          when=_has_population, before=RunContext.let_go_of_synthetic),
    Stage("reid_synthetic", _reid_synthetic,
          lambda ctx: {**reid_params(ctx), "refit_per_trial": ctx.cfg.refit_per_trial},
          upstream=("fit", "sample")),
    Stage("theory", _theory,
          lambda ctx: {"weeks": ctx.cfg.weeks, "targets": ctx.cfg.targets,
                       "seed": ctx.seed},
          upstream=("population",), when=lambda ctx: ctx.cfg.theory and ctx.has_population),
    Stage("learned_attack", _learned,
          lambda ctx: {"weeks": ctx.cfg.weeks, "targets": ctx.cfg.targets,
                       "trials": ctx.cfg.learned_trials, "epochs": ctx.cfg.learned_epochs,
                       "seed": ctx.seed},
          upstream=("population", "sample"),
          when=lambda ctx: ctx.cfg.learned and ctx.has_population),
    Stage("qif", _qif, lambda ctx: {"weeks": ctx.cfg.qif_weeks}, upstream=("population",),
          before=_before_qif),
    Stage("disclosure", _disclosure,
          lambda ctx: {"personas": ctx.cfg.disclosure_personas, "seed": ctx.seed},
          when=lambda ctx: ctx.cfg.disclosure),
)
