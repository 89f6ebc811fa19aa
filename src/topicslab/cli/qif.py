"""``topicslab qif``: the privacy-utility trade-off of the Topics API (QIF, issue 7).

* parameters only -> ``topicslab.qif.parameter_table`` (eqs 21-23, App. C)
* ``--sets FILE`` -> ``topicslab.qif.population_tables`` (Tables 2-4 analogues)
* ``--plot PNG``  -> ``topicslab.qif.tradeoff_figure``
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from topicslab._checks import comma_items
from topicslab._json import dumps
from topicslab._numbers import format_number
from topicslab.cli._app import (
    SETS_TAXONOMY_HELP,
    app,
    echo_data,
    err,
    given,
    out,
    sets_taxonomy,
)
from topicslab.errors import InputError, naming_option
from topicslab.qif.errors import QIFError
from topicslab.qif.topics import MAX_TOPICS

#: the most values an ``A..B`` range may list: far more than any option needs (epochs stop at
#: 40, weeks at the data's), few enough that reading ``1..10000000000`` cannot fill memory
MAX_RANGE_VALUES = 10_000


def _epochs(text: str) -> list[int]:
    from topicslab.qif import check_epochs

    try:
        ks = parse_int_range(text)
    except QIFError as exc:
        raise InputError(str(exc), field="--epochs") from None
    if len(set(ks)) != len(ks):  # a repeated row says nothing new (as --weeks refuses it)
        raise InputError(f"epochs must be distinct, got {text!r}", field="--epochs")
    return check_epochs(ks)  # QIFParameterError naming epochs: reported as --epochs


def _week_list(text: str) -> list[int]:
    try:
        ws = parse_int_range(text, what="weeks")
    except QIFError as exc:
        raise InputError(str(exc), field="--weeks") from None
    if not ws or any(w < 0 for w in ws):
        raise InputError(f"weeks are indices 0, 1, ... of the data, got {text!r}",
                         field="--weeks")
    if len(set(ws)) != len(ws):
        twice = next(w for w in ws if ws.count(w) > 1)
        raise InputError(f"week {twice} is listed twice in {text!r}; list each week once",
                         field="--weeks")
    return ws


def parse_int_range(text: str, *, what: str = "epochs") -> list[int]:
    """``"3"`` -> [3]; ``"1..8"`` -> [1, ..., 8] (inclusive); ``"1,2,5"`` -> [1, 2, 5]."""
    t = text.strip()
    m = re.fullmatch(r"(-?\d+)\s*\.\.\s*(-?\d+)", t, re.ASCII)  # (１..２ was read as 1..2)
    try:
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            if hi < lo:
                raise QIFError(f"empty {what} range {text!r}")
            if hi - lo >= MAX_RANGE_VALUES:
                raise QIFError(f"{what} range {text!r} lists {hi - lo + 1:,} values, more "
                               f"than {MAX_RANGE_VALUES:,}")
            return list(range(lo, hi + 1))
        return [int(part) for part in comma_items(t)]
    except ValueError:
        raise QIFError(f"cannot read {what} {text!r}: use N, A..B or A,B,C") from None


def _check_tables_size(data: Any, m: int, epochs: list[int]) -> None:
    """Refuse the data tables when they cannot fit in memory (a large --m: one epoch's IBA
    vulnerability needs m x m tables)."""
    from topicslab._resources import require_memory
    from topicslab.qif import tables_memory

    need = max(tables_memory(data.n_users, m, n_ep, data.k) for n_ep in epochs)
    require_memory(need, f"the QIF tables of {data.n_users:,} users over m = {m:,} topics",
                   field="--m", hint="use a smaller --m (default: the data's taxonomy)")


#: capacities and ε are shown to 6 significant digits (the papers' tables)
_DIGITS = 6


@app.command()
def qif(
    m: int | None = typer.Option(None, "--m", help="Taxonomy size (default 469, or the data's)."),
    s: int | None = typer.Option(None, "--s", help="Top-s set size (default 5, or the data's)."),
    r: float = typer.Option(0.05, "--r", help="Probability of a random topic."),
    epochs: str = typer.Option("1", "--epochs", help="Epochs: N, A..B (inclusive) or A,B,C."),
    sets_path: Path | None = typer.Option(None, "--sets",
                                          help="Topic sets file: print the data tables."),
    taxonomy: str | None = typer.Option(None, "--taxonomy", help=SETS_TAXONOMY_HELP),
    week: int | None = typer.Option(None, "--week", min=0,
                             help="Week analysed as one epoch (with --sets)."),
    weeks: str | None = typer.Option(None, "--weeks",
                                     help="Weeks analysed as one profile, e.g. 0..3."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    plot: Path | None = typer.Option(None, "--plot", help="Write the trade-off figure (PNG)."),
) -> None:
    """Capacities, epsilon and Tables 2-4 of the Topics API (Alvim et al., CCS 2024)."""
    from topicslab import qif as q
    from topicslab._paths import check_output_file, refuse_overwriting_inputs

    r += 0.0  # --r -0 is r = 0 (it printed "q = -0" and "r = -0.0")
    if plot is not None:
        check_output_file(plot, "--plot", (".png",), "PNG")
        refuse_overwriting_inputs([("--plot", plot)], [("--sets", sets_path)])
    sets_taxonomy(taxonomy)
    if sets_path is None:
        for option, value, does in (
                ("--week", week is not None, "selects weeks of --sets"),
                ("--weeks", weeks is not None, "selects weeks of --sets"),
                # (said "--taxonomy selects weeks of --sets")
                ("--taxonomy", taxonomy is not None, "tells the taxonomy of --sets")):
            if value:
                raise InputError(f"{option} {does}: give --sets",
                                 field=option)
        channel = q.ReportingChannel(469 if m is None else m, 5 if s is None else s, r)
        mm, ss = channel.m, channel.s
        ks = _epochs(epochs)
        rows = q.parameter_table(mm, ss, r, ks)
        if as_json:
            echo_data(dumps(rows))
        else:
            table = Table(title=f"Topics API capacities: m = {mm}, s = {ss}, r = {r}")
            for col in ("epochs", "ML×₁ same set", "ML×₁ indep. sets", "e^ε", "ε"):
                table.add_column(col, justify="right")
            for row in rows:
                table.add_row(str(row["epochs"]), *(
                    format_number(row[key], digits=_DIGITS) for key in
                    ("bayes_capacity", "bayes_capacity_kronecker", "max_case_capacity",
                     "epsilon")))
            out.print(table)
            a, qq = q.counting_a_q(mm, ss, r)
            out.print(f"p = {format_number(rows[0]['p'], digits=_DIGITS)}, q = {qq:.6g}, "
                      f"A = p/q = {format_number(a, digits=_DIGITS)}; "
                      f"P(correct count, N=10) = {q.p_correct(10, ss, r):.4%}")
    else:
        from topicslab.io import read_sets

        if epochs != "1" or given("epochs"):
            raise InputError("--epochs applies to the parameter tables, without --sets "
                             "(with --sets use --week or --weeks)", field="--epochs")
        week_list = _week_list(weeks) if weeks is not None else None
        week = 0 if week is None else week
        # the channel's parameters, checked once before the data is read (m and s as far as
        # they are known: m is then checked against the data's taxonomy by the library)
        q.ReportingChannel(MAX_TOPICS if m is None else m, 1 if s is None else s, r)
        with naming_option("--sets"):
            data = read_sets(sets_path, taxonomy=taxonomy)
        if data.n_users == 0:  # "the population is empty", naming no file
            raise InputError("holds no users: there is nothing to analyse",
                             file=str(sets_path), field="--sets")
        too_late = [w for w in [week, *(week_list or [])] if w >= data.n_weeks]
        if too_late:
            raise InputError(f"week {too_late[0]} is out of range: the data has "
                             f"{data.n_weeks} weeks (0..{data.n_weeks - 1})",
                             file=str(sets_path), field="--weeks" if week < data.n_weeks
                             else "--week")
        mm = data.taxonomy.size if m is None else m
        q.ReportingChannel(mm, s if s is not None else data.k, r)
        _check_tables_size(data, mm, [1] + ([len(week_list)] if week_list else []))
        single = q.population_tables(data, weeks=week, r=r, s=s, m=mm)
        results = [single]
        if week_list is not None:
            results.append(q.population_tables(data, weeks=week_list, r=r, s=s, m=mm))
        if as_json:
            echo_data(dumps(results))
        else:
            from topicslab.qif.report import population_rows

            for t in results:
                label = f"week {t.epochs[0]}" if len(t.epochs) == 1 else f"weeks {t.epochs}"
                table = Table(title=f"{escape(sets_path.name)}: {label}, m = {t.m}, s = {t.s}, "
                                    f"r = {t.r}")
                table.add_column("quantity")
                table.add_column("value", justify="right")
                table.add_column("capacity / bound", justify="right")
                for name, value, bound in population_rows(t):
                    table.add_row(name, format_number(value, digits=_DIGITS),
                                  format_number(bound, digits=_DIGITS))
                out.print(table)
        mm = single.m
        ss = single.s
    if plot is not None:
        q.tradeoff_figure(mm, reference_s=ss, reference_r=r, path=plot)
        err.print(f"wrote {escape(str(plot))}")


__all__ = ["parse_int_range", "qif"]
