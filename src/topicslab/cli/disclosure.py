"""``topicslab disclosure``: sensitive-interest disclosure (PRI estimator, issue 8).

* ``--example``      -> ``topicslab.disclosure.worked_example`` (0.32 / 0.08; 1.6 / 0.4)
* ``--script FILE``  -> ``topicslab.disclosure.read_script`` (check and summarise a script)
* otherwise          -> ``topicslab.disclosure.topics_experiment`` (detection vs ρ, white box)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from topicslab._atomic import atomic_dir, write_text_atomic
from topicslab._checks import comma_items
from topicslab._json import dumps
from topicslab.cli._app import MAX_SEED, app, err, given, out, parse_epsilon
from topicslab.errors import InputError, naming_option


def _table(title: str, header: list[str], rows: Sequence[Sequence[Any]]) -> Table:
    table = Table(title=title)
    for i, col in enumerate(header):
        table.add_column(col, justify="left" if i == 0 else "right")
    for row in rows:
        table.add_row(*row)
    return table


def _parse_rhos(values: list[str] | None) -> list[float] | None:
    if not values:
        return None
    rhos: list[float] = []
    for v in values:
        try:
            items = comma_items(v)
            rhos.extend(float(part) for part in items)
        except ValueError as exc:
            raise InputError(f"cannot read rho: {exc}", field="--rho") from None
        if not items:  # (--rho 0.2 --rho '' ran on 0.2 alone, as --rho 0.2, refuses)
            raise InputError(f"cannot read rho: {v!r} gives no value (e.g. --rho 0.1,0.2)",
                             field="--rho")
    return rhos


def _check_size(design: Any, groups: int) -> None:
    """Refuse an experiment whose simulations cannot fit in memory, naming the option whose
    personas weigh most."""
    from topicslab._resources import require_memory
    from topicslab.disclosure import PersonaModel
    from topicslab.taxonomy import resolve

    parts = design.memory(resolve("v2").size, groups, PersonaModel().visits_per_epoch)
    field = max(parts, key=parts.get)
    option = "--" + field.replace("_", "-")
    what = {"personas": f"{design.personas:,} test personas",
            "train_personas": f"{design.n_train:,} training personas",
            "mc_samples": f"{design.mc_samples:,} white-box Monte Carlo personas"}[field]
    require_memory(max(parts.values()), f"simulating {what} per group ({groups} groups, "
                   f"{design.epochs} epochs)", field=option, hint=f"use fewer {option}")


@app.command("disclosure")
def disclosure(
    example: bool = typer.Option(False, "--example",
                                 help="Print the paper's worked example (0.32 / 0.08)."),
    script: Path | None = typer.Option(None, "--script",
                                       help="Check a query script (paper format) and "
                                            "summarise it."),
    personas: int = typer.Option(200, "--personas", "-n",
                                 help="Test personas per group (each category and other)."),
    train_personas: int | None = typer.Option(None, "--train-personas",
                                              help="Training personas per group "
                                                   "(default: --personas)."),
    epochs: int = typer.Option(8, "--epochs", help="Epochs simulated (a session is 5)."),
    rho: list[str] | None = typer.Option(None, "--rho",
                                         help="Intensity ρ; repeat or comma-separate "
                                              "(default 0.05,0.1,0.2,0.4)."),
    epsilon: str = typer.Option("ln2", "--epsilon", help="Budget ε (a number or lnX)."),
    seed: int = typer.Option(0, "--seed", max=MAX_SEED, help="Seed of the whole experiment."),
    probe_sites: int = typer.Option(10, "--probe-sites", help="Probe sites per epoch."),
    mc_samples: int = typer.Option(500, "--mc-samples",
                                   help="White-box Monte Carlo personas per group."),
    n_sigma: float = typer.Option(3.0, "--n-sigma", help="Band half-width in σ."),
    sides: str = typer.Option("two", "--sides", help="Bands: two, lower or upper."),
    smoothing: float = typer.Option(0.0, "--smoothing",
                                    help="Additive smoothing of the PRI ratio (0 = paper)."),
    whitebox: bool = typer.Option(True, "--whitebox/--no-whitebox",
                                  help="Run the white-box posterior/prior check."),
    json_path: Path | None = typer.Option(None, "--json", help="Write the full result (JSON)."),
    figures: Path | None = typer.Option(None, "--figures",
                                        help="Directory for rates.png and ln_m.png."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Detect sensitive-interest disclosure (Mac Aonghusa & Leith) on Topics API answers."""
    from topicslab import disclosure as d
    from topicslab._paths import check_output_dir, check_output_file, refuse_overwriting_inputs
    from topicslab.disclosure.report import example_rows, rate_rows, topic_rows

    if json_path is not None:
        check_output_file(json_path, "--json", (".json",), "JSON")
    if figures is not None:
        check_output_dir(figures, "--figures", files=("rates.png", "ln_m.png"))
    refuse_overwriting_inputs([("--json", json_path), ("--figures", figures)],
                              [("--script", script)])

    if example or script is not None:
        mode = "--example" if example else "--script"
        if example and script is not None:
            raise InputError("--example prints the paper's worked example and --script checks "
                             "a script: give one of them", field="--script")
        experiment = [o for o, v, default in (
            ("--personas", personas, 200), ("--train-personas", train_personas, None),
            ("--epochs", epochs, 8), ("--rho", rho, None), ("--epsilon", epsilon, "ln2"),
            ("--seed", seed, 0), ("--probe-sites", probe_sites, 10),
            ("--mc-samples", mc_samples, 500), ("--n-sigma", n_sigma, 3.0),
            ("--sides", sides, "two"), ("--smoothing", smoothing, 0.0),
            ("--whitebox/--no-whitebox", whitebox, True), ("--figures", figures, None),
            ("--quiet", quiet, False))  # (the experiment's progress bar: none to quieten)
            # typed, even at its default value ("--sides two"), it is still an option that
            # does not apply
            if v != default or given(o.split("/")[0][2:].replace("-", "_"))]
        if experiment:
            raise InputError(f"{experiment[0]} belongs to the disclosure experiment, which "
                             f"{mode} does not run (drop {experiment[0]} or {mode})",
                             field=experiment[0].split("/")[0])
    if example:
        worked = d.worked_example()
        out.print(_table(escape("Worked example (§4.5): advert [" + " ".join(worked.advert)
                                + "]"), *example_rows(worked)))
        out.print(f"in-vocabulary mass Σ_w p̂_a(w) = {worked.estimate.in_vocabulary_mass:g}; "
                  f"|T| = {int(worked.pri.n_ads.sum())}")
        if json_path is not None:
            write_text_atomic(json_path, dumps(worked, indent=1))
            err.print(f"wrote {escape(str(json_path))}")
        return
    if script is not None:
        with naming_option("--script"):
            sc = d.read_script(script)
        info = sc.to_dict()
        # the script's text as it is: "help [/]and advice" was read as rich's markup
        # ("MarkupError: closing tag '[/]' has nothing to close", exit code 1), and its
        # control characters reached the terminal
        from rich.text import Text

        from topicslab._numbers import format_number
        from topicslab._paths import printable

        # numbers by the one formatter (a script of no probe showed "None" for the queries
        # between probes, and 200000 queries without separators)
        rows = [[k, Text(printable(format_number(v) if v is None or isinstance(v, int | float)
                                   else str(v)))]
                for k, v in info.items() if k != "headers"]
        out.print(_table(f"Script {escape(script.name)}", ["field", "value"], rows))
        if json_path is not None:
            write_text_atomic(json_path, dumps(info, indent=1))
            err.print(f"wrote {escape(str(json_path))}")
        return
    if not whitebox and given("mc_samples"):
        raise InputError("--mc-samples sizes the white-box check, which --no-whitebox turns "
                         "off (drop one of them)", field="--mc-samples")
    # the band options, checked before the simulation starts (they were only checked when
    # the bands were drawn, after the progress bar and the training probes)
    from topicslab.disclosure.bands import SIDES
    if sides not in SIDES:
        raise InputError(f"sides must be one of {', '.join(SIDES)}, got {sides!r}",
                         field="--sides")
    for option, value in (("--n-sigma", n_sigma), ("--smoothing", smoothing)):
        if not math.isfinite(value) or value < 0:
            raise InputError(f"{option} must be a non-negative number, got {value}",
                             field=option)
    # the experiment's design, checked once, and its memory, before any simulation
    design = d.DisclosureDesign(
        rhos=tuple(d.DEFAULT_RHOS if (parsed := _parse_rhos(rho)) is None else parsed),
        epochs=epochs, personas=personas,
        train_personas=train_personas, probe_sites=probe_sites, mc_samples=mc_samples,
        seed=seed, epsilon=parse_epsilon(epsilon), whitebox=whitebox)
    groups = len(d.default_categories("v2")) + 1
    design.check_groups(groups)
    _check_size(design, groups)
    result = d.topics_experiment(design=design, n_sigma=n_sigma, sides=sides,
                                 smoothing=smoothing, progress=not quiet)
    out.print(_table(f"Topics API: detection vs ρ ({personas} test personas per group, "
                     f"{epochs} epochs, seed {seed})", *rate_rows(result)))
    out.print(_table("Per topic (sessions; one vs rest)", *topic_rows(result)))
    out.print(f"{result.seconds:.1f} s")
    if json_path is not None:
        write_text_atomic(json_path, dumps(result))
        err.print(f"wrote {escape(str(json_path))}")
    if figures is not None:
        # both figures or neither: they are built in a temporary sibling directory
        with atomic_dir(figures) as tmp:
            d.rates_figure(result, tmp / "rates.png")
            d.ln_m_figure(result, tmp / "ln_m.png")
        err.print(f"wrote {escape(str(figures / 'rates.png'))} and "
                  f"{escape(str(figures / 'ln_m.png'))}")


__all__ = ["disclosure"]
