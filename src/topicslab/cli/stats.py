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
from typing import TYPE_CHECKING, Any, cast

import typer
from rich.markup import escape
from rich.table import Table

from topicslab._checks import comma_items
from topicslab.cli._app import (
    MAX_SEED,
    SETS_TAXONOMY_HELP,
    _debugging,
    app,
    err,
    given,
    out,
    parse_epsilon,
    sets_taxonomy,
    typed_text,
)
from topicslab.errors import InputError, naming_option

if TYPE_CHECKING:  # the dp package is imported only when a release is made
    from topicslab.dp.params import Accounting, BoundMode


def _floats(text: str | None, what: str) -> tuple[float, ...] | None:
    if text is None:
        return None
    try:
        return tuple(float(x) for x in comma_items(text))
    except ValueError:
        raise InputError(f"cannot read {what} {text!r}: use comma-separated numbers",
                         field=f"--{what}") from None


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


def _ints(text: str | None, what: str) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        return tuple(int(x) for x in comma_items(text))
    except ValueError:
        raise InputError(f"cannot read {what} {text!r}: use comma-separated integers",
                         field=f"--{what}") from None


@app.command()
def stats(
    sets_path: Path | None = typer.Option(None, "--sets", "-s", help="Topic-set sequences file."),
    taxonomy: str | None = typer.Option(None, "--taxonomy", help=SETS_TAXONOMY_HELP),
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
    k: int = typer.Option(5, "--k", help="Topics per week after bounding (at least 2)."),
    overlap_lags: int = typer.Option(
        0, "--overlap-lags",
        help="Also release the persistence statistic: how many topics users keep from the "
             "first week to each of the next N weeks (not in the paper; 5% of the budget). "
             "Experimental: fitting it was measured to widen, not close, the synthetic data's "
             "long-trace risk gap (docs/fidelity.md §4c). 0: the paper's release."),
    seed: int | None = typer.Option(
        None, "--seed", min=0, max=MAX_SEED,
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
        1 << 20, "--chunk-users", min=1, max=MAX_SEED,  # (2^63: OverflowError, exit 1)
        help="Users per chunk for --engine stream."),
) -> None:
    """Differentially private q_single / q_within / q_across with an exact privacy ledger."""
    from topicslab import dp

    if explain is not None:
        typed = [o for o, v in (("--sets", sets_path), ("--taxonomy", taxonomy),
                                ("--out", out_dir), ("--split", split), ("--master", master),
                                ("--seed", seed))
                 if v is not None]
        typed += [o for o, v, default in (
            ("--weeks", weeks, "0,1"), ("--epsilon", epsilon, "ln3"), ("--delta", delta, 1e-15),
            ("--accounting", accounting, "paper"), ("--bound", bound, "reject"), ("--k", k, 5),
            ("--overlap-lags", overlap_lags, 0),
            ("--engine", engine, "local"), ("--chunk-users", chunk_users, 1 << 20))
            if v != default or given(o[2:].replace("-", "_"))]
        if typed:
            raise InputError(f"--explain only prints a ledger; {typed[0]} does not apply to it "
                             "(drop it, or drop --explain to compute statistics)",
                             field=typed[0])
        with naming_option("--explain"):
            ledger = dp.load_ledger(explain)
        try:
            tables = dp.ledger_tables(ledger)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InputError(f"a ledger field has the wrong form ({type(exc).__name__}: "
                             f"{exc}); restore the ledger (or rerun topicslab stats)",
                             file=str(explain)) from None
        for table in tables:
            out.print(table)
        return
    if sets_path is None or out_dir is None:
        raise InputError("--sets and --out are required (or use --explain DIR)")
    sets_taxonomy(taxonomy)
    # the release's parameters, checked once, before any data is read
    budget = dp.PrivacyBudget(parse_epsilon(epsilon), delta, cast("Accounting", accounting),
                              _floats(split, "split"))
    contribution = dp.ContributionBound(k, cast("BoundMode", bound), _ints(weeks, "weeks"),
                                        overlap_lags)
    if engine not in ENGINES:
        raise InputError(f"--engine must be one of {', '.join(ENGINES)}, got {engine!r}",
                         field="--engine")
    if master is not None and engine != "spark":
        raise InputError("--master applies to --engine spark only", field="--master")
    if master is not None and not (master in ("local", "yarn") or master.startswith(
            ("local[", "spark://", "k8s://", "mesos://"))):
        raise InputError(f"not a Spark master URL: {master!r}; use local, local[N], yarn, "
                         "spark://HOST:PORT, k8s://... or mesos://...", field="--master")
    if (chunk_users != 1 << 20 or given("chunk_users")) and engine in ("local", "spark"):
        raise InputError(f"--chunk-users applies to --engine stream (or auto) only, not "
                         f"{engine}", field="--chunk-users")
    from topicslab._paths import check_output_dir, no_new_empty_dirs, refuse_overwriting_inputs

    # a URI as typed: Path made hdfs:///data/sets hdfs:/data/sets, which the Spark engine
    # took for a local name ("reads topic sets in wide Parquet: convert the file first")
    typed = typed_text("sets_path")
    uri = typed if isinstance(typed, str) and "://" in typed else None
    if uri is not None and engine != "spark":
        raise InputError("is a URI, which only --engine spark reads; give a local file, or "
                         "add --engine spark", file=uri, field="--sets")
    check_output_dir(out_dir, "--out", "stats")
    refuse_overwriting_inputs([("--out", out_dir)], [("--sets", sets_path)])
    picked = _pick_engine(engine, sets_path)
    # (ran with no word: auto read the input whole, and --chunk-users sized nothing; said
    # once the release is written, so that a refusal stays one line)
    chunks_unused = engine == "auto" and picked == "local" and given("chunk_users")
    engine = picked
    opts: dict[str, Any] = {"budget": budget, "contribution": contribution, "seed": seed}
    t0 = time.perf_counter()
    try:
        with naming_option("--sets"):
            if engine == "local":
                from topicslab import io as tio

                data = tio.read_sets(sets_path, taxonomy=taxonomy)
                result = dp.compute_statistics(data, **opts)
            elif engine == "stream":
                from topicslab.dp.stream import stream_statistics

                result = stream_statistics(os.fspath(sets_path), chunk_users=chunk_users,
                                           progress=True, taxonomy=taxonomy, **opts)
            else:
                from topicslab.dp.spark import spark_statistics

                # Spark's logs, progress bars and JVM lines would join the one line (--debug
                # shows them)
                result = spark_statistics(uri or os.fspath(sets_path), master=master,
                                          taxonomy=taxonomy, quiet=not _debugging(), **opts)
    except InputError as exc:  # k above the taxonomy's size, weeks past the input's, ...
        if exc.field == "weeks" and not given("weeks"):
            # an input of one week was "field '--weeks': ... got [0, 1]", a value not typed
            raise InputError(f"{exc.message}; --weeks is 0,1 when not given (the week pair "
                             "of q_across): give --weeks 0 to release the one week (a "
                             "release topicslab fit cannot fit)", file=str(sets_path),
                             field="--weeks") from None
        if exc.field == "data":
            # compute_statistics' argument is this command's --sets (an input of no users
            # was "field 'data'", where the stream engine and every other command say --sets)
            exc = InputError(exc.message, file=exc.file, row=exc.row, field="--sets")
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
    table = Table(title=f"DP statistics → {escape(str(out_dir))}")
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
    if chunks_unused:
        err.print(f"[yellow]note[/]: --chunk-users had nothing to do: --engine auto read "
                  f"{escape(sets_path.name)} in memory (it streams Parquet inputs of "
                  f"{AUTO_STREAM_USERS:,} users or more); give --engine stream to stream it")
    if "warning" in led.claimed:
        err.print(f"[yellow]warning[/]: {escape(str(led.claimed['warning']))}")
