"""``topicslab ingest``: a visits log + a domain -> topics table -> weekly top-k TopicSets.

Thin wrapper over ``topicslab.api.ingest.ingest_visits`` (the counting, then the mechanism's
own top-k) and ``topicslab.io.write_sets``; prints what was read, how many visits fell on
domains the table does not classify and the most visited of those (``--unclassified FILE``
writes them all, to classify them next).
"""

from __future__ import annotations

import contextlib
import csv
import time
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from topicslab._numbers import format_number
from topicslab.cli._app import MAX_SEED, app, err, out
from topicslab.errors import InputError, naming_option

#: the extensions ``write_sets`` writes (its format follows the name)
SETS_SUFFIXES = (".parquet", ".pq", ".csv", ".txt", ".tsv", ".tab", ".tfrecord")


def _pct(part: int, whole: int) -> str:
    share = f" ({format_number(part / whole, percent=True)})" if whole else ""
    return format_number(part) + share


@app.command()
def ingest(
    visits: Path = typer.Option(..., "--visits", "-v",
                                help="Visits log: Parquet, CSV or TSV with user_id, timestamp "
                                     "(or week) and url (or host)."),
    domains: Path = typer.Option(..., "--domains", "-d",
                                 help="Domain -> topic ids table: CSV/TSV (domain, topics) or "
                                      "JSON (domain: list of ids)."),
    out_path: Path = typer.Option(..., "--out", "-o",
                                  help="TopicSets file (.parquet, .csv, .tsv or .tfrecord), "
                                       "written whole or not at all."),
    epoch_start: str | None = typer.Option(
        None, "--epoch-start",
        help="Start of epoch 0, a date (midnight UTC) such as 2024-01-01, or an ISO 8601 "
             "time (2024-01-01T06:00, UTC unless it gives an offset); epochs are 7 days. "
             "Default: the first visit's day."),
    week_column: str | None = typer.Option(
        None, "--week-column", help="Read epochs from this integer column (0, 1, ...)."),
    timestamp_column: str | None = typer.Option(
        None, "--timestamp-column", help="Read visit times from this column."),
    taxonomy: str = typer.Option("v2", "--taxonomy", help="Taxonomy of the topic ids: v1|v2."),
    k: int = typer.Option(5, "--k", help="Topics per weekly profile (Chrome: 5)."),
    seed: int = typer.Option(0, "--seed", min=0, max=MAX_SEED,
                             help="Seed of the mechanism's tie-breaks and padding topics."),
    top: int = typer.Option(10, "--top-unclassified", min=0,
                            help="How many of the most visited unclassified domains to show."),
    unclassified: Path | None = typer.Option(
        None, "--unclassified",
        help="Also write every unclassified domain and its visits to this CSV file."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Weekly Topics API profiles from browsing histories (Alvim et al.'s pipeline)."""
    from topicslab import io as tio
    from topicslab._atomic import atomic_path
    from topicslab._paths import check_output_file, refuse_overwriting_inputs
    from topicslab.api.ingest import ingest_visits
    from topicslab.taxonomy import VERSIONS

    if taxonomy not in VERSIONS:
        raise InputError(f"--taxonomy must be one of {', '.join(VERSIONS)}, got {taxonomy!r}",
                         field="--taxonomy")
    check_output_file(out_path, "--out", SETS_SUFFIXES, "TopicSets")
    if unclassified is not None:
        check_output_file(unclassified, "--unclassified", (".csv",), "CSV")
    refuse_overwriting_inputs([("--out", out_path), ("--unclassified", unclassified)],
                              [("--visits", visits), ("--domains", domains)])
    t0 = time.perf_counter()
    # an error about either file as a whole names the option that gave it (a directory, an
    # unknown extension: "S: is a directory, expected a file", no field)
    with naming_option("--visits", file=str(visits)), \
            naming_option("--domains", file=str(domains)):
        res = ingest_visits(visits, domains, epoch_start=epoch_start, week_column=week_column,
                            timestamp_column=timestamp_column, k=k, taxonomy=taxonomy,
                            seed=seed, progress=not quiet and err.is_terminal)
    r = res.report
    # the two outputs together: the list is renamed into place only once the sets are
    with contextlib.ExitStack() as stack:
        if unclassified is not None:
            tmp = stack.enter_context(atomic_path(unclassified))
            with open(tmp, "w", encoding="utf-8", newline="") as fh:
                writer = csv.writer(fh, lineterminator="\n")
                writer.writerow(["domain", "visits"])
                writer.writerows(r.unclassified)
        tio.write_sets(out_path, res.sets)
    dt = time.perf_counter() - t0
    table = Table(title=f"ingest → {escape(str(out_path))}", show_header=False)
    table.add_row("visits", f"{r.visits:,}")
    table.add_row("users × weeks", f"{r.users:,} × {r.weeks}")
    table.add_row("epoch 0 starts", r.epoch_start or "(week column)")
    table.add_row("distinct domains", f"{r.domains_seen:,}")
    table.add_row("visits on classified domains", _pct(r.classified_visits, r.visits))
    table.add_row("visits on domains with no topic", _pct(r.no_topic_visits, r.visits))
    table.add_row("visits on unclassified domains",
                  f"{_pct(r.unclassified_visits, r.visits)} on {r.unclassified_domains:,} "
                  "domains")
    weeks = r.users * r.weeks
    table.add_row(f"padded user-weeks (< {k} topics)", _pct(r.padded_user_weeks, weeks))
    table.add_row("user-weeks with no topic", _pct(r.empty_user_weeks, weeks))
    table.add_row("seconds", f"{dt:.1f}")
    out.print(table)
    if r.unclassified and top:
        n_shown = min(top, len(r.unclassified))
        shown = Table(title=f"unclassified: top {n_shown} of {len(r.unclassified):,}")
        shown.add_column("domain")
        shown.add_column("visits", justify="right")
        for d, v in r.unclassified[:top]:
            shown.add_row(escape(d), f"{v:,}")
        out.print(shown)
    if r.unclassified_visits:
        err.print(f"[yellow]note[/]: {r.unclassified_visits:,} visits on "
                  f"{r.unclassified_domains:,} domains missing from {escape(str(domains))} "
                  "count towards no topic"
                  + (f"; all listed in {escape(str(unclassified))}" if unclassified else
                     " (--unclassified FILE lists them all)"), soft_wrap=True)
