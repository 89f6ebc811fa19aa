"""``topicslab run``: the main job (see ``topicslab.experiment``)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from topicslab._checks import MAX_STEPS, MIN_FIT_MINUTES
from topicslab.cli._app import (
    MAX_SEED,
    SETS_TAXONOMY_HELP,
    app,
    err,
    on_interrupt,
    out,
    sets_taxonomy,
)
from topicslab.errors import InputError


def _stage_records(out_dir: Path) -> dict[str, Any]:
    """The finished stages' records in ``OUT/stages.json`` (none when unreadable)."""
    from topicslab._json import loads, read_document

    try:
        record = loads(read_document(out_dir / "stages.json", "stages.json"))
    except (OSError, ValueError, InputError):
        record = {}
    # a record edited by hand (a number or null: TypeError and a traceback on Ctrl-C; text:
    # its letters listed as stages) holds no finished stage
    return ({name: stage for name, stage in record.items() if isinstance(stage, dict)}
            if isinstance(record, dict) else {})


def _stages_kept(out_dir: Path, this_run: Sequence[str] | None = None,
                 before: dict[str, Any] | None = None) -> str:
    """What an interrupted run leaves: the stages it finished or reused (``this_run``, and
    those whose record changed since ``before``; every recorded one when both are ``None``)
    and those an earlier run recorded, which the same command reuses only where that run's
    options were the same (an interrupted ``--seed 1`` over a finished ``--seed 0`` run
    listed the old fit, sample, ... as stages it would continue from)."""
    records = _stage_records(out_dir)
    finished = list(records)
    if this_run is None and before is None:
        ours = finished
    else:
        ours = [name for name in finished if name in (this_run or ())
                or records[name] != (before or {}).get(name)]
    earlier = [name for name in finished if name not in ours]
    if not ours:
        line = "no stage had finished (the same command starts over)"
    else:
        line = (f"finished stages kept in {out_dir} ({', '.join(ours)}); the same command "
                "continues from them")
    if earlier:
        line += (f"; {', '.join(earlier)} {'is' if len(earlier) == 1 else 'are'} an earlier "
                 "run's, reused only if that run's options were the same")
    return line


def _retire_stale_report(out_dir: Path, before: dict[str, Any]) -> list[str]:
    """Remove an earlier run's report.html and results.json once a stopped or failed run has
    replaced stages they describe (the names removed). An interrupted ``--seed 1`` over a
    finished ``--seed 0`` run left the old report and results beside the new population,
    release and model; the next run writes both again."""
    records = _stage_records(out_dir)
    if all(records[name] == before.get(name) for name in records):
        return []  # no stage was replaced: the report still describes the directory
    gone = []
    for name in ("report.html", "results.json"):
        path = out_dir / name
        if path.is_file() or path.is_symlink():
            path.unlink()
            gone.append(name)
    return gone


def _check_size(preset: str, users: int | None, overrides: dict[str, Any],
                users_known: bool, out_dir: Path, stats_dir: Path | None = None) -> None:
    """Refuse, before any stage, a run whose stages surely cannot fit
    (``experiment.sizes.check_run_size``, which ``experiment.run`` calls again for its Python
    callers) or whose release has no week pair for a model of several weeks; the run's other
    options are checked by ``Preset``."""
    from topicslab.experiment.presets import PRESETS
    from topicslab.experiment.sizes import check_run_size

    if preset not in PRESETS:
        return  # the pipeline names the unknown preset
    cfg = PRESETS[preset].with_overrides(users=users, **overrides)
    if stats_dir is not None and (stats_dir / "privacy_ledger.json").is_file():
        from topicslab.cli.model import check_week_pair
        from topicslab.dp.ledger import load_ledger

        check_week_pair(load_ledger(stats_dir), cfg.weeks, stats_dir, "--stats", fix="")
    check_run_size(cfg, users_known=users_known, out_dir=out_dir)
    typed = overrides.get("targets")
    if users_known and isinstance(typed, int) and typed > cfg.users:
        # clamped to the users, as reid does, but said (it was silent)
        err.print(f"[yellow]note[/]: --targets {typed:,} but only {cfg.users:,} users: every "
                  "user is a target")


def _release_weeks(text: str | None) -> tuple[int, ...] | None:
    """``--release-weeks``: ``all`` (every simulated week) or comma-separated week indices."""
    from topicslab._checks import comma_items

    if text is None or text.strip().lower() == "all":
        return None
    try:
        weeks = tuple(int(w) for w in comma_items(text))
        if not weeks:
            raise ValueError(text)
        return weeks
    except ValueError:
        raise InputError(f"expected all or comma-separated week indices (e.g. 0,1), got "
                         f"{text!r}", field="--release-weeks") from None


@app.command()
def run(
    preset: str = typer.Option("default", "--preset",
                               help="smoke (< 1 min), default (1M users), paper (10M users)."),
    out_dir: Path = typer.Option(Path("topicslab-out"), "--out", "-o", help="Output directory."),
    seed: int = typer.Option(0, "--seed", min=0, max=MAX_SEED,
                             help="Seed of the whole run (not the DP noise)."),
    users: int | None = typer.Option(None, "--users", min=1, help="Override the preset's users."),
    sets: Path | None = typer.Option(None, "--sets",
                                     help="Run on these topic sets instead of the reference."),
    taxonomy: str | None = typer.Option(None, "--taxonomy", help=SETS_TAXONOMY_HELP),
    stats: Path | None = typer.Option(None, "--stats",
                                      help="Start from DP statistics (e.g. the public release)."),
    model: str | None = typer.Option(
        None, "--model", help="persistent (default) | paper (Dick et al. §5's types)."),
    types: int | None = typer.Option(None, "--types", min=1, help="Override T."),
    fit_steps: int | None = typer.Option(None, "--fit-steps", min=1, max=MAX_STEPS,
                                         help="Override the fit's full-objective steps."),
    fit_minutes: float | None = typer.Option(None, "--fit-minutes", min=MIN_FIT_MINUTES,
                                             help="Override the fit's time cap."),
    targets: int | None = typer.Option(None, "--targets", help="Override the targets."),
    trials: int | None = typer.Option(None, "--trials",
                                      help="Override the paper protocol's trials."),
    refit_per_trial: bool = typer.Option(
        False, "--refit-per-trial",
        help="Re-fit the model in every trial of the paper's protocol (as the paper does; "
             "one fit per trial) and report the fit-to-fit spread."),
    fidelity_trials: int | None = typer.Option(
        None, "--fidelity-trials", min=1,
        help="Trials of the release-fidelity check (every user a target; default 2)."),
    release_weeks: str | None = typer.Option(
        None, "--release-weeks",
        help="Weeks the DP statistics count: all (default: every simulated week, averaged, as "
             "Dick et al. §4.1 define the statistics) or consecutive weeks, e.g. 0,1 (the "
             "paper's counted weeks)."),
    accounting: str | None = typer.Option(
        None, "--accounting",
        help="tight (default: one zCDP budget for the whole release, proven for the noise "
             "added) | paper (the paper's basic composition: 25/25/50 for two weeks)."),
    overlap_lags: int | None = typer.Option(
        None, "--overlap-lags", min=0,
        help="Add the persistence statistic with this many lags to the DP release "
             "(experimental: measured to widen the long-trace risk gap, docs/fidelity.md §4c; "
             "default 0: the paper's release, pair statistics only)."),
    no_disclosure: bool = typer.Option(False, "--no-disclosure",
                                       help="Skip the disclosure section."),
    theory: bool = typer.Option(
        False, "--theory",
        help="Add the population's risk against r with the Bayes attacker and the bounds "
             "(Carey et al. Fig. 2; the Bayes attacker exact up to 4 weeks, sampled beyond; the "
             "other bounds exact up to 3 weeks)."),
    learned: bool = typer.Option(
        False, "--learned",
        help="Add the learned attack (Carey et al. App. E.1.3) trained on the synthetic sample "
             "and on the population, attacking the population for r = 1..weeks (about 9 min "
             "at 1M users and 4 weeks on 2 cores; see docs/learned_attack.md)."),
    learned_epochs: int | None = typer.Option(
        None, "--learned-epochs",
        help="Its gradient epochs after the counted co-occurrence (default 0: nearly all of "
             "the measured gain; each epoch adds ~5 min per r at 1M users: two models)."),
    learned_trials: int | None = typer.Option(
        None, "--learned-trials", help="Its trials of --targets targets per r (default 2)."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Recompute every stage."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars."),
) -> None:
    """Run the release experiment (population → DP statistics → fit → sample → validation →
    re-identification → QIF, disclosure) and write OUT/report.html and OUT/results.json."""
    from topicslab._paths import (
        check_output_dir,
        exclusive_dir,
        no_new_empty_dirs,
        refuse_overwriting_inputs,
    )
    from topicslab.experiment import run as run_experiment
    from topicslab.experiment.pipeline import check_run_dir, check_unused

    check_output_dir(out_dir, "--out", "run")
    sets_taxonomy(taxonomy)
    if taxonomy is not None and sets is None:
        raise InputError("--taxonomy tells the taxonomy of --sets: give --sets (the reference "
                         "population and --stats carry their own)", field="--taxonomy")
    from topicslab.io._common import is_pattern, not_found

    if sets is not None and is_pattern(str(sets)):  # (was "file not found")
        raise InputError("is a pattern (*, ? or [); a run reads one file or a directory of "
                         "TFRecord shards (and keeps its fingerprint): give the shards' "
                         "directory", file=str(sets), field="--sets")
    for option, given, is_dir in (("--sets", sets, False), ("--stats", stats, True)):
        if given is not None and not given.exists():
            raise InputError(not_found(str(given), f"{'directory' if is_dir else 'file'} not "
                                                   "found"), file=str(given), field=option)
        if given is not None and is_dir and not given.is_dir():
            raise InputError("is a file; give the directory of DP statistics that topicslab "
                             "stats writes", file=str(given), field=option)
    refuse_overwriting_inputs([("--out", out_dir)], [("--sets", sets), ("--stats", stats)])
    # --model and the other overrides are checked by Preset (one place for the run's options)
    overrides = {"model": model, "types": types, "fit_steps": fit_steps,
                 "fit_minutes": fit_minutes, "targets": targets, "trials": trials,
                 "refit_per_trial": True if refit_per_trial else None,
                 "fidelity_trials": fidelity_trials, "overlap_lags": overlap_lags,
                 "stats_weeks": _release_weeks(release_weeks), "accounting": accounting,
                 "disclosure": False if no_disclosure else None,
                 "theory": True if theory else None,
                 "learned": True if learned else None, "learned_epochs": learned_epochs,
                 "learned_trials": learned_trials}
    # what a run of these inputs would not use (checked again by experiment.run)
    check_unused(users, {**overrides, "stats_weeks": release_weeks}, sets=sets is not None,
                 stats=stats is not None)
    # (experiment.run checks again, for its Python callers; here before the size checks)
    check_run_dir(out_dir, reference=sets is None and stats is None,
                  computes_stats=stats is None, inputs=[("--sets", sets), ("--stats", stats)])
    _check_size(preset, users, overrides, users_known=sets is None and stats is None,
                out_dir=out_dir, stats_dir=stats)
    # every stage's artefacts are all-or-nothing and recorded once complete, so Ctrl-C keeps
    # the finished stages and the same command carries on from them
    done: list[str] = []  # the stages this run finished or reused, from its log lines

    def log(msg: str) -> None:
        stage = re.fullmatch(r"(\w+): (?:cached|\d+(?:\.\d+)? s)", msg)
        if stage:
            done.append(stage.group(1))
        err.print(f"[dim]·[/] {escape(msg)}", highlight=False)

    before = _stage_records(out_dir)
    retired: list[str] = []
    on_interrupt(lambda: _stages_kept(out_dir, done, before)
                 + (f"; the earlier {' and '.join(retired)} were removed (they described "
                    "the stages replaced)" if retired else ""))
    # two runs into one --out at once mixed their stages (the report and release of one,
    # the model of the other): the second is refused while the first holds the directory
    with no_new_empty_dirs(out_dir), exclusive_dir(out_dir, "--out"):
        try:
            res = run_experiment(preset, out_dir, seed=seed, users=users, sets_path=sets,
                                 sets_taxonomy=taxonomy,
                                 stats_dir=stats, overrides=overrides, progress=not quiet,
                                 cache=not no_cache,
                                 log=log)
        except BaseException:
            retired.extend(_retire_stale_report(out_dir, before))
            raise
    t = Table(title=f"topicslab run --preset {preset}")
    t.add_column("", no_wrap=True)
    t.add_column("value (fidelity: population → synthetic, gap ± 95%)", justify="right")
    fq = res["fit_quality"]
    t.add_row("fit: terms within 0.1 pp", f"{fq['share_abs_within_0.1pp']:.4%}")
    t.add_row("fit: terms ≥ 0.1% within 20%", f"{fq['share_rel_within_20pct']:.2%}")
    if fq.get("share_within_2sigma") is not None:
        t.add_row("fit: terms within 2σ of the DP noise", f"{fq['share_within_2sigma']:.2%}")
    fid = res.get("fidelity")
    for g in (fid or {}).get("gaps", []):
        if g["gap"] is not None:
            t.add_row(f"fidelity r={g['weeks']} {g['attack']}",
                      f"{g['population']:.3%} → {g['synthetic']:.3%} "
                      f"({g['gap']:+.1%} ± {1.96 * g['gap_se']:.1%})")
    for side in ("population", "synthetic"):
        for att, v in sorted((res["reidentification"].get(side) or {}).items()):
            t.add_row(f"paper protocol: {side} {att}", f"{v['mean']:.3%} ± {v['std']:.3%}")
    for stage, sec in res["stage_seconds"].items():
        cached = " (cached)" if stage in res["cached_stages"] else ""
        t.add_row(f"time: {stage}{cached}", f"{sec:.1f} s")
    t.add_row("time: total", f"{sum(res['stage_seconds'].values()):.1f} s")
    out.print(t)
    v = res["verdict"]
    colour = "yellow" if v["pass"] is None else ("green" if v["pass"] else "red")
    out.print(f"[{colour}]{escape(v['text'])}[/]", highlight=False)
    out.print(f"wrote {escape(str(out_dir / 'report.html'))} and "
              f"{escape(str(out_dir / 'results.json'))}")
