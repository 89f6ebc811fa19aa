"""The end-to-end release experiment behind ``topicslab run`` (Dick et al. §6).

Stages, in data-flow order (docs/design.md §Data flow):

    population ─► dp_statistics ─► fit ─► sample ─► validate
        │                                   │
        ├─► reid_population                 └─► reid_synthetic
        └─► qif                 disclosure ─► report (report.html + results.json)

* ``population``: the calibrated reference population (or ``sets_path``: the user's data);
  with the calibration check against the published statistics of the real release.
* ``dp_statistics``: every simulated week (``Preset.release_weeks``; the paper's weeks 1–2 on
  request), ε = ln 3, δ = 1e-15, tight accounting (or ``stats_dir``: published statistics;
  then there is no population and no population-side comparison).
* ``fit`` / ``sample``: the type mixture (``--model persistent``, the default, or the paper's)
  fitted to the DP statistics only, and as many synthetic users as the population has.
* ``fidelity``: the release's verdict: exact expected re-identification risk of population and
  synthetic data for r = 1..R weeks, both attacks, every user a target, as relative gaps with
  their uncertainty (``topicslab.validate.fidelity``).
* ``validate``: fit errors (Fig. 3/4), distinct topics (Fig. 5), stationarity (Appendix C).
* ``reid_population`` / ``reid_synthetic``: the paper's protocol (both attacks, R weeks, 10,240
  targets, 10 trials) and its one-std rule, the verdict's second line. **Deviation from the
  paper** unless ``refit_per_trial``: the paper re-fits and re-samples the model in every
  trial; by default the model is fitted once and every trial draws a fresh synthetic
  population from it (and fresh API randomness), so the synthetic std reflects sampling and
  API noise but not fit-to-fit variation; ``refit_per_trial`` re-fits (seed + trial) in every
  trial and reports the fit-to-fit spread.
* ``qif``, ``disclosure``: the QIF and sensitive-interest sections.

Every stage is cached by content (``cache``): a re-run with the same inputs and parameters
reuses finished stages; changing a parameter re-runs that stage and everything downstream.

Public names:
    run(preset=..., out=..., ...) -> dict   runs the stages; writes OUT/results.json and
                                            OUT/report.html; returns the results
"""

from __future__ import annotations

import json
import math
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import topicslab
from topicslab._atomic import atomic_paths
from topicslab._checks import choice, flag, integer
from topicslab._json import jsonable
from topicslab._paths import check_output_dir, no_new_empty_dirs
from topicslab.datamodel import TopicSets
from topicslab.errors import InputError, naming_option
from topicslab.experiment.cache import Lookup, StageCache, file_fingerprint
from topicslab.experiment.presets import PRESETS, Preset
from topicslab.taxonomy import VERSIONS

Log = Callable[[str], None]

SYNTHETIC_DEVIATION = (
    "The paper re-fits and re-samples the model in each of its trials; this run fits the model "
    "once and draws a fresh synthetic population (and fresh API randomness) in every trial, so "
    "the synthetic standard deviation covers sampling and API noise but not fit-to-fit "
    "variation (--refit-per-trial follows the paper).")
REFIT_PROTOCOL = (
    "As in the paper, the model is re-fitted (seed + trial) and re-sampled in every trial: the "
    "synthetic standard deviation includes the fit-to-fit variation.")


def peak_rss_mb() -> float | None:
    """This process's peak resident set size so far, in MB (``None`` where unknown)."""
    try:
        import resource
    except ImportError:  # (Windows)
        return None
    peak = float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    # Linux reports kilobytes, macOS bytes
    return peak / (1024.0 ** 2 if sys.platform == "darwin" else 1024.0)


class _Runner:
    """Runs stages through the cache and keeps their timings."""

    def __init__(self, out: Path, cache: StageCache, log: Log) -> None:
        self.out = out
        self.cache = cache
        self.log = log
        self.seconds: dict[str, float] = {}
        self.computed_seconds: dict[str, float | None] = {}
        #: the process's peak resident memory after each stage (MB; None where the platform
        #: does not say): a running maximum, so the stage where it rises is the one that
        #: needed that memory (issue 18: where the paper preset's gigabytes go)
        self.peak_rss_mb: dict[str, float | None] = {}
        self.cached: list[str] = []
        #: key -> name of the stages computed in this run: a stage cached downstream of one
        #: (same key, e.g. its artefact had been truncated and is now rewritten; the DP noise
        #: differs every time) was made from the old artefacts, so it is recomputed too
        self.redone: dict[str, str] = {}

    def stage(self, name: str, params: dict[str, Any], upstream: list[str],
              artefacts: list[str], fn: Callable[[], dict[str, Any]],
              announce: bool = True) -> tuple[str, dict[str, Any]]:
        """Run ``fn`` as stage ``name`` (or reuse it); ``announce=False``: no "running" line
        first (a stage that only reads the user's file: bad input there is one line)."""
        key = self.cache.key(name, params, upstream)
        found = self._reusable(name, key, upstream, artefacts)
        if found.summary is not None:
            return key, self._reuse(name, found.summary)
        if announce or found.reason:
            self.log(f"{name}: recomputing ({found.reason})" if found.reason
                     else f"{name}: running")
        self.redone[key] = name
        t0 = time.perf_counter()
        summary = fn()
        self.seconds[name] = time.perf_counter() - t0
        summary = jsonable(summary)
        self.computed_seconds[name] = self.seconds[name]
        self.peak_rss_mb[name] = peak_rss_mb()
        self.cache.record(name, key, summary, self.seconds[name], artefacts)
        self.log(f"{name}: {self.seconds[name]:.1f} s")
        return key, summary

    def _reusable(self, name: str, key: str, upstream: list[str],
                  artefacts: list[str]) -> Lookup:
        """The cached summary of the stage, or why it runs (``""``: it never finished with
        this key). Upstream comes first: artefacts made from a stage recomputed in this run
        are stale whatever their hash, so they are not hashed for nothing."""
        stale_input = next((self.redone[k] for k in upstream if k in self.redone), None)
        if stale_input is None:
            return self.cache.lookup(name, key, artefacts)
        if self.cache.has_record(name, key):
            return Lookup(None, f"{stale_input} was recomputed")
        return Lookup(None)

    def _reuse(self, name: str, summary: dict[str, Any]) -> dict[str, Any]:
        self.cached.append(name)
        self.seconds[name] = 0.0
        self.computed_seconds[name] = self.cache.seconds(name)
        self.peak_rss_mb[name] = peak_rss_mb()
        self.log(f"{name}: cached")
        return summary


def _risk_summary(res: dict[str, Any]) -> dict[str, Any]:
    """The ``{attack: {mean, std, ci95, expected_mean}}`` view of a RiskResult dict."""
    out: dict[str, Any] = {}
    for name, a in res["attacks"].items():
        out[name] = {"mean": a["risk_mean"], "std": a["risk_std"], "ci95": a["ci95"],
                     "expected_mean": a.get("expected_risk_mean")}
    return out


def verdict(reid: dict[str, Any], fidelity: dict[str, Any] | None = None,
            fit: dict[str, Any] | None = None) -> dict[str, Any]:
    """The release verdict: the fidelity gaps (every r, every attack, within the tolerance;
    ``validate.fidelity``) when available, with the paper's one-std rule as its second line.
    ``pass`` is ``None`` when the fidelity outcome is ``"inconclusive"`` (``Fidelity.outcome``).
    ``fit`` (results.json's section) adds why the verdict cannot speak of the model when the
    fit stopped at the DP noise floor before its first step (``model.NOISE_AT_START``)."""
    for name, value in (("reid", reid), ("fidelity", fidelity), ("fit", fit)):
        if not isinstance(value, dict) and not (name != "reid" and value is None):
            raise TypeError(f"verdict takes a dict as {name} (results.json's section), got "
                            f"{type(value).__name__}")
    from topicslab.model.fit import noise_at_start

    note = noise_at_start(fit.get("stopped"), fit.get("steps")) if fit else None
    tail = f" Note: {note}." if note else ""
    one = one_std_rule(reid)
    if fidelity is None or fidelity.get("pass") is None:
        return {**one, "text": one["text"] + tail, "one_std_rule": one, "fidelity": None,
                "note": note}
    # (a fidelity section cached before the outcome existed: its point-estimate verdict)
    outcome = fidelity.get("outcome") or ("pass" if fidelity["pass"] else "fail")
    text = fidelity["text"] + " Paper's rule (one std over trials): " + one["text"] + tail
    return {"pass": {"pass": True, "fail": False}.get(outcome), "outcome": outcome,
            "text": text, "attacks": one["attacks"],
            "fidelity": {"pass": fidelity["pass"], "outcome": outcome,
                         "resolved": fidelity["resolved"],
                         "tolerance": fidelity["tolerance"], "text": fidelity["text"]},
            "one_std_rule": one, "note": note}


def one_std_rule(reid: dict[str, Any]) -> dict[str, Any]:
    """The paper's claim: synthetic risk within one std of the population's, for both attacks."""
    pop, syn = reid.get("population"), reid.get("synthetic")
    if not pop or not syn:
        return {"pass": None, "text": "no verdict: the population side of the re-identification "
                                      "comparison is not available (run from DP statistics)",
                "attacks": {}}
    parts, ok, per = [], True, {}
    for a in sorted(set(pop) & set(syn)):
        p, s = pop[a], syn[a]
        within = abs(s["mean"] - p["mean"]) <= p["std"]
        ok &= within
        per[a] = {"population_mean": p["mean"], "population_std": p["std"],
                  "synthetic_mean": s["mean"], "synthetic_std": s["std"],
                  "difference": s["mean"] - p["mean"], "within_one_std": within}
        parts.append(f"{a} {p['mean']:.3%} ± {p['std']:.3%} (population) vs "
                     f"{s['mean']:.3%} ± {s['std']:.3%} (synthetic)"
                     f"{'' if within else ' — outside'}")
    head = ("PASS: synthetic re-identification risk is within one standard deviation of the "
            "population's for both attacks" if ok else
            "FAIL: synthetic re-identification risk is not within one standard deviation of "
            "the population's for every attack")
    return {"pass": bool(ok), "text": head + ": " + "; ".join(parts) + ".", "attacks": per}


def run(
    preset: str = "default",
    out: str | Path = "topicslab-out",
    *,
    seed: int = 0,
    users: int | None = None,
    sets_path: str | Path | None = None,
    sets_taxonomy: str | None = None,
    stats_dir: str | Path | None = None,
    overrides: dict[str, Any] | None = None,
    progress: bool = False,
    cache: bool = True,
    log: Log | None = None,
) -> dict[str, Any]:
    """Run the release experiment; write ``OUT/report.html`` and ``OUT/results.json``.

    Args:
        preset: ``smoke`` | ``default`` | ``paper`` (see ``presets``).
        out: output directory (stage artefacts, cache record, report).
        seed: seed of the whole run (population, fit, samples, API randomness). The DP noise
            always comes from the OS CSPRNG.
        users: override the preset's number of users (reference population only).
        sets_path: run on these topic-set sequences instead of the reference population.
        sets_taxonomy: the taxonomy of ``sets_path``'s ids (default: its metadata, else
            detected from the ids, see ``topicslab.io.detect``).
        stats_dir: start from DP statistics (e.g. the public release); no population.
        overrides: other ``Preset`` fields to override (e.g. ``{"types": 100}``).
        progress: show progress bars of the long stages.
        cache: reuse finished stages recorded in ``OUT/stages.json``.
        log: called with one line per stage event.
    """
    progress = flag(progress, "progress")
    cache = flag(cache, "cache")
    if log is not None and not callable(log):  # (log=5 failed at the first stage's line)
        raise TypeError(f"log takes a function of one line of text, got {type(log).__name__}")
    if preset not in PRESETS:
        raise InputError(f"unknown preset {preset!r}; choose one of {', '.join(PRESETS)}",
                         field="--preset")
    if sets_path is not None and stats_dir is not None:
        raise InputError("give --sets or --stats, not both (--sets: the run starts from "
                         "these topic sets instead of the simulated population; --stats: from "
                         "this DP release, with no population)", field="--sets/--stats")
    cfg: Preset = PRESETS[preset].with_overrides(users=users, **(overrides or {}))
    # checked before OUT is created: a bad seed or a missing input left an empty OUT behind
    integer(seed, "seed", at_least=0)
    for field, given in (("--sets", sets_path), ("--stats", stats_dir)):
        if given is not None and not Path(given).exists():
            from topicslab.io._common import not_found

            raise InputError(not_found(str(given), "not found"), file=str(given), field=field)
    if sets_taxonomy is not None:  # (an unknown version was refused after OUT was created)
        choice(sets_taxonomy, "--taxonomy", VERSIONS)
    # an existing file as OUT was a FileExistsError; another kind's directory was written into
    out_dir = check_output_dir(out, "--out", "run")
    # a refusal of the input (no users, too few weeks, not statistics) left an empty OUT
    with no_new_empty_dirs(out_dir):
        return _run(cfg, preset, out_dir, seed, sets_path, sets_taxonomy, stats_dir,
                    progress, cache, log)


def _run(cfg: Preset, preset: str, out_dir: Path, seed: int, sets_path: str | Path | None,
         sets_taxonomy: str | None, stats_dir: str | Path | None, progress: bool,
         cache: bool, log: Log | None) -> dict[str, Any]:
    from topicslab import dp
    from topicslab import io as tio
    from topicslab.dp import ContributionBound
    from topicslab.dp.bounding import distinct_per_week

    out_dir.mkdir(parents=True, exist_ok=True)
    say: Log = log or (lambda _msg: None)
    runner = _Runner(out_dir, StageCache(out_dir, enabled=cache), say)
    results: dict[str, Any] = {"topicslab_version": topicslab.__version__, "preset": preset,
                               "seed": seed, "parameters": cfg.to_dict()}

    # ---- input: reference population, user sets, or published statistics --------------------
    sets_cache: dict[str, Any] = {}
    pop_key: str | None = None
    if stats_dir is not None:
        results["input"] = {"kind": "stats", "path": str(stats_dir),
                            "fingerprint": file_fingerprint(stats_dir)}
        results["population"] = None
    elif sets_path is not None:
        fp = file_fingerprint(sets_path)
        results["input"] = {"kind": "sets", "path": str(sets_path), "fingerprint": fp}

        def _load_user_sets() -> dict[str, Any]:
            with naming_option("--sets"):
                s = tio.read_sets(sets_path, taxonomy=sets_taxonomy)
            sets_cache["pop"] = s
            if s.n_users == 0:  # found only by the validation stage, after the fit
                raise InputError("holds no users: there is nothing to run on",
                                 file=str(sets_path), field="--sets")
            if s.n_weeks < cfg.weeks:
                one = (" (a profile table without a week column holds one week per user: "
                       "add user_id and week columns, one row per user and week)"
                       if s.n_weeks == 1 else "")
                raise InputError(f"the run needs {cfg.weeks} weeks, the file has "
                                 f"{s.n_weeks}{one}", file=str(sets_path), field="--sets")
            # a week of more than k distinct topics (sets of another k) failed only at the DP
            # stage, after OUT/stages.json was written, and without naming the file
            k = ContributionBound().k
            distinct = distinct_per_week(s.sets[:, list(cfg.release_weeks)])
            if (distinct > k).any():
                u, i = np.argwhere(distinct > k)[0]
                week = cfg.release_weeks[int(i)]
                raise InputError(f"user {int(s.user_ids[u])} has {int(distinct[u, i])} "
                                 f"distinct topics in week {week}, more than the k={k} that "
                                 f"the run's DP statistics take (the Topics API's top {k}); "
                                 f"keep at most {k} topics per week in the file",
                                 file=str(sets_path), row=int(u) + 1, field="--sets")
            if cfg.theory:
                # the bounds and the Bayes attacker take full profiles over the last r weeks:
                # sets with empty slots (as sampled ones have) were refused only at the theory
                # stage, after every other stage had run and OUT/stages.json was written
                empty = (s.sets[:, s.n_weeks - cfg.weeks:] < 0).any(axis=(1, 2))
                if empty.any():
                    u = int(np.argmax(empty))
                    raise InputError(f"user {int(s.user_ids[u])} has fewer than {s.k} topics "
                                     f"in a week, and --theory (the bounds and the Bayes "
                                     "attacker) needs full profiles: drop --theory, or give "
                                     "sets with k topics every week", file=str(sets_path),
                                     row=u + 1, field="--sets")
            return {"users": s.n_users, "weeks": s.n_weeks, "taxonomy": s.taxonomy.version,
                    "calibration": None}

        pop_key, results["population"] = runner.stage(
            "population", {"input": fp, "taxonomy": sets_taxonomy}, [], [], _load_user_sets,
            announce=False)
        pop_path: Path = Path(sets_path)
    else:
        results["input"] = {"kind": "reference", "path": None, "fingerprint": None}
        pop_path = out_dir / "pop.parquet"

        def _population() -> dict[str, Any]:
            from topicslab import population

            s = population.generate(cfg.users, cfg.weeks, seed=seed, progress=progress)
            n_cal = min(s.n_users, cfg.calibration_users)
            table = population.calibration_table(s.subset(users=slice(0, n_cal)))
            # written last: a Ctrl-C during the calibration table left OUT/pop.parquet of a
            # stage never recorded, under "no stage had finished"
            tio.write_sets(pop_path, s)
            sets_cache["pop"] = s
            return {"users": s.n_users, "weeks": s.n_weeks, "taxonomy": s.taxonomy.version,
                    "padded_user_weeks_share": table.padded_share,
                    "calibration_users": n_cal, "calibration": table.to_records(),
                    "calibration_within_tolerance": table.all_ok}

        pop_key, results["population"] = runner.stage(
            "population", {"users": cfg.users, "weeks": cfg.weeks, "seed": seed,
                           "params": _reference_fingerprint()}, [], ["pop.parquet"], _population)

    def population_sets() -> Any:
        if "pop" not in sets_cache:
            sets_cache["pop"] = tio.read_sets(
                pop_path, taxonomy=sets_taxonomy if sets_path is not None else None)
        return sets_cache["pop"]

    # ---- DP statistics ------------------------------------------------------------------------
    stats_path = out_dir / "stats"
    if stats_dir is not None:
        stats_path = Path(stats_dir)

        def _load_stats() -> dict[str, Any]:
            try:
                st = dp.load_statistics(stats_path)
            except InputError as exc:  # named the directory, not the option
                raise exc.located(field="--stats") from None
            return {"source": str(stats_path), "n_estimate": _num(st.n_estimate),
                    "topics": st.taxonomy.size, "k": st.k,
                    "ledger": None if st.ledger is None else st.ledger.public().to_dict()}

        dp_key, results["dp_statistics"] = runner.stage(
            "dp_statistics", {"input": results["input"]["fingerprint"]}, [], [], _load_stats,
            announce=False)
    else:
        lags = cfg.overlap_lags

        def _dp() -> dict[str, Any]:
            st = dp.compute_statistics(population_sets(), weeks=cfg.release_weeks,
                                       epsilon=cfg.epsilon, delta=cfg.delta,
                                       accounting=cfg.accounting,  # type: ignore[arg-type]
                                       overlap_lags=lags, seed=None)
            dp.save_statistics(stats_path, st)
            assert st.ledger is not None
            return {"source": str(stats_path), "n_estimate": float(st.n_estimate),
                    "topics": st.taxonomy.size, "k": st.k,
                    "ledger": st.ledger.public().to_dict()}

        dp_key, results["dp_statistics"] = runner.stage(
            "dp_statistics", {"weeks": list(cfg.release_weeks), "epsilon": cfg.epsilon,
                              "delta": cfg.delta, "accounting": cfg.accounting,
                              # (only when used: the key of a paper release is unchanged, so
                              # finished runs are reused, not released a second time)
                              **({"overlap_lags": lags} if lags else {})},
            # every file of the release: one missing is no finished stage (it was reused,
            # and the run failed later reading the directory)
            [pop_key or ""], ["stats/q_single.json", "stats/q_within.json",
                              "stats/q_across.json", "stats/privacy_ledger.json",
                              "stats/taxonomy.json"]
            + (["stats/q_overlap.json"] if lags else []), _dp)
    stats_memo: dict[str, Any] = {}

    def statistics() -> Any:
        if "s" not in stats_memo:
            stats_memo["s"] = dp.load_statistics(stats_path)
        return stats_memo["s"]

    # ---- fit and sample (DP statistics only from here on) ------------------------------------
    from topicslab import model as tm

    model_dir = out_dir / "model"
    n_synth = (results["population"] or {}).get("users") or cfg.users

    variant = tm.make_variant(cfg.model, cfg.types, cfg.weeks)
    optimizer: tm.FullObjective | tm.PaperAdam = (
        tm.PaperAdam() if cfg.optimizer == "paper" else tm.FullObjective(steps=cfg.fit_steps))

    def fit_once(fit_seed: int) -> Any:
        return tm.fit(statistics(), variant, optimizer, seed=fit_seed,
                      max_minutes=cfg.fit_minutes,
                      target="bar" if cfg.fit_target == "bar" else None, progress=progress)

    def _fit() -> dict[str, Any]:
        res = fit_once(seed)
        tm.save_model(model_dir, res.model)
        hist = list(res.history)
        mdl = res.model

        def quantiles(arr: Any) -> dict[str, float] | None:
            if arr is None:
                return None
            qs = (0.1, 0.25, 0.5, 0.75, 0.9)
            return {str(q): float(v) for q, v in zip(qs, np.quantile(arr, qs), strict=True)}

        return {"model": mdl.variant, "types": mdl.types,
                "modes": mdl.modes if mdl.variant == "persistent" else None,
                "weeks": cfg.weeks, "optimizer": cfg.optimizer, "steps_limit": cfg.fit_steps,
                "seconds": float(res.seconds), "steps": int(res.steps),
                "stopped": res.stopped,
                # the Frobenius bound on a step's pair statistics (0: exact steps)
                "truncation": mdl.metadata.get("truncation"),
                "final_loss": float(hist[-1]["loss"]) if hist else None,
                "persistence": mdl.metadata.get("persistence"),
                "stay_quantiles": quantiles(mdl.stay),
                "mode_stay_quantiles": quantiles(mdl.mode_stay),
                "history": hist[:: max(1, len(hist) // 200)]}

    fit_key, results["fit"] = runner.stage(
        "fit", {"model": cfg.model, "types": cfg.types, "weeks": cfg.weeks,
                "optimizer": cfg.optimizer, "steps": cfg.fit_steps,
                # how the steps computed the statistics: a change refits
                "truncation": getattr(optimizer, "truncation", None),
                "minutes": cfg.fit_minutes, "target": cfg.fit_target, "seed": seed}, [dp_key],
        ["model/model.safetensors", "model/model.json"], _fit)
    model_memo: dict[str, Any] = {}

    def fitted() -> Any:
        if "m" not in model_memo:
            model_memo["m"] = tm.load_model(model_dir)
        return model_memo["m"]

    synth_path = out_dir / "synth.parquet"

    def _sample() -> dict[str, Any]:
        t0 = time.perf_counter()
        tm.sample_to_file(fitted(), synth_path, n_synth, seed=seed + 3, weeks=cfg.weeks,
                          progress=progress)
        return {"users": n_synth, "weeks": cfg.weeks, "path": str(synth_path),
                "seconds": time.perf_counter() - t0}

    sample_key, results["sample"] = runner.stage(
        "sample", {"users": n_synth, "weeks": cfg.weeks, "seed": seed}, [fit_key],
        ["synth.parquet"], _sample)
    synth_memo: dict[str, Any] = {}

    def synthetic_sets() -> Any:
        if "s" not in synth_memo:
            synth_memo["s"] = tio.read_sets(synth_path)
        return synth_memo["s"]

    report_memo: dict[str, Any] = {}

    def let_go_of_synthetic() -> None:
        """Drop the release's synthetic table where the work ahead draws its own users or
        needs none (0.8 GB at 10M users: it sat beside each trial's fresh users, and under
        the QIF tables); the report's pair statistics are taken from it first."""
        from topicslab.population import empirical_statistics

        if "s" in synth_memo and "statistics" not in report_memo:
            report_memo["statistics"] = empirical_statistics(synth_memo["s"])
        synth_memo.clear()

    # ---- release fidelity: the verdict ----------------------------------------------------------
    from topicslab import validate as tv

    results["fidelity"] = None
    if results["population"] is not None:
        def _fidelity() -> dict[str, Any]:
            model = fitted()

            def synthetic(trial: int) -> Any:
                if trial == 0:
                    return synthetic_sets()
                let_go_of_synthetic()  # (fidelity holds one synthetic table at a time)
                return tm.sample(model, n_synth, seed=seed + 2000 + trial, weeks=cfg.weeks)

            f = tv.fidelity(population_sets(), synthetic, trials=cfg.fidelity_trials,
                            tolerance=cfg.fidelity_tolerance, targets=cfg.fidelity_targets,
                            seed=seed + 30, progress=progress)
            return f.to_dict()

        _, results["fidelity"] = runner.stage(
            "fidelity", {"weeks": cfg.weeks, "trials": cfg.fidelity_trials,
                         "targets": cfg.fidelity_targets,
                         "tolerance": cfg.fidelity_tolerance, "seed": seed},
            [pop_key or "", sample_key], [], _fidelity)

    # ---- validation ---------------------------------------------------------------------------

    def _validate() -> dict[str, Any]:
        fq = tv.fit_quality(statistics(), fitted())
        _save_errors(out_dir / "validation" / "errors.npz", fq)
        summary: dict[str, Any] = {"fit_quality": _strip_arrays(fq.to_dict())}
        syn = synthetic_sets()
        if results["population"] is not None:
            pop = population_sets()
            summary["distinct_topics"] = _to_dict(tv.distinct_topics_comparison(pop, syn))
            summary["stationarity_population"] = _to_dict(tv.stationarity(pop))
        else:
            summary["distinct_topics"] = None
            summary["stationarity_population"] = None
        summary["stationarity_synthetic"] = _to_dict(tv.stationarity(syn))
        return summary

    _, results["validation"] = runner.stage(
        "validate", {}, [dp_key, fit_key, sample_key, pop_key or ""],
        ["validation/errors.npz"], _validate)
    fq_dict = results["validation"]["fit_quality"]
    results["fit_quality"] = {
        "share_abs_within_0.1pp": fq_dict["share_abs_within_0_1pp"],
        "share_rel_within_20pct": fq_dict["share_rel_within_20pct"],
        "share_within_2sigma": fq_dict.get("share_within_2sigma"),
        "met_bar": fq_dict.get("met"),
    }

    # ---- re-identification --------------------------------------------------------------------
    from topicslab import attacks

    reid_params = {"weeks": cfg.weeks, "targets": cfg.targets, "trials": cfg.trials,
                   "seed": seed, "attacks": ["hamming", "asymmetric"]}
    reid: dict[str, Any] = {"protocol": {**reid_params, "model": "random user (Carey et al. §7)",
                                         "refit_per_trial": cfg.refit_per_trial},
                            "population": None, "synthetic": None,
                            "deviation": (REFIT_PROTOCOL if cfg.refit_per_trial
                                          else SYNTHETIC_DEVIATION)}
    if results["population"] is not None:
        def _reid_pop() -> dict[str, Any]:
            r = attacks.measure_risk(population_sets(), attacks=("hamming", "asymmetric"),
                                     weeks=cfg.weeks, targets=cfg.targets, trials=cfg.trials,
                                     seed=seed + 10, progress=progress)
            return r.to_dict()

        _, pop_risk = runner.stage("reid_population", reid_params, [pop_key or ""], [],
                                   _reid_pop)
        reid["population"] = _risk_summary(pop_risk)
        reid["population_detail"] = pop_risk

    refits: list[dict[str, Any]] = []

    def _reid_syn() -> dict[str, Any]:
        def per_trial(trial: int) -> Any:
            model = fitted()
            if cfg.refit_per_trial:
                res = fit_once(seed + 1 + trial)
                model = res.model
                q = tv.fit_quality(statistics(), model)
                refits.append({"trial": trial, "seed": seed + 1 + trial,
                               "seconds": res.seconds, "steps": res.steps,
                               "loss": res.loss,
                               "share_rel_within_20pct": q.share_rel_within_20pct,
                               "share_within_2sigma": q.share_within_2sigma})
            return tm.sample(model, n_synth, seed=seed + 1000 + trial, weeks=cfg.weeks)

        # every trial draws its own users (per_trial): of the release's table only its
        # shape (weeks, k, taxonomy: the model's) is needed, so the table is let go first
        mdl = fitted()
        template = TopicSets(np.zeros((0, cfg.weeks, mdl.k), dtype=np.int16), mdl.taxonomy)
        let_go_of_synthetic()
        r = attacks.measure_risk(template, attacks=("hamming", "asymmetric"),
                                 weeks=cfg.weeks, targets=cfg.targets, trials=cfg.trials,
                                 seed=seed + 20, progress=progress, populations=per_trial)
        out = r.to_dict()
        out["refits"] = refits or None
        return out

    _, syn_risk = runner.stage("reid_synthetic",
                               {**reid_params, "refit_per_trial": cfg.refit_per_trial},
                               [fit_key, sample_key], [], _reid_syn)
    reid["synthetic"] = _risk_summary(syn_risk)
    reid["synthetic_detail"] = syn_risk
    reid["refits"] = syn_risk.get("refits")
    results["reidentification"] = reid
    results["verdict"] = verdict(reid, results["fidelity"], results["fit"])

    # ---- theory: the population's risk against r with the Bayes attacker and the bounds ------
    results["theory"] = None
    if cfg.theory and results["population"] is not None:
        def _theory() -> dict[str, Any]:
            from topicslab.attacks.theory import theory_curve

            curve = theory_curve(population_sets(), weeks=range(1, cfg.weeks + 1),
                                 targets=cfg.targets, trials=1, seed=seed + 40,
                                 progress=progress)
            return curve.to_dict()

        _, results["theory"] = runner.stage(
            "theory", {"weeks": cfg.weeks, "targets": cfg.targets, "seed": seed},
            [pop_key or ""], [], _theory)

    # ---- the learned attack: trained on the release, attacking the population ----------------
    results["learned_attack"] = None
    if cfg.learned and results["population"] is not None:
        def _learned() -> dict[str, Any]:
            from topicslab.attacks.learned import LearnedAttackConfig
            from topicslab.attacks.learned_curve import learned_curve

            curve = learned_curve(population_sets(), synthetic_sets(),
                                  weeks=range(1, cfg.weeks + 1),
                                  config=LearnedAttackConfig(epochs=cfg.learned_epochs),
                                  targets=cfg.targets, trials=cfg.learned_trials,
                                  seed=seed + 50, progress=progress)
            return curve.to_dict()

        _, results["learned_attack"] = runner.stage(
            "learned_attack", {"weeks": cfg.weeks, "targets": cfg.targets,
                               "trials": cfg.learned_trials, "epochs": cfg.learned_epochs,
                               "seed": seed},
            [pop_key or "", sample_key], [], _learned)

    # ---- QIF and disclosure sections ---------------------------------------------------------
    let_go_of_synthetic()  # (nothing from here on needs the synthetic users)

    def _qif() -> dict[str, Any]:
        from topicslab import qif

        s = population_sets() if results["population"] is not None else None
        return qif.report_section(s, weeks=list(range(min(cfg.qif_weeks, cfg.weeks))))

    _, results["qif"] = runner.stage("qif", {"weeks": cfg.qif_weeks}, [pop_key or ""], [], _qif)

    results["disclosure"] = None
    if cfg.disclosure:
        def _disclosure() -> dict[str, Any]:
            from topicslab import disclosure

            kw: dict[str, Any] = {"seed": seed, "progress": progress}
            if cfg.disclosure_personas:
                kw["personas"] = cfg.disclosure_personas
            res = disclosure.topics_experiment(**kw)
            section = disclosure.report_section(res)
            return {"result": res.to_dict(), "section": section}

        _, results["disclosure"] = runner.stage(
            "disclosure", {"personas": cfg.disclosure_personas, "seed": seed}, [], [],
            _disclosure)

    # ---- report --------------------------------------------------------------------------------
    from topicslab.report import build_report, validate_results

    t0 = time.perf_counter()
    results["stage_seconds"] = dict(runner.seconds)
    results["cached_stages"] = list(runner.cached)
    results["stage_seconds_computed"] = dict(runner.computed_seconds)
    results["stage_peak_rss_mb"] = dict(runner.peak_rss_mb)
    results["environment"] = _environment()
    results["artefacts"] = {"report": "report.html", "results": "results.json",
                            "population": str(pop_path) if results["population"] else None,
                            "statistics": str(stats_path), "model": str(model_dir),
                            "synthetic": str(synth_path)}
    html = build_report(results, statistics=statistics(),
                        synthetic=report_memo.get("statistics") or synthetic_sets(),
                        population=(population_sets() if results["population"] is not None
                                    else None),
                        errors_path=out_dir / "validation" / "errors.npz")
    results["stage_seconds"]["report"] = time.perf_counter() - t0
    results["stage_peak_rss_mb"]["report"] = peak_rss_mb()
    results = jsonable(results)
    validate_results(results)
    # the report and its results appear together: never a new report beside old results
    with atomic_paths([out_dir / "report.html", out_dir / "results.json"]) as (report, data):
        report.write_text(html, encoding="utf-8")
        data.write_text(json.dumps(results, indent=1, allow_nan=False), encoding="utf-8")
    say(f"report: {out_dir / 'report.html'}")
    return results


def _num(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def _to_dict(x: Any) -> Any:
    return x.to_dict() if hasattr(x, "to_dict") else x


def _strip_arrays(d: dict[str, Any], limit: int = 2000) -> dict[str, Any]:
    """Drop raw per-term arrays (kept in errors.npz) from a JSON summary."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, list | np.ndarray) and len(v) > limit:
            continue
        out[k] = _strip_arrays(v, limit) if isinstance(v, dict) else v
    return out


def _save_errors(path: Path, fq: Any) -> None:
    from topicslab._atomic import atomic_dir

    # through a temporary directory: an interrupted write leaves no empty ``validation/``
    with atomic_dir(path.parent, owned=(path.name,)) as tmp, (tmp / path.name).open("wb") as fh:
        np.savez_compressed(fh, abs_err_pp=np.asarray(fq.abs_errors * 100, dtype=np.float32),
                            rel_err=np.asarray(fq.rel_errors, dtype=np.float32))


def _reference_fingerprint() -> str:
    from topicslab.population import load_reference

    return load_reference().fingerprint()


def _environment() -> dict[str, Any]:
    import os

    import torch

    env: dict[str, Any] = {"python": platform.python_version(), "platform": platform.platform(),
           "machine": platform.machine(), "processor": platform.processor() or None,
           "cpus": os.cpu_count(), "numpy": np.__version__, "torch": torch.__version__,
           "cuda": bool(torch.cuda.is_available()), "topicslab": topicslab.__version__}
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            env["memory_gib"] = round(int(fh.readline().split()[1]) / 2**20, 1)
    except OSError:
        env["memory_gib"] = None
    return env
