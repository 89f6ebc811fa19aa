"""``topicslab attack-train``: train the learned re-identification attack (Carey et al.
Appendix E.1.3; issue 17) on pairs the mechanism simulates from a population's topic sets.

Writes ``model.safetensors`` + ``model.json`` into ``--out`` (both or neither); ``topicslab
reid --attack learned --attack-model DIR`` uses them.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from topicslab.cli._app import MAX_SEED, app, err, given, out
from topicslab.errors import InputError, naming_option


@app.command("attack-train")
def attack_train(
    sets_path: Path = typer.Option(..., "--sets", "-s",
                                   help="Topic sets of the training population."),
    out_dir: Path = typer.Option(..., "--out", "-o", help="Model directory to write."),
    weeks: int = typer.Option(4, "--weeks", "-w", help="Call-weeks r of the traces."),
    epochs: int = typer.Option(2, "--epochs", help="Training passes (fresh API answers "
                                                    "each; the best on validation is kept; 0: "
                                                    "the counted co-occurrence only)."),
    batch_users: int = typer.Option(2048, "--batch-users", help="Queries per step."),
    negatives: int = typer.Option(10, "--negatives", help="Non-matching pairs per query."),
    hard_fraction: float = typer.Option(1.0, "--hard-fraction",
                                        help="Share of hard negatives (0..1)."),
    queries: int = typer.Option(32768, "--queries", help="Training queries per epoch."),
    validation: int = typer.Option(8192, "--validation",
                                   help="Targets of the validation trial (early stopping)."),
    p: float = typer.Option(0.05, "--p", help="Probability of a random topic (mechanism)."),
    lookback: int = typer.Option(1, "--lookback", help="Epochs returned per call."),
    seed: int = typer.Option(0, "--seed", min=0, max=MAX_SEED, help="Training seed."),
    device: str = typer.Option("cpu", "--device", help="cpu | cuda | auto."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bars."),
) -> None:
    """Train the learned re-identification attack (asymmetric attack + learned terms)."""
    import dataclasses

    from topicslab._paths import check_output_dir, refuse_overwriting_inputs
    from topicslab.api import Mechanism
    from topicslab.attacks.learned import (
        LearnedAttackConfig,
        resolve_device,
        save_attack,
        train_attack,
    )
    from topicslab.attacks.protocol import check_call_weeks

    check_output_dir(out_dir, "--out", "attack", ("model.json", "model.safetensors"))
    # (inside a shard directory given as --sets it was written there, as no other command
    # writes into its input)
    refuse_overwriting_inputs([("--out", out_dir)], [("--sets", sets_path)])
    device = resolve_device(device)  # before reading the data
    r = check_call_weeks(weeks, lookback)
    try:
        cfg = LearnedAttackConfig(epochs=epochs, batch_users=batch_users, negatives=negatives,
                                  hard_fraction=hard_fraction, queries_per_epoch=queries,
                                  validation=validation)
    except InputError as exc:
        flag = {"queries_per_epoch": "queries"}.get(exc.field or "", exc.field or "")
        raise InputError(exc.message, field=f"--{flag.replace('_', '-')}") from None
    if epochs == 0:
        # the counted co-occurrence alone: no gradient pass reads these, so typing one is a
        # mistake (a training run meant), not something to ignore
        for option in ("batch_users", "negatives", "hard_fraction", "queries"):
            if given(option):
                flag = f"--{option.replace('_', '-')}"
                raise InputError(f"{flag} sizes the training passes, and --epochs 0 runs none "
                                 f"(the counted co-occurrence only): drop {flag}, or give "
                                 "--epochs", field=flag)
    mech = Mechanism(p=p, lookback=lookback)
    from topicslab.io import read_sets

    with naming_option("--sets"):
        data = read_sets(sets_path)
    mech = dataclasses.replace(mech, k=data.k, taxonomy=data.taxonomy)
    # typed counts past the population are used as every user: said, not silently clamped
    # (--batch-users 10^12 was clamped without a word); said once the training has run, so
    # that a refusal of the data (no users, too few weeks) stays one line
    notes = [f"--{option.replace('_', '-')} {value:,} but only {data.n_users:,} users: every "
             "user is used"
             for option, value in (("queries", queries), ("validation", validation),
                                   ("batch_users", batch_users))
             if given(option) and value > data.n_users
             and not (option == "batch_users" and queries < data.n_users)]
    if given("batch_users") and queries < min(batch_users, data.n_users):
        # a step takes at most a pass's queries (was run with no word)
        notes.append(f"--batch-users {batch_users:,} is more than the {queries:,} --queries "
                     f"of a pass: each pass is one step of {queries:,} queries")
    try:
        att = train_attack(data, weeks=r, mechanism=mech, config=cfg, seed=seed,
                           progress=progress, device=device)
    except InputError as exc:
        if exc.field == "sets":  # the library's argument is this command's --sets
            exc = InputError(exc.message, file=exc.file, field="--sets")
        raise exc.located(file=str(sets_path)) from None
    for note in notes:
        err.print(f"[yellow]note[/]: {note}")
    att.metadata["train_file"] = str(sets_path)
    save_attack(out_dir, att)
    md = att.metadata
    kept = ("the asymmetric attack itself (no epoch beat it on validation)"
            if md["best_epoch"] < 0 else f"epoch {md['best_epoch']}")
    out.print(f"trained the learned attack on {data.n_users:,} users, r = {r}: "
              f"{md['seconds']:.1f} s; validation risk {100 * md['validation_risk_start']:.2f}% "
              f"(asymmetric) -> +{100 * md['validation_gain']:.2f} pp, kept {kept}")
    err.print(f"wrote {escape(str(out_dir))}")


__all__ = ["attack_train"]
