"""``topicslab fit``, ``topicslab sample``, ``topicslab validate``: thin wrappers over
``topicslab.model`` and ``topicslab.validate``.

* fit      DP statistics dir -> ``model.fit`` -> model dir (``model.safetensors``,
           ``model.json``, ``fit_history.json``; ``--export-release`` writes
           ``output_parameters.json``)
* sample   model dir (or a release ``output_parameters.json``) -> ``model.sample_to_file``
* validate statistics + model [+ population] -> ``validate.fit_quality``,
           ``distinct_topics_comparison``, ``stationarity`` -> table and ``--json``
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import typer
from rich.markup import escape
from rich.table import Table

from topicslab._checks import MAX_STEPS
from topicslab._numbers import format_number
from topicslab.cli._app import MAX_SEED, app, err, given, on_interrupt, out
from topicslab.errors import InputError, naming_option

#: topics per week: the Topics API's top 5; a k far above it comes from statistics that are
#: not of top-k sets (k inferred without a privacy ledger) and would need tens of GB
MAX_K = 20


#: bytes per (user, week, slot) while sampling: the int16 sets and the draw's intermediates
#: (generous: a default chunk of 1M users x 4 weeks x 5 slots comes to ~0.3 GiB)
_SAMPLE_BYTES_PER_SLOT = 16


#: shard names are stem-NNNNN-of-MMMMM: five digits, which is also what a later write
#: recognises (and replaces) as an earlier set's shards
MAX_SHARDS = 99_999


def _check_shards(shards: int | None, users: int, fmt: str) -> None:
    """A TFRecord shard holds at least one user, and at most 99,999 shards keep the names a
    later write recognises; --shards applies to TFRecord only."""
    if shards is None:
        return
    if fmt != "tfrecord":
        raise InputError("--shards applies to --format tfrecord", field="--shards")
    most = min(max(users, 1), MAX_SHARDS)
    if shards > most:
        why = ("a shard holds at least one user" if most == max(users, 1) else
               "shard names have five digits (stem-NNNNN-of-MMMMM)")
        raise InputError(f"--shards must be in 1..{most:,}, got {shards:,}: {why}",
                         field="--shards")


def _check_disk(out_path: Path, users: int, weeks: int) -> None:
    """Refuse synthetic users whose file surely cannot fit on its disk, naming --users."""
    from topicslab._resources import require_disk
    from topicslab.io.parquet_sets import PARQUET_BYTES_PER_USER_WEEK

    require_disk(float(users) * weeks * PARQUET_BYTES_PER_USER_WEEK,
                 f"{users:,} synthetic users x {weeks} weeks", out_path, field="--users",
                 hint="use fewer --users")


def _check_sample_size(users: int, weeks: int, k: int, hint: str, field: str) -> None:
    from topicslab._resources import require_memory

    # (named no option: "error: sampling 1,000,000,000,000 users x 4 weeks at once needs")
    require_memory(float(users) * weeks * k * _SAMPLE_BYTES_PER_SLOT,
                   f"sampling {users:,} users x {weeks:,} weeks at once", hint=hint,
                   field=field)


def _check_threads(threads: int | None) -> None:
    """More torch threads than the CPUs this process may use only oversubscribes them (and a
    huge count fails allocating the thread pool): refuse, naming --threads."""
    from topicslab._resources import usable_cpus

    cpus = usable_cpus()
    if threads is not None and cpus and threads > cpus:
        raise InputError(f"--threads {threads} is more than the {cpus} CPUs this process may "
                         "use", field="--threads")


#: the most paper epochs a fit may ask for (and ``_checks.MAX_STEPS`` full-objective steps):
#: 8,000 epochs (300 steps) are the defaults and a fit usually stops earlier, at the DP noise
#: floor; 10^12 ran until stopped by hand (--max-minutes is the way to give a fit more time)
MAX_EPOCHS = 1_000_000


def _check_iterations(steps: int | None, epochs: int | None) -> None:
    for flag, value, most, default in (("--steps", steps, MAX_STEPS, 300),
                                       ("--epochs", epochs, MAX_EPOCHS, 8000)):
        if value is not None and value > most:
            raise InputError(f"{flag} must be in 1..{most:,} (the default is {default:,}; "
                             f"--max-minutes gives a fit a time budget), got {value:,}",
                             field=flag)


#: the largest learning rate: Adam moves every logit by about lr per step, so past 1,000 one
#: step saturates every softmax (the defaults are 0.3 and 1.0); 1e300 overflowed float32
MAX_LR = 1000.0


def _lr(lr: float | None) -> float | None:
    if lr is not None and not (math.isfinite(lr) and 0 < lr <= MAX_LR):
        raise InputError(f"the learning rate must be a number in (0, {MAX_LR:g}], got {lr:g}: "
                         "Adam moves every logit by about lr per step", field="--lr")
    return lr


def check_week_pair(ledger: Any, weeks: int, stats_dir: Path, option: str,
                    fix: str = "fit --weeks 1, or ") -> None:
    """Refuse a model of several weeks from a release of one week: it has no across-week
    query, its q_across is all zeros, and a fit to it silently learns that no topic ever
    persists from one week to the next."""
    from topicslab.model.fit import has_week_pair

    if weeks < 2 or has_week_pair(ledger):
        return
    raise InputError(f"a model of {weeks} weeks needs statistics of a week pair, but the "
                     f"release has one week ({stats_dir / 'privacy_ledger.json'} lists no "
                     f"across-week query); {fix}rerun topicslab stats with two --weeks",
                     file=str(stats_dir), field=option)


#: the persistence term's measured peak: ~3 float64 copies (the closed form's [L, T, M, k, m]
#: tables and their gradients; 0.82 GB for 39 more lags at T = 100, M = 5) ...
_PERSISTENCE_COPIES = 3
#: ... plus the synthetic users it samples, per week (int16 sets and the sampler's tables)
_PERSISTENCE_BYTES_PER_USER_WEEK = 16


def _persistence_memory(stats: Any, variant: Any, weight: float) -> float:
    """Bytes the persistence term adds to a fit of ``variant`` (0 when it does not run):
    its closed form holds L copies of the slot parameters, so a release of hundreds of lags
    needed tens of GB that the estimate did not count."""
    from topicslab.model.persistence import PersistenceTerm

    overlap = getattr(stats, "q_overlap", None)
    if overlap is None or variant.name != "persistent" or not weight > 0:
        return 0.0
    lags = int(overlap.shape[0])
    slot_params = stats.k * stats.taxonomy.size * variant.types * variant.modes
    return (8.0 * _PERSISTENCE_COPIES * lags * slot_params
            + _PERSISTENCE_BYTES_PER_USER_WEEK * PersistenceTerm.users * (lags + 1))


def _check_fit_size(stats: Any, stats_dir: Path, variant: Any, device: str,
                    persistence: float = 0.0) -> None:
    from topicslab import model as tm
    from topicslab._resources import require_memory
    from topicslab.model.fit import fit_memory

    if stats.k > MAX_K:
        why = (" (inferred from the statistics: the directory has no privacy_ledger.json)"
               if stats.ledger is None else "")
        raise InputError(f"k = {stats.k} topics a week{why} is more than {MAX_K}: these are "
                         "not statistics of the Topics API's top-5 sets; add the "
                         "privacy_ledger.json that topicslab stats writes",
                         file=str(stats_dir))
    check_week_pair(stats.ledger, variant.weeks, stats_dir, "--weeks")
    if stats.ledger is None:
        err.print(f"[yellow]note[/]: k = {stats.k} inferred from the statistics (the directory "
                  "has no privacy_ledger.json)", highlight=False)
    if tm.resolve_device(device).type == "cpu":
        m = stats.taxonomy.size
        weeks_part = 8.0 * 2 * variant.weeks * m * m
        modes = getattr(variant, "modes", 1) if variant.name != "paper" else 1
        base = fit_memory(variant, stats.k, m)
        extra = _persistence_memory(stats, variant, persistence)
        option = ("--persistence" if extra > base else "--weeks" if weeks_part > base / 2
                  else "--modes" if modes > variant.types else "--types")
        lags = "" if not extra else f" and {stats.q_overlap.shape[0]} lags of persistence"
        require_memory(base + extra,
                       f"fitting {variant.types} types over {variant.weeks} weeks{lags}",
                       field=option, hint="use fewer --types, --modes or --weeks"
                       + (", or --persistence 0" if extra else ""))


def _write_json(path: Path, doc: dict[str, Any]) -> None:
    from topicslab._atomic import write_text_atomic
    from topicslab._json import dumps

    write_text_atomic(path, dumps(doc, indent=2) + "\n")


def _checkpoint_stamps(directory: Path) -> dict[str, tuple[int, int]]:
    """Each checkpoint file's modification time and size (none: no directory)."""
    if not directory.is_dir():
        return {}
    return {str(p.relative_to(directory)): (p.stat().st_mtime_ns, p.stat().st_size)
            for p in directory.rglob("*") if p.is_file()}


#: the settings a checkpoint records under another name than the ``fit`` option that sets
#: them (a resumed fit with other settings is refused naming the option)
_CHECKPOINT_OPTIONS = {"week_pairs": "--cyclic", "stop_at_noise": "--no-noise-stop",
                       "stats": "--stats"}


def _checkpoints_kept(directory: Path, before: dict[str, tuple[int, int]] | None = None,
                      resuming: bool = True) -> str | None:
    """What an interrupted fit leaves: its checkpoints, which ``--resume`` continues. Those
    of an earlier fit (unchanged since ``before``, and not resumed) are not this fit's."""
    now = _checkpoint_stamps(directory)
    if not now:
        return None
    if not resuming and before is not None and now == before:
        return (f"this fit wrote no checkpoint (those in {directory} are an earlier fit's, "
                "which --resume would continue); no model written")
    return f"checkpoints kept in {directory} (add --resume to continue); no model written"


def _save_fit(out_dir: Path, res: Any) -> None:
    """The model and its history, moved into ``out_dir`` together (never one without the
    other: an interrupted save keeps the previous pair)."""
    from topicslab import model as tm
    from topicslab._atomic import atomic_dir

    with atomic_dir(out_dir) as tmp:
        tm.save_model(tmp, res.model)
        _write_json(tmp / "fit_history.json", {"history": res.history})


def _load_stats_option(stats_dir: Path) -> Any:
    """The DP statistics of ``--stats``; an error about the directory as a whole names the
    option (it named none)."""
    from topicslab import dp

    with naming_option("--stats"):
        return dp.load_statistics(stats_dir)


def _load_any_model(path: Path, taxonomy: str) -> Any:
    """The model of ``--model``: a model directory or a release output_parameters.json.
    A missing path, or a file of another kind, was "PATH/model.json: file missing (not a
    model directory?)", a file under a file; the file as a whole is named by the option."""
    from topicslab import model as tm
    from topicslab.io._common import missing

    if not path.exists():
        raise InputError(missing(str(path)), file=str(path), field="--model")
    if path.is_file() and path.suffix.lower() != ".json":
        raise InputError("is a file, not a model directory (topicslab fit) nor a release "
                         "output_parameters.json", file=str(path), field="--model")
    if (path / "stages.json").is_file() and (path / "model" / "model.json").is_file():
        raise InputError(f"is a directory holding a run's output (topicslab run), whose model "
                         f"is {path / 'model'}; give that directory", file=str(path),
                         field="--model")
    with naming_option("--model"):
        if path.is_file():
            return tm.import_release_parameters(path, taxonomy)
        return tm.load_model(path)


#: the output names ``sample`` accepts for each format
SAMPLE_SUFFIXES = {"parquet": (".parquet", ".pq"), "tfrecord": (".tfrecord", ".tfrecord.gz")}


def _target(text: str | None) -> Any:
    from topicslab.errors import InputError

    if text is None or text.lower() == "none":
        return None
    if text.lower() in ("bar", "quality"):
        return "bar"
    try:
        return float(text)
    except ValueError:
        raise InputError(f"--target must be 'bar', 'none' or a loss value, got {text!r}",
                         field="--target") from None


@app.command("fit")
def fit_command(
    stats_dir: Path = typer.Option(..., "--stats", "-s", help="DP statistics directory."),
    out_dir: Path = typer.Option(..., "--out", "-o", help="Model directory to write."),
    model: str = typer.Option(
        "persistent", "--model",
        help="persistent (types with weekly modes that keep last week's mode and topics with "
             "fitted probabilities; default) | paper (Dick et al. §5: weeks independent given "
             "the type)."),
    types: int | None = typer.Option(
        None, "--types", "-T", min=1,
        help="Number of types T (default: 500 paper types, 100 persistent types)."),
    modes: int | None = typer.Option(
        None, "--modes", min=1, help="Modes (weekly themes) per persistent type (default 5)."),
    weeks: int = typer.Option(4, "--weeks", "-r", min=1, help="Weeks r of the model."),
    optimizer: str = typer.Option("default", "--optimizer",
                                  help="default (full-objective Adam) | paper (paper types "
                                       "only)."),
    device: str = typer.Option("auto", "--device", help="cpu | cuda | auto."),
    max_minutes: float | None = typer.Option(None, "--max-minutes", help="Time budget."),
    target: str | None = typer.Option(
        "none", "--target",
        help="Early stop: 'bar' (quality bar), a loss J, or 'none' (no target: the "
             "synthetic data's risk needs the converged fit, not the first one over the bar; "
             "the default optimiser still stops at the DP noise floor, see --no-noise-stop)."),
    no_noise_stop: bool = typer.Option(
        False, "--no-noise-stop",
        help="Default optimiser: run every step even after J reaches the DP noise floor "
             "(the statistics' own noise, from the ledger; further steps fit the noise)."),
    steps: int | None = typer.Option(None, "--steps", min=1,
                                     help="Full-objective steps (default optimiser; 300)."),
    persistence: float | None = typer.Option(
        None, "--persistence",
        help="Default optimiser, persistent types: weight of the release's persistence "
             "statistic (q_overlap.json; a release without one refuses it), 0..1e6; 0 "
             "ignores it. Experimental: measured to widen the long-trace risk gap "
             "(docs/fidelity.md §4c)."),
    truncation: float | None = typer.Option(
        None, "--truncation",
        help="Default optimiser: error allowed in a step's pair statistics, as a share of "
             "the DP noise (0..1; default 1e-3: faster steps, the same fit); 0 computes "
             "every step exactly. The final model and J are exact either way."),
    epochs: int | None = typer.Option(None, "--epochs", min=1,
                                      help="Epochs (paper optimiser; 8000)."),
    lr: float | None = typer.Option(None, "--lr", help="Learning rate (default 0.5 / 1.0)."),
    seed: int = typer.Option(0, "--seed", min=0, max=MAX_SEED,
                             help="Initialisation and batch order."),
    batch_loss: str | None = typer.Option(None, "--batch-loss",
                                   help="Paper optimiser's batch loss: mean | sum."),
    checkpoint_every: int = typer.Option(50, "--checkpoint-every", min=1,
                                         help="Steps between checkpoints."),
    resume: bool = typer.Option(False, "--resume", help="Continue from OUT/checkpoints."),
    cyclic: bool = typer.Option(False, "--cyclic",
                                help="Also fit the wrap-around week pair (r-1 -> 0)."),
    threads: int | None = typer.Option(None, "--threads", min=1,
                                       help="CPU threads (default: adaptive)."),
    export_release: Path | None = typer.Option(
        None, "--export-release", help="Also write the release's output_parameters.json."),
    json_path: Path | None = typer.Option(None, "--json", help="Write the fit summary JSON."),
    no_progress: bool = typer.Option(False, "--no-progress", help="No progress bar."),
) -> None:
    """Fit the type-mixture model to DP statistics (paper §5; the fitter sees only them)."""
    from topicslab import model as tm
    from topicslab._paths import (
        check_output_dir,
        check_output_file,
        no_new_empty_dirs,
        refuse_overwriting_inputs,
    )

    check_output_dir(out_dir, "--out", "model",
                     ("model.json", "model.safetensors", "fit_history.json"))
    for option, path in (("--json", json_path), ("--export-release", export_release)):
        if path is not None:
            check_output_file(path, option, (".json",), "JSON")
    refuse_overwriting_inputs(
        [("--out", out_dir), ("--json", json_path), ("--export-release", export_release)],
        [("--stats", stats_dir)])
    checkpoint = out_dir / "checkpoints" / "checkpoint.pt"
    if resume and not checkpoint.is_file():
        # (a directory of that name was said not to exist)
        state = ("is a directory, not a checkpoint" if checkpoint.is_dir()
                 else "does not exist")
        raise InputError(f"--resume needs {checkpoint}, which {state}: nothing to continue "
                         "(drop --resume to start a new fit)", file=str(out_dir),
                         field="--resume")
    from topicslab.model.fit import MAX_MODEL_WEEKS

    if weeks > MAX_MODEL_WEEKS:
        raise InputError(f"--weeks {weeks} is more than {MAX_MODEL_WEEKS}: the statistics "
                         "describe one week and one week pair, sampling repeats the model's "
                         "weeks (stationarity)", field="--weeks")
    lr = _lr(lr)
    variant = tm.make_variant(model, types, weeks, cyclic=cyclic, modes=modes)
    if persistence is not None and variant.name != "persistent":
        raise InputError("--persistence weighs the persistence statistic for persistent types; "
                         "the paper's types do not fit it (drop --persistence)",
                         field="--persistence")
    opt: tm.FullObjective | tm.PaperAdam
    _check_iterations(steps, epochs)
    if optimizer == "paper":
        if no_noise_stop:
            raise InputError("--no-noise-stop belongs to the default optimiser (the paper's "
                             "runs its epochs)", field="--no-noise-stop")
        if steps is not None:
            raise InputError("--steps belongs to the default optimiser; the paper's counts "
                             "--epochs", field="--steps")
        if persistence is not None:
            raise InputError("--persistence belongs to the default optimiser",
                             field="--persistence")
        if truncation is not None:
            raise InputError("--truncation belongs to the default optimiser (the paper's "
                             "computes each minibatch term exactly)", field="--truncation")
        d = tm.PaperAdam()
        opt = tm.PaperAdam(epochs=d.epochs if epochs is None else epochs,
                           lr=d.lr if lr is None else lr,
                           batch_loss=d.batch_loss if batch_loss is None else batch_loss)
    elif optimizer == "default":
        for flag, value in (("--epochs", epochs), ("--batch-loss", batch_loss)):
            if value is not None:
                raise InputError(f"{flag} belongs to the paper's optimiser (--optimizer paper)",
                                 field=flag)
        f = tm.FullObjective()
        # (a bad --persistence is named by the option: the CLI maps parameter fields)
        opt = tm.FullObjective(steps=f.steps if steps is None else steps,
                               lr=f.lr if lr is None else lr, stop_at_noise=not no_noise_stop,
                               persistence=f.persistence if persistence is None
                               else persistence,
                               truncation=f.truncation if truncation is None
                               else truncation)
    else:
        raise InputError(f"--optimizer must be default or paper, got {optimizer!r}",
                         field="--optimizer")
    if export_release is not None and variant.name != "paper":
        raise InputError("--export-release writes the release's output_parameters.json, which "
                         "holds the paper's types only: add --model paper",
                         field="--export-release")
    if max_minutes is not None and not (math.isfinite(max_minutes) and max_minutes > 0):
        raise InputError(f"--max-minutes must be a positive number, got {max_minutes:g}",
                         field="--max-minutes")
    stop_at = _target(target)
    _check_threads(threads)
    stats = _load_stats_option(stats_dir)
    if persistence is not None and stats.q_overlap is None:
        # typed, it was ignored without a word, whatever its value
        raise InputError("--persistence weighs the release's persistence statistic, and this "
                         "release has none (no q_overlap.json): drop --persistence, or "
                         "release it with topicslab stats --overlap-lags N",
                         file=str(stats_dir), field="--persistence")
    _check_fit_size(stats, stats_dir, variant, device,
                    opt.persistence if isinstance(opt, tm.FullObjective) else 0.0)
    earlier = _checkpoint_stamps(out_dir / "checkpoints")
    on_interrupt(lambda: _checkpoints_kept(out_dir / "checkpoints", earlier, resume))
    # (the checkpoints directory too: in an existing --out, a fit failing before its first
    # checkpoint -- a full disk -- left an empty one behind)
    with no_new_empty_dirs(out_dir, out_dir / "checkpoints"):
        try:
            res = tm.fit(stats, variant, opt, device=device, seed=seed,
                         max_minutes=max_minutes, target=stop_at, progress=not no_progress,
                         checkpoint_dir=out_dir / "checkpoints",
                         checkpoint_every=checkpoint_every, resume=resume, threads=threads)
        except InputError as exc:
            # a checkpoint of other settings names the setting by its Python name: the
            # option that sets it here ('week_pairs' is --cyclic)
            if exc.row is None and exc.field in _CHECKPOINT_OPTIONS:
                raise InputError(exc.message, file=exc.file,
                                 field=_CHECKPOINT_OPTIONS[exc.field]) from None
            raise
        res.model.metadata["statistics_dir"] = str(stats_dir)
        _save_fit(out_dir, res)
    on_interrupt(None)  # the model is complete: from here the line names what was written
    if export_release is not None:
        tm.export_release_parameters(export_release, res.model)
    table = Table(title=f"type mixture → {escape(str(out_dir))}", show_header=False)
    table.add_row("model", res.model.variant)
    table.add_row("types × weeks × slots × topics",
                  f"{res.model.types} × {res.model.weeks} × {res.model.k} × {res.model.m}")
    if res.model.stay is not None and res.model.mode_stay is not None:
        for label, arr in (("modes per type", None), ("mode stay", res.model.mode_stay),
                           ("slot stay", res.model.stay)):
            if arr is None:
                table.add_row(label, str(res.model.modes))
                continue
            q = np.quantile(arr, [0.1, 0.5, 0.9])
            table.add_row(f"{label} (10% / 50% / 90%)", f"{q[0]:.3f} / {q[1]:.3f} / {q[2]:.3f}")
    table.add_row("optimiser / device", f"{optimizer} / {tm.resolve_device(device)}")
    table.add_row("steps", f"{res.steps:,}")
    floor = res.model.metadata.get("noise_floor")
    table.add_row("stopped", res.stopped if floor is None
                  else f"{res.stopped} (DP noise floor J = {floor:.3e})")
    table.add_row("seconds", f"{res.seconds:.1f}")
    table.add_row("loss J (float32 / float64)", f"{res.loss:.6e} / {res.loss_float64:.6e}")
    table.add_row("terms within 0.1 pp", f"{res.quality['share_abs_within_0_1pp']:.4%}")
    table.add_row("terms ≥ 0.1% within 20%", f"{res.quality['share_rel_within_20pct']:.2%}")
    out.print(table)
    if res.noise_at_start:
        out.print(f"note: {res.noise_at_start}.")
    if json_path is not None:
        _write_json(json_path, res.to_dict())


@app.command("sample")
def sample_command(
    model_path: Path = typer.Option(
        ..., "--model", "-m", help="Model directory (or a release output_parameters.json)."),
    users: int = typer.Option(..., "--users", "-n", min=1, help="Number of synthetic users."),
    seed: int = typer.Option(..., "--seed", min=0, max=MAX_SEED, help="Seed of the sampler."),
    out_path: Path = typer.Option(
        ..., "--out", "-o",
        help="Output (.parquet or .tfrecord). Replaces an earlier output of that name as a "
             "whole (for TFRecord, every stem-NNNNN-of-MMMMM shard beside it, whatever the "
             "count) once all users are written; nothing changes if interrupted."),
    weeks: int | None = typer.Option(None, "--weeks", "-w", min=1,
                                     help="Weeks per user (default: the model's)."),
    fmt: str | None = typer.Option(None, "--format",
                                   help="parquet | tfrecord (default: from the extension)."),
    chunk_users: int = typer.Option(1 << 20, "--chunk-users", min=1,
                                    help="Users drawn and written per chunk."),
    shards: int | None = typer.Option(None, "--shards", min=1,
                                      help="TFRecord shards (default: one per chunk)."),
    taxonomy: str | None = typer.Option(
        None, "--taxonomy",
        help="Taxonomy of a release output_parameters.json (default v2; a model directory "
             "records its own)."),
    device: str = typer.Option(
        "cpu", "--device",
        help="cpu | cuda | auto: cuda draws on the GPU (PyTorch), the same users bit for bit; "
             "auto uses CUDA when available."),
) -> None:
    """Draw synthetic users from a fitted model (Algorithm 2), streamed to a file."""
    from topicslab import model as tm
    from topicslab._paths import check_output_file, refuse_overwriting_inputs
    from topicslab.cli.population import taxonomy_size
    from topicslab.io._common import MAX_WEEKS

    if fmt is None:
        name = out_path.name.lower()
        fmt = "tfrecord" if ".tfrecord" in name else "parquet"
    if fmt not in SAMPLE_SUFFIXES:
        raise InputError(f"--format must be parquet or tfrecord, got {fmt!r}", field="--format")
    check_output_file(out_path, "--out", SAMPLE_SUFFIXES[fmt], fmt)
    try:
        tm.resolve_device(device)  # before reading the model
    except InputError as exc:
        raise InputError(exc.message, field="--device") from None
    from topicslab.cli.convert import check_target_name

    check_target_name(out_path, fmt, "--out")
    refuse_overwriting_inputs([("--out", out_path)], [("--model", model_path)])
    if taxonomy is not None:
        taxonomy_size(taxonomy)
    mdl = _load_any_model(model_path, taxonomy or "v2")
    if taxonomy is not None and mdl.taxonomy.version != taxonomy:
        raise InputError(f"the model uses taxonomy {mdl.taxonomy.version}, not {taxonomy} "
                         "(--taxonomy only tells which taxonomy a release "
                         "output_parameters.json uses)", field="--taxonomy")
    if weeks is not None and weeks > MAX_WEEKS:
        raise InputError(f"--weeks must be in 1..{MAX_WEEKS} (the most weeks a population "
                         f"holds, and every reader reads), got {weeks:,}", field="--weeks")
    _check_sample_size(min(users, chunk_users), weeks or mdl.weeks, mdl.k,
                       "use fewer --weeks or a smaller --chunk-users", "--chunk-users")
    _check_shards(shards, users, fmt)
    _check_disk(out_path, users, weeks or mdl.weeks)
    t0 = time.perf_counter()
    files = tm.sample_to_file(mdl, out_path, users, seed=seed, weeks=weeks,
                              format=fmt,  # type: ignore[arg-type]
                              chunk_users=chunk_users, shards=shards, progress=True,
                              device=device)
    dt = time.perf_counter() - t0
    table = Table(title=f"synthetic users → {escape(str(out_path))}", show_header=False)
    table.add_row("users × weeks", f"{users:,} × {weeks or mdl.weeks}")
    table.add_row("format / files", f"{fmt} / {len(files)}")
    table.add_row("seed", str(seed))
    table.add_row("seconds", f"{dt:.1f}")
    table.add_row("users / s", f"{users / dt:,.0f}" if dt > 0 else "—")
    if (weeks or mdl.weeks) > mdl.weeks and mdl.stay is None:
        err.print(f"[yellow]note[/]: {weeks} weeks from a {mdl.weeks}-week model: week w uses "
                  f"fitted week w mod {mdl.weeks} (stationarity rule)")
    out.print(table)


def _read_in_taxonomy(path: Path, version: str, option: str) -> Any:
    """Topic sets of ``path`` in taxonomy ``version`` when the file allows it: a file without
    metadata is read in it even if its ids also fit the other taxonomy; a file that names
    another taxonomy (or holds ids ``version`` lacks) is returned as it is, for
    ``_check_comparable`` to refuse naming the option."""
    from topicslab import io as tio

    with naming_option(option):
        sets = tio.read_sets(path)
    if sets.taxonomy.version != version:
        try:
            sets = tio.read_sets(path, taxonomy=version)
        except InputError:
            pass
    return sets


def _check_comparable(sets: Any, path: Path, option: str, version: str, other: str) -> None:
    """Sets ``validate`` compares: some users, and the taxonomy of what they are compared
    with, named by file before any sampling."""
    if sets.n_users == 0:
        raise InputError("holds no users: there is nothing to compare", file=str(path),
                         field=option)
    if sets.taxonomy.version != version:
        raise InputError(f"uses taxonomy {sets.taxonomy.version}, {other} taxonomy {version}",
                         file=str(path), field=option)


def _files_behind(path: Path) -> set[str] | None:
    """The files a topic-set option reads, links followed: a directory's or a pattern's
    TFRecord shards, else the file itself; ``None`` when they cannot be listed (the reader
    then says why)."""
    from topicslab.io._common import is_pattern
    from topicslab.io.tfrecord import tfrecord_files

    name = os.fspath(path)
    try:
        files = (tfrecord_files(name) if os.path.isdir(name) or is_pattern(name)
                 else [name] if os.path.exists(name) else [])
    except InputError:
        return None
    return {os.path.realpath(f) for f in files} or None


@app.command("validate")
def validate_command(
    stats_dir: Path = typer.Option(..., "--stats", "-s", help="DP statistics directory."),
    model_path: Path = typer.Option(..., "--model", "-m",
                                    help="Model directory (or output_parameters.json)."),
    json_path: Path = typer.Option(..., "--json", help="Write the results JSON here."),
    population: Path | None = typer.Option(
        None, "--population", "-p", help="Population sets: Fig. 5 and stationarity."),
    synthetic: Path | None = typer.Option(
        None, "--synthetic", help="Synthetic sets (default: sampled from the model)."),
    users: int | None = typer.Option(None, "--users", min=1,
                                     help="Synthetic users to draw (default: population's)."),
    seed: int = typer.Option(0, "--seed", min=0, max=MAX_SEED,
                             help="Seed of the synthetic draw."),
    weeks: int | None = typer.Option(
        None, "--weeks", min=1,
        help="Weeks of the distinct-topics count and of --risk (default: 4, or the "
             "population's if fewer)."),
    arrays: bool = typer.Option(False, "--arrays", help="Include the raw error arrays."),
    risk: bool = typer.Option(
        False, "--risk",
        help="Release fidelity: exact expected re-identification risk of population and "
             "synthetic data for r = 1..weeks, every user a target, as relative gaps "
             "(needs --population)."),
    risk_trials: int = typer.Option(2, "--risk-trials", min=1,
                                    help="Trials of --risk (fresh answers and users each)."),
    tolerance: float = typer.Option(0.02, "--tolerance", min=1e-6, max=1.0,
                                    help="--risk verdict: |relative gap| within this."),
) -> None:
    """Fit errors (Fig. 3/4), distinct topics (Fig. 5), stationarity (Appendix C) and, with
    --risk, release fidelity (risk gaps for every number of weeks observed)."""
    from topicslab import model as tm
    from topicslab import validate as tv
    from topicslab._paths import check_output_file, refuse_overwriting_inputs

    check_output_file(json_path, "--json", (".json",), "JSON")
    refuse_overwriting_inputs([("--json", json_path)],
                              [("--stats", stats_dir), ("--model", model_path),
                               ("--population", population), ("--synthetic", synthetic)])
    if population is None:
        for option, typed in (("--risk", risk), ("--synthetic", synthetic is not None),
                              ("--weeks", weeks is not None), ("--users", users is not None)):
            if typed:
                raise InputError(f"{option} compares with the population: give --population",
                                 field=option)
    if not risk:
        for option, typed in (("--risk-trials", risk_trials != 2 or given("risk_trials")),
                              ("--tolerance", tolerance != 0.02 or given("tolerance"))):
            if typed:
                raise InputError(f"{option} belongs to --risk: add --risk (or drop {option})",
                                 field=option)
    if synthetic is not None:
        for option, typed in (("--seed", seed != 0 or given("seed")),
                              ("--users", users is not None)):
            if typed:
                raise InputError(f"{option} sizes or seeds the synthetic draw, and --synthetic "
                                 f"gives the synthetic sets (drop {option})", field=option)
    from topicslab.io._common import is_pattern, not_found

    for option, path in (("--population", population), ("--synthetic", synthetic)):
        # (a pattern of TFRecord shards, which the other commands read, was "file not found")
        if path is not None and not path.exists() and not is_pattern(str(path)):
            raise InputError(not_found(str(path)), file=str(path), field=option)
    pop_files = _files_behind(population) if population is not None else None
    syn_files = _files_behind(synthetic) if synthetic is not None else None
    if pop_files and syn_files and pop_files & syn_files:
        # the population was compared with itself: every gap 0 and a PASS, silently (also
        # when one names the shards as a pattern and the other as their directory)
        what = ("file itself" if len(pop_files) == 1 == len(syn_files)
                else "itself" if pop_files == syn_files
                else f"in part ({len(pop_files & syn_files)} of its files)")
        raise InputError(f"is the population {what} ({population}): validation compares "
                         "synthetic sets with the population; give the sets sampled from the "
                         "model (or drop --synthetic to sample them)", file=str(synthetic),
                         field="--synthetic")
    stats = _load_stats_option(stats_dir)
    mdl = _load_any_model(model_path, stats.taxonomy.version)
    if mdl.taxonomy.version != stats.taxonomy.version:
        # (the fit-quality check refused it as "field 'taxonomy': statistics use taxonomy
        # v1, the model v2", naming neither the model nor the statistics)
        raise InputError(f"the model uses taxonomy {mdl.taxonomy.version}, the statistics in "
                         f"{stats_dir} taxonomy {stats.taxonomy.version}: validate a model "
                         "against the statistics it was fitted to", file=str(model_path),
                         field="--model")
    if mdl.k != stats.k:
        raise InputError(f"the model has k={mdl.k} topics a week, the statistics in "
                         f"{stats_dir} k={stats.k}: validate a model against the statistics it "
                         "was fitted to", file=str(model_path), field="--model")
    check_week_pair(stats.ledger, mdl.weeks, stats_dir, "--stats",
                    fix="validate a one-week model, or ")
    pop = syn = None
    if population is not None:
        pop = _read_in_taxonomy(population, stats.taxonomy.version, "--population")
        _check_comparable(pop, population, "--population", stats.taxonomy.version,
                          f"the statistics in {stats_dir}")
        if weeks is None:
            weeks = min(4, pop.n_weeks)
        elif weeks > pop.n_weeks:
            raise InputError(f"--weeks {weeks} is more than the {pop.n_weeks} weeks of the "
                             f"population; use --weeks {pop.n_weeks} or less",
                             file=str(population), field="--weeks")
        if synthetic is not None:
            syn = _read_in_taxonomy(synthetic, stats.taxonomy.version, "--synthetic")
            _check_comparable(syn, synthetic, "--synthetic", pop.taxonomy.version,
                              f"the population {population}")
            if syn.k != pop.k:  # compared week by week: sets of another k were accepted
                raise InputError(f"holds {syn.k} topics per week, the population {population} "
                                 f"{pop.k}: the two are compared week by week; give synthetic "
                                 f"sets of the population's k", file=str(synthetic),
                                 field="--synthetic")
            if weeks > syn.n_weeks:
                raise InputError(f"--weeks {weeks} is more than the {syn.n_weeks} weeks of the "
                                 "synthetic sets", file=str(synthetic), field="--weeks")
        else:
            _check_sample_size(users or pop.n_users, max(weeks, mdl.weeks), mdl.k,
                               "use fewer --users", "--users")
    if risk and pop is not None and weeks is not None:
        from topicslab.validate.fidelity import check_fidelity_size

        check_fidelity_size(risk_trials, pop.n_users, weeks)
    q = tv.fit_quality(stats, mdl)
    doc: dict[str, Any] = {"fit_quality": q.to_dict(arrays=arrays),
                           "model_stationarity": tv.stationarity(mdl).to_dict()}
    wrap = (mdl.weeks - 1, 0)
    if mdl.stay is None and mdl.weeks > 1 and wrap not in mdl.week_pairs:
        # the transition the stationarity rule adds when sampling more than r weeks
        wq = tv.fit_quality(stats, mdl, week_pairs=[wrap])
        doc["wrap_transition"] = {"pair": list(wrap), **wq.by_family()["across"]}
    table = Table(title="fit quality", show_header=True)
    table.add_column("terms")
    table.add_column("n", justify="right")
    table.add_column("|err| ≤ 0.1 pp", justify="right")
    table.add_column("n ≥ 0.1%", justify="right")
    table.add_column("rel ≤ 20%", justify="right")
    # (by the one formatter: a family of no term >= 0.1% -- statistics of zeros -- showed
    # its undefined share as "nan%")
    table.add_row("all", f"{q.n_terms:,}",
                  format_number(q.share_abs_within_0_1pp, percent=True, decimals=4),
                  f"{q.rel_errors.shape[0]:,}",
                  format_number(q.share_rel_within_20pct, percent=True, decimals=2))
    for name, f in q.by_family().items():
        table.add_row(name, f"{f['terms']:,}",
                      format_number(f["share_abs_within"], percent=True, decimals=4),
                      f"{f['rel_terms']:,}",
                      format_number(f["share_rel_within"], percent=True, decimals=2))
    out.print(table)
    if pop is not None and weeks is not None:
        if syn is None:
            n = users or pop.n_users
            syn = tm.sample(mdl, n, seed=seed, weeks=max(weeks, mdl.weeks), progress=True)
        cmp = tv.distinct_topics_comparison(pop, syn, weeks=min(weeks, pop.n_weeks,
                                                                syn.n_weeks))
        doc["distinct_topics"] = cmp.to_dict()
        doc["population_stationarity"] = tv.stationarity(pop).to_dict()
        doc["synthetic_stationarity"] = tv.stationarity(syn).to_dict()
        t2 = Table(title="unconstrained statistic and stationarity", show_header=False)
        t2.add_row(f"distinct topics over {cmp.weeks} weeks: Pearson (Fig. 5)",
                   format_number(cmp.pearson))
        t2.add_row("mean distinct topics population / synthetic",
                   f"{cmp.to_dict()['population']['mean']:.2f} / "
                   f"{cmp.to_dict()['synthetic']['mean']:.2f}")
        for label, key in (("population", "population_stationarity"),
                           ("synthetic", "synthetic_stationarity")):
            mins = doc[key]["minimum"]
            t2.add_row(f"min week correlation ({label}): single / within / across",
                       " / ".join(format_number(mins[s], digits=5)
                                  for s in ("single", "within", "across")))
        out.print(t2)
        if risk:
            def draw(trial: int) -> Any:
                if trial == 0:
                    return syn
                return tm.sample(mdl, users or pop.n_users, seed=seed + trial,
                                 weeks=max(weeks, mdl.weeks))

            span = min(weeks, pop.n_weeks, syn.n_weeks)
            fid = tv.fidelity(pop, draw, weeks=range(1, span + 1), trials=risk_trials,
                              tolerance=tolerance, seed=seed, progress=True)
            doc["fidelity"] = fid.to_dict()
            t3 = Table(title="release fidelity: exact expected risk, every user a target")
            for col in ("attack", "r", "population", "synthetic", "gap (95%)"):
                t3.add_column(col, justify="right" if col != "attack" else "left")
            for g in fid.gaps:
                gap = ("—" if not np.isfinite(g.gap)
                       else f"{g.gap:+.2%} ± {1.96 * g.gap_se:.2%}")
                t3.add_row(g.attack, str(g.weeks), f"{g.population:.4%}",
                           f"{g.synthetic:.4%}", gap)
            out.print(t3)
            out.print(fid.text)
    _write_json(json_path, doc)
    err.print(f"wrote {escape(str(json_path))}")
