"""``topicslab stats``: DP statistics of topic sets -> release directory + privacy ledger.

Thin wrapper over ``topicslab.dp.compute_statistics`` (``--engine local``, in memory),
``topicslab.dp.stream.stream_statistics`` (``--engine stream``, out of core) or
``topicslab.dp.spark.spark_statistics`` (``--engine spark [--master URL]``), then
``save_statistics``; ``--engine auto`` streams Parquet inputs of ``AUTO_STREAM_USERS`` users
or more. ``--explain DIR`` prints a directory's ``privacy_ledger.json`` as tables.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

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


#: ``--engine auto`` streams Parquet inputs of at least this many users: reading them whole
#: would take several GB (the in-memory engine peaks at ~190 bytes per user: 1.9 GiB for 10M).
AUTO_STREAM_USERS = 20_000_000
ENGINES = ("local", "stream", "spark", "auto")


def _pick_engine(engine: str, path: Path) -> str:
    if engine != "auto":
        return engine
    from topicslab.dp.stream import input_users

    n = input_users(path)
    return "stream" if n is not None and n >= AUTO_STREAM_USERS else "local"


def _ints(text: str | None, what: str) -> list[int] | None:
    if text is None:
        return None
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise typer.BadParameter(f"cannot read {what} {text!r}") from None


#: options whose checks happen in the library, once the input's taxonomy and weeks are known
_LIBRARY_CHECKED = ("k", "weeks", "split")


def _option_of(message: str) -> str | None:
    """The option a library ``ValueError`` is about: its messages start with the argument's
    name (``k must be in 2..469, got 500``)."""
    first = message.split(" ", 1)[0]
    return f"--{first}" if first in _LIBRARY_CHECKED else None


@app.command()
def stats(
    sets_path: Path | None = typer.Option(None, "--sets", "-s", help="Topic-set sequences file."),
    out_dir: Path | None = typer.Option(
        None, "--out", "-o",
        help="Output directory, written whole or not at all; in an existing one the release "
             "files of an earlier write are replaced as a set (other files stay)."),
    weeks: str = typer.Option("0,1", "--weeks", help="Weeks to use (paper: the first two)."),
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
    engine: str = typer.Option(
        "local", "--engine",
        help="local (in memory) | stream (out of core, Parquet) | spark | auto (stream for "
             "Parquet inputs of 20M users or more)."),
    master: str | None = typer.Option(
        None, "--master", help="Spark master URL for --engine spark (default: spark-submit's, "
                               "else local[2])."),
    chunk_users: int = typer.Option(
        1 << 20, "--chunk-users", min=1, help="Users per chunk for --engine stream."),
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
    if engine not in ENGINES:
        raise InputError(f"--engine must be one of {', '.join(ENGINES)}, got {engine!r}",
                         field="--engine")
    if master is not None and engine != "spark":
        raise InputError("--master applies to --engine spark only", field="--master")
    from topicslab._paths import check_output_dir, no_new_empty_dirs

    check_output_dir(out_dir, "--out")
    engine = _pick_engine(engine, sets_path)
    opts: dict[str, Any] = {
        "weeks": _ints(weeks, "weeks"), "k": k, "epsilon": eps, "delta": delta,
        "split": _floats(split, "split"), "accounting": accounting, "bound": bound,
        "seed": seed}
    t0 = time.perf_counter()
    try:
        if engine == "local":
            from topicslab import io as tio

            data = tio.read_sets(sets_path)
            result = dp.compute_statistics(data, **opts)
        elif engine == "stream":
            from topicslab.dp.stream import stream_statistics

            result = stream_statistics(os.fspath(sets_path), chunk_users=chunk_users,
                                       progress=True, **opts)
        else:
            from topicslab.dp.spark import spark_statistics

            result = spark_statistics(os.fspath(sets_path), master=master, **opts)
    except ValueError as exc:
        raise InputError(str(exc), field=_option_of(str(exc))) from None
    except InputError as exc:
        raise exc.located(file=str(sets_path)) from None
    with no_new_empty_dirs(out_dir):
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
    summary.add_row("composed ε (discrete noise, zCDP, proven)", f"{comp['zcdp']['epsilon']:.6g}")
    summary.add_row("composed ε (if the noise were continuous)",
                    f"{comp['gaussian']['epsilon']:.6g}")
    summary.add_row("accounting", accounting)
    summary.add_row("engine", engine)
    summary.add_row("n estimate", f"{result.n_estimate:,.0f}")
    summary.add_row("seconds", f"{dt:.1f}")
    out.print(summary)
    if "warning" in led.claimed:
        err.print(f"[yellow]warning[/]: {led.claimed['warning']}")
