"""``topicslab stats``: DP statistics of topic sets -> release directory + privacy ledger.

Thin wrapper over ``topicslab.dp.compute_statistics`` / ``save_statistics``; ``--explain DIR``
prints a directory's ``privacy_ledger.json`` as tables.
"""

from __future__ import annotations

import time
from pathlib import Path

import typer
from rich.table import Table

from topicslab.cli._app import app, err, out, parse_epsilon


def _floats(text: str | None, what: str) -> list[float] | None:
    if text is None:
        return None
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise typer.BadParameter(f"cannot read {what} {text!r}") from None


def _ints(text: str | None, what: str) -> list[int] | None:
    if text is None:
        return None
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise typer.BadParameter(f"cannot read {what} {text!r}") from None


@app.command()
def stats(
    sets_path: Path | None = typer.Option(None, "--sets", "-s", help="Topic-set sequences file."),
    out_dir: Path | None = typer.Option(None, "--out", "-o", help="Output directory."),
    weeks: str | None = typer.Option(None, "--weeks", help="Weeks to use, e.g. 0,1 (default all)."),
    epsilon: str = typer.Option("ln3", "--epsilon", help="Total epsilon: ln3 or a number."),
    delta: float = typer.Option(1e-15, "--delta", help="Total delta, in (0, 1)."),
    split: str | None = typer.Option(
        None, "--split", help="Budget shares: within weeks, then week pairs (0.25,0.25,0.5)."),
    accounting: str = typer.Option("paper", "--accounting", help="paper | tight."),
    bound: str = typer.Option("reject", "--bound", help="Over-long weeks: reject | truncate."),
    k: int = typer.Option(5, "--k", min=2, help="Topics per week after bounding."),
    seed: int | None = typer.Option(
        None, "--seed", min=0,
        help="Reproducible run: the noise is NOT cryptographically secure."),
    explain: Path | None = typer.Option(None, "--explain", help="Print DIR's privacy ledger."),
) -> None:
    """Differentially private q_single / q_within / q_across with an exact privacy ledger."""
    from topicslab import dp
    from topicslab.errors import InputError

    if explain is not None:
        for table in dp.ledger_tables(dp.load_ledger(explain)):
            out.print(table)
        return
    if sets_path is None or out_dir is None:
        raise InputError("--sets and --out are required (or use --explain DIR)")
    eps = parse_epsilon(epsilon)
    if not eps > 0:
        raise InputError(f"epsilon must be > 0, got {epsilon}", field="--epsilon")
    if not 0 < delta < 1:
        raise InputError(f"delta must be in (0, 1), got {delta:g}", field="--delta")
    if accounting not in ("paper", "tight"):
        raise InputError(f"--accounting must be paper or tight, got {accounting!r}")
    if bound not in ("reject", "truncate"):
        raise InputError(f"--bound must be reject or truncate, got {bound!r}")
    from topicslab import io as tio

    t0 = time.perf_counter()
    data = tio.read_sets(sets_path)
    try:
        result = dp.compute_statistics(
            data, weeks=_ints(weeks, "weeks"), k=k, epsilon=eps, delta=delta,
            split=_floats(split, "split"), accounting=accounting,  # type: ignore[arg-type]
            bound=bound, seed=seed)  # type: ignore[arg-type]
    except ValueError as exc:
        raise InputError(str(exc)) from None
    except InputError as exc:
        raise exc.located(file=str(sets_path)) from None
    dp.save_statistics(out_dir, result)
    dt = time.perf_counter() - t0
    if delta >= 1.0 / max(result.n_estimate, 1.0):
        err.print(f"[yellow]warning[/]: delta={delta:g} >= 1/n (n ≈ {result.n_estimate:,.0f}): "
                  "such a delta allows releasing individual users' data")
    if seed is not None:
        err.print("[yellow]note[/]: --seed given: the noise is NOT cryptographically secure")
    led = result.ledger
    assert led is not None
    table = Table(title=f"DP statistics → {out_dir}")
    table.add_column("mechanism")
    table.add_column("Δ2", justify="right")
    table.add_column("σ", justify="right")
    table.add_column("ε_i", justify="right")
    table.add_column("δ_i", justify="right")
    for mq in led.mechanisms:
        table.add_row(mq["name"], f"{mq['sensitivity']:.4g}", f"{mq['sigma']:.4f}",
                      f"{mq['epsilon']:.4g}", f"{mq['delta']:.3g}")
    out.print(table)
    summary = Table(show_header=False)
    comp = led.composition
    summary.add_row("claimed (ε, δ)", f"({led.claimed['epsilon']:.6g}, {led.claimed['delta']:g})")
    summary.add_row("composed ε (Gaussian, exact)", f"{comp['gaussian']['epsilon']:.6g}")
    summary.add_row("composed ε (discrete, zCDP)", f"{comp['zcdp']['epsilon']:.6g}")
    summary.add_row("accounting", accounting)
    summary.add_row("n estimate", f"{result.n_estimate:,.0f}")
    summary.add_row("seconds", f"{dt:.1f}")
    out.print(summary)
