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

The stages are declared in ``stages.STAGES`` (what each computes, its cache key's parameters,
its upstream stages and artefacts, whether it applies to this run) over a ``RunContext``
(``context``: the run's inputs, paths and artefacts loaded once); this module runs them in
order and assembles results.json from their summaries. Every stage is cached by content
(``cache``): a re-run with the same inputs and parameters reuses finished stages; changing a
parameter re-runs that stage and everything downstream.

Public names:
    run(preset=..., out=..., ...) -> dict   runs the stages; writes OUT/results.json and
                                            OUT/report.html; returns the results
    check_run_dir(out_dir, reference=, computes_stats=, inputs=)
                                            refuses an OUT the run cannot write as itself
"""

from __future__ import annotations

import os
import platform
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

import topicslab
from topicslab._atomic import atomic_paths
from topicslab._checks import MAX_COUNT, choice, flag, integer, value_shown
from topicslab._json import dumps, jsonable
from topicslab._paths import check_output_dir, no_new_empty_dirs
from topicslab._resources import release_free_memory
from topicslab.errors import InputError
from topicslab.experiment.cache import _RECORD, Lookup, StageCache, file_fingerprint
from topicslab.experiment.context import RunContext
from topicslab.experiment.presets import PRESETS, Preset
from topicslab.experiment.sizes import check_run_size
from topicslab.experiment.stages import STAGES, reid_params
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
        found = self._reusable(name, key, upstream, artefacts, params)
        if found.summary is not None:
            return key, self._reuse(name, found.summary)
        if announce or found.reason:
            self.log(f"{name}: recomputing ({found.reason})" if found.reason
                     else f"{name}: running")
        self.redone[key] = name
        t0 = time.perf_counter()
        summary = fn()
        release_free_memory()  # (what the stage freed, before the next stage's reads)
        self.seconds[name] = time.perf_counter() - t0
        summary = jsonable(summary)
        self.computed_seconds[name] = self.seconds[name]
        self.peak_rss_mb[name] = peak_rss_mb()
        self.cache.record(name, key, summary, self.seconds[name], artefacts, params)
        self.log(f"{name}: {self.seconds[name]:.1f} s")
        return key, summary

    def _reusable(self, name: str, key: str, upstream: list[str],
                  artefacts: list[str], params: dict[str, Any] | None = None) -> Lookup:
        """The cached summary of the stage, or why it runs (``""``: it never finished with
        this key). Upstream comes first: artefacts made from a stage recomputed in this run
        are stale whatever their hash, so they are not hashed for nothing."""
        stale_input = next((self.redone[k] for k in upstream if k in self.redone), None)
        if stale_input is None:
            return self.cache.lookup(name, key, artefacts, params)
        if self.cache.has_record(name):
            # (a stage recorded with another key was "running", as if it had never run)
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


#: what a run writes under its --out: files, and directories (``stats`` only when the run
#: computes the release, ``pop.parquet`` only for the reference population)
RUN_FILES = ("synth.parquet", "report.html", "results.json", "validation/errors.npz")
RUN_DIRS = ("model", "validation")


def check_run_dir(out_dir: Path, *, reference: bool, computes_stats: bool,
                  inputs: Sequence[tuple[str, str | Path | None]] = ()) -> None:
    """Refuse, before any stage, an output directory the run cannot write into as itself:

    * one that holds files but is no run's output (no stages.json): the run would mix its
      stages into, say, a fitted model's directory or a statistics release, and replace
      same-named files there (model/, stats/, pop.parquet);
    * one another run is writing now (held through ``exclusive_dir``);
    * one where a name the run writes is of the other kind: a directory named report.html or
      results.json failed the run at its very end, a file named model after the stages
      before the fit, a directory model/model.json after the fit itself;
    * one whose model/, validation/ or stats/ is a link out of it: the stages' files were
      written through the link (model -> another run's model replaced that run's model);
    * one where a file the run writes is a link (refused by the stage's write, after the
      work);
    * one holding an earlier run's pop.parquet or stats/ that this run (from --sets or
      --stats) does not replace: they stayed beside the new model and report;
    * one holding an input (``inputs``: ``(option, path)`` pairs) where the run writes a
      file: ``--sets R/synth.parquet --out R`` replaced its own input with the run's sample
      (exit 0; the same command then started over, the input's fingerprint changed).

    ``reference``: the run simulates the population (pop.parquet is its own);
    ``computes_stats``: it computes the DP release (stats/ is its own).
    """
    from topicslab._paths import _same_or_inside, refuse_held_elsewhere
    from topicslab.dp.release import RELEASE_FILES

    out_dir = Path(out_dir)
    # another run writing OUT now (its first stage: files, no stages.json yet) was refused as
    # "not a run's output directory; choose a new or empty directory"
    refuse_held_elsewhere(out_dir, "--out")
    record = out_dir / _RECORD
    if out_dir.is_dir() and not record.is_file() and os.path.lexists(record):
        # (a directory, a pipe or a link to /dev/zero there was "holds files but no
        # stages.json": it has one, of the wrong kind)
        kind = ("a directory" if record.is_dir() else "a link to a missing file"
                if not record.exists() else "not a regular file (a pipe, socket or device)")
        raise InputError(f"is {kind}, where a run keeps the record of its stages; remove it "
                         "(the run then starts over), or choose another --out",
                         file=str(record), field="--out")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not record.is_file():
        raise InputError(f"holds files but no {_RECORD}, so it is not a run's output "
                         "directory; choose a new or empty directory (or an earlier run's)",
                         file=str(out_dir), field="--out")
    declared = [name for stage in STAGES if not callable(stage.artefacts)
                for name in stage.artefacts]
    files = [*RUN_FILES, *declared,
             *([f"stats/{name}" for name in RELEASE_FILES] if computes_stats else [])]
    files = [name for name in dict.fromkeys([*files, _RECORD])
             if name != "pop.parquet" or reference]
    _check_inputs_not_written(out_dir, files, inputs)
    for name in files:
        if (out_dir / name).is_symlink():
            # (the stage's closing write refuses a link, after the work: R/report.html ->
            # elsewhere failed the run at its very end, R/synth.parquet after the fit and
            # the sample, naming no option)
            raise InputError(f"is a symbolic link (to {os.readlink(out_dir / name)}) where "
                             "the run writes a file, which it would not replace: remove the "
                             "link, or choose another --out", file=str(out_dir / name),
                             field="--out")
        if (out_dir / name).is_dir() and not (out_dir / name).is_symlink():
            raise InputError("is a directory where the run writes a file: remove it, or "
                             "choose another --out", file=str(out_dir / name), field="--out")
        if (out_dir / name).exists() and not (out_dir / name).is_file() \
                and not (out_dir / name).is_dir():
            # a pipe there (OUT/synth.parquet, of an earlier run): the cache's fingerprint of
            # the stage's artefact read it, and the run waited for a writer for ever
            raise InputError("is a pipe, socket or device where the run writes a file: "
                             "remove it, or choose another --out", file=str(out_dir / name),
                             field="--out")
    for name in [*RUN_DIRS, *(["stats"] if computes_stats else [])]:
        path = out_dir / name
        if path.exists() and not path.is_dir():
            raise InputError("is a file where the run writes a directory: remove it, or "
                             "choose another --out", file=str(path), field="--out")
        if path.is_symlink() and not _same_or_inside(path.resolve(), out_dir.resolve()):
            raise InputError(f"is a link to {path.resolve()}, outside --out; the run "
                             "replaces this directory's files, which would change that "
                             "other location: remove the link, or choose another --out",
                             file=str(path), field="--out")
    if record.is_file():
        _check_no_other_kind(out_dir, reference=reference, computes_stats=computes_stats,
                             inputs=inputs)


def _check_no_other_kind(out_dir: Path, *, reference: bool, computes_stats: bool,
                         inputs: Sequence[tuple[str, str | Path | None]]) -> None:
    """Refuse a run's directory holding the population or the DP release of an earlier run
    that this run would not write: ``run --stats S`` (or ``--sets P``) over a run of the
    reference population left that run's pop.parquet and stats/ beside the new model, sample
    and report, which describe other data (a directory of two runs). The run's own input
    there (``--sets R/pop.parquet``, ``--stats R/stats``) is this run's, not stale."""
    from topicslab.dp.release import RELEASE_FILES

    given = {os.path.realpath(p) for _, p in inputs if p is not None}
    option = next((o for o, p in inputs if p is not None), "--out")
    kept = []
    if not reference:
        pop = out_dir / "pop.parquet"
        if os.path.lexists(pop) and os.path.realpath(pop) not in given:
            kept.append(("pop.parquet", "population"))
    if not computes_stats:
        stats = out_dir / "stats"
        if (os.path.realpath(stats) not in given
                and any(os.path.lexists(stats / name) for name in RELEASE_FILES)):
            kept.append(("stats/", "DP release"))
    if kept:
        names = " and ".join(name for name, _ in kept)
        what = " and ".join(w for _, w in kept)
        raise InputError(f"holds an earlier run's {what} ({names}), which this run from "
                         f"{option} does not replace: the directory would hold two runs' data "
                         "(its model, sample and report describe other data); choose another "
                         f"--out (or remove {names})", file=str(out_dir), field="--out")


def _check_inputs_not_written(out_dir: Path, files: Sequence[str],
                              inputs: Sequence[tuple[str, str | Path | None]]) -> None:
    """Refuse an input that is (or holds) a file the run writes under ``out_dir``: the
    stage's rename replaces the file where it is (a link there is replaced, not followed)."""
    from topicslab._paths import _read_files, _same_or_inside

    written = {name: Path(os.path.realpath((out_dir / name).parent)) / Path(name).name
               for name in files}
    for option, given in inputs:
        if given is None:
            continue
        for read, shown in _read_files(given):
            real = Path(os.path.realpath(read))
            for name, path in written.items():
                if real == path or _same_or_inside(path, real):
                    how = "is" if real == path else "holds"
                    raise InputError(
                        f"{how} the run's own {name} in --out {out_dir}, which the run "
                        f"replaces as it runs; copy {shown} out of --out first, or choose "
                        "another --out", file=str(given), field=option)


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
    fields = _overrides(overrides, users)
    cfg: Preset = PRESETS[preset].with_overrides(**fields)
    check_unused(fields["users"], fields, sets=sets_path is not None, stats=stats_dir is not None)
    check_run_size(cfg, users_known=sets_path is None and stats_dir is None,
                   out_dir=Path(out) if isinstance(out, str | os.PathLike) else None)
    # checked before OUT is created: a bad seed or a missing input left an empty OUT behind
    # (2**64 was refused by the first stage that drew with it, after the DP release: the
    # CLI's --seed takes at most an int64)
    integer(seed, "seed", at_least=0, at_most=MAX_COUNT)
    for field, given in (("--sets", sets_path), ("--stats", stats_dir)):
        if given is not None and not Path(given).exists():
            from topicslab.io._common import not_found

            raise InputError(not_found(str(given), "not found"), file=str(given), field=field)
    if sets_taxonomy is not None:  # (an unknown version was refused after OUT was created)
        choice(sets_taxonomy, "--taxonomy", VERSIONS)
    # an existing file as OUT was a FileExistsError; another kind's directory was written into
    out_dir = check_output_dir(out, "--out", "run")
    check_run_dir(out_dir, reference=sets_path is None and stats_dir is None,
                  computes_stats=stats_dir is None,
                  inputs=[("--sets", sets_path), ("--stats", stats_dir)])
    # a refusal of the input (no users, too few weeks, not statistics) left an empty OUT
    with no_new_empty_dirs(out_dir):
        return _run(cfg, preset, out_dir, seed, sets_path, sets_taxonomy, stats_dir,
                    progress, cache, log)


def check_unused(users: Any, given: Mapping[str, Any], *, sets: bool, stats: bool) -> None:
    """Refuse a size or option that a run of these inputs would not use (``topicslab run``'s
    options and ``run``'s ``users`` and ``overrides`` alike: from Python, ``users=500`` with
    ``sets_path``, or ``overrides={"stats_weeks": (0, 1)}`` with ``stats_dir``, was ignored
    without a word). ``given``: the preset fields given (``None``: not given)."""
    def has(name: str) -> bool:
        return given.get(name) is not None

    if users is not None and (sets or stats):
        raise InputError("--users sizes the reference population only; with "
                         f"{'--sets' if sets else '--stats'} there is none (drop --users)",
                         field="--users")
    for name in ("learned_epochs", "learned_trials"):
        option = "--" + name.replace("_", "-")
        if has(name) and given.get("learned") is not True:
            raise InputError(f"{option} sizes the learned-attack section: add --learned (or "
                             f"drop {option})", field=option)
    if not stats:
        return
    for name, option in (("stats_weeks", "--release-weeks"), ("accounting", "--accounting")):
        if has(name):
            raise InputError(f"{option} shapes the DP release that the run computes: a run "
                             f"from --stats reads one (drop {option})", field=option)
    if has("overlap_lags"):
        raise InputError("--overlap-lags sizes the DP release that the run computes: a run "
                         "from --stats reads one (drop --overlap-lags)", field="--overlap-lags")
    if has("fidelity_trials"):
        raise InputError("--fidelity-trials sizes the release-fidelity check, which compares "
                         "with the population: a run from --stats has none (drop "
                         "--fidelity-trials, or give --sets)", field="--fidelity-trials")
    for name, does in (("theory", "measures"), ("learned", "attacks")):
        if given.get(name) is True:
            raise InputError(f"--{name} {does} the population: a run from --stats has none "
                             f"(drop --{name}, or give --sets)", field="--" + name)


def _overrides(overrides: Any, users: int | None) -> dict[str, Any]:
    """``overrides`` with ``users``: a mapping of text keys (a list was "argument after **
    must be a mapping", a key 1 "keywords must be strings"), where ``users`` may be given
    either way but not both (``overrides={"users": 500}`` was "got multiple values for
    keyword argument 'users'")."""
    if overrides is None:
        overrides = {}
    if not isinstance(overrides, Mapping):
        raise TypeError(f"overrides takes a dict of preset fields, got "
                        f"{type(overrides).__name__}")
    for key in overrides:
        if not isinstance(key, str):
            raise InputError(f"unknown override {value_shown(key, 40)}: the keys are the "
                             "names of a preset's fields", field="overrides")
    if users is not None and overrides.get("users") is not None:
        raise InputError("users is given twice, as an argument and in overrides: give it once",
                         field="users")
    return {**overrides, "users": users if users is not None else overrides.get("users")}


def _run(cfg: Preset, preset: str, out_dir: Path, seed: int, sets_path: str | Path | None,
         sets_taxonomy: str | None, stats_dir: str | Path | None, progress: bool,
         cache: bool, log: Log | None) -> dict[str, Any]:
    out_dir.mkdir(parents=True, exist_ok=True)
    say: Log = log or (lambda _msg: None)
    runner = _Runner(out_dir, StageCache(out_dir, enabled=cache), say)
    given = stats_dir if stats_dir is not None else sets_path
    ctx = RunContext(cfg, preset, out_dir, seed,
                     sets_path=None if sets_path is None else Path(sets_path),
                     sets_taxonomy=sets_taxonomy,
                     stats_dir=None if stats_dir is None else Path(stats_dir),
                     progress=progress,
                     input_fingerprint=None if given is None else file_fingerprint(given))
    for stage in STAGES:
        if not stage.when(ctx):
            continue
        if stage.before is not None:
            stage.before(ctx)
        ctx.keys[stage.name], ctx.summaries[stage.name] = runner.stage(
            stage.name, stage.params(ctx), ctx.upstream(*stage.upstream), stage.files(ctx),
            partial(stage.compute, ctx), announce=stage.announce)
    results = _write_report(ctx, runner, _results(ctx, given))
    say(f"report: {out_dir / 'report.html'}")
    return results


def _results(ctx: RunContext, given: str | Path | None) -> dict[str, Any]:
    """results.json's sections (before the timings) from the stages' summaries."""
    cfg, got = ctx.cfg, ctx.summaries
    results: dict[str, Any] = {
        "topicslab_version": topicslab.__version__, "preset": ctx.preset, "seed": ctx.seed,
        "parameters": cfg.to_dict(),
        "input": {"kind": ctx.input_kind,
                  "path": None if given is None else str(given),
                  "fingerprint": ctx.input_fingerprint},
    }
    for section, stage in (("population", "population"), ("dp_statistics", "dp_statistics"),
                           ("fit", "fit"), ("sample", "sample"), ("fidelity", "fidelity"),
                           ("validation", "validate")):
        results[section] = got.get(stage)
    fq = results["validation"]["fit_quality"]
    results["fit_quality"] = {
        "share_abs_within_0.1pp": fq["share_abs_within_0_1pp"],
        "share_rel_within_20pct": fq["share_rel_within_20pct"],
        "share_within_2sigma": fq.get("share_within_2sigma"),
        "met_bar": fq.get("met"),
    }
    reid: dict[str, Any] = {
        "protocol": {**reid_params(ctx), "model": "random user (Carey et al. §7)",
                     "refit_per_trial": cfg.refit_per_trial},
        "population": None, "synthetic": None,
        "deviation": REFIT_PROTOCOL if cfg.refit_per_trial else SYNTHETIC_DEVIATION}
    if "reid_population" in got:
        reid["population"] = _risk_summary(got["reid_population"])
        reid["population_detail"] = got["reid_population"]
    syn_risk = got["reid_synthetic"]
    reid["synthetic"] = _risk_summary(syn_risk)
    reid["synthetic_detail"] = syn_risk
    reid["refits"] = syn_risk.get("refits")
    results["reidentification"] = reid
    results["verdict"] = verdict(reid, results["fidelity"], results["fit"])
    for section in ("theory", "learned_attack", "qif", "disclosure"):
        results[section] = got.get(section)
    return results


def _write_report(ctx: RunContext, runner: _Runner, results: dict[str, Any],
                  ) -> dict[str, Any]:
    """OUT/report.html and OUT/results.json, together (never a new report beside old
    results)."""
    from topicslab.report import build_report, validate_results

    t0 = time.perf_counter()
    results["stage_seconds"] = dict(runner.seconds)
    results["cached_stages"] = list(runner.cached)
    results["stage_seconds_computed"] = dict(runner.computed_seconds)
    results["stage_peak_rss_mb"] = dict(runner.peak_rss_mb)
    results["environment"] = _environment()
    results["artefacts"] = {"report": "report.html", "results": "results.json",
                            "population": (str(ctx.pop_path) if results["population"]
                                           else None),
                            "statistics": str(ctx.stats_path), "model": str(ctx.model_dir),
                            "synthetic": str(ctx.synth_path)}
    html = build_report(results, statistics=ctx.statistics(),
                        synthetic=ctx.synthetic_for_report(),
                        population=ctx.population_for_report() if ctx.has_population else None,
                        errors_path=ctx.out / "validation" / "errors.npz")
    results["stage_seconds"]["report"] = time.perf_counter() - t0
    results["stage_peak_rss_mb"]["report"] = peak_rss_mb()
    results = jsonable(results)
    validate_results(results)
    with atomic_paths([ctx.out / "report.html", ctx.out / "results.json"]) as (report, data):
        report.write_text(html, encoding="utf-8")
        data.write_text(dumps(results, indent=1), encoding="utf-8")
    return results


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
