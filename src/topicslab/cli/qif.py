"""``topicslab qif``: the privacy-utility trade-off of the Topics API (QIF, issue 7).

* parameters only -> ``topicslab.qif.parameter_table`` (eqs 21-23, App. C)
* ``--sets FILE`` -> ``topicslab.qif.population_tables`` (Tables 2-4 analogues)
* ``--plot PNG``  -> ``topicslab.qif.tradeoff_figure``
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from topicslab.cli._app import app, err, out
from topicslab.qif.errors import QIFError


def parse_int_range(text: str, *, what: str = "epochs") -> list[int]:
    """``"3"`` -> [3]; ``"1..8"`` -> [1, ..., 8] (inclusive); ``"1,2,5"`` -> [1, 2, 5]."""
    t = text.strip()
    m = re.fullmatch(r"(-?\d+)\s*\.\.\s*(-?\d+)", t)
    try:
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            if hi < lo:
                raise QIFError(f"empty {what} range {text!r}")
            return list(range(lo, hi + 1))
        return [int(part) for part in t.split(",") if part.strip()]
    except ValueError:
        raise QIFError(f"cannot read {what} {text!r}: use N, A..B or A,B,C") from None


def _num(x: Any) -> str:
    if isinstance(x, bool) or x is None:
        return "—" if x is None else str(x)
    if isinstance(x, int):
        return f"{x:,}"
    if not math.isfinite(x):
        return "∞"
    if x != 0 and (abs(x) >= 1e9 or abs(x) < 1e-4):
        return f"{x:.4e}"
    return f"{x:,.4f}" if abs(x) < 1e4 else f"{x:,.2f}"


def _jsonable(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return "inf" if x > 0 else "-inf"
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_jsonable(v) for v in x]
    return x


@app.command()
def qif(
    m: int | None = typer.Option(None, "--m", help="Taxonomy size (default 469, or the data's)."),
    s: int | None = typer.Option(None, "--s", help="Top-s set size (default 5, or the data's)."),
    r: float = typer.Option(0.05, "--r", help="Probability of a random topic."),
    epochs: str = typer.Option("1", "--epochs", help="Epochs: N, A..B (inclusive) or A,B,C."),
    sets_path: Path | None = typer.Option(None, "--sets",
                                          help="Topic sets file: print the data tables."),
    week: int = typer.Option(0, "--week", help="Week analysed as one epoch (with --sets)."),
    weeks: str | None = typer.Option(None, "--weeks",
                                     help="Weeks analysed as one profile, e.g. 0..3."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    plot: Path | None = typer.Option(None, "--plot", help="Write the trade-off figure (PNG)."),
) -> None:
    """Capacities, epsilon and Tables 2-4 of the Topics API (Alvim et al., CCS 2024)."""
    from topicslab import qif as q

    if sets_path is None:
        mm = 469 if m is None else m
        ss = 5 if s is None else s
        ks = parse_int_range(epochs)
        if any(k < 1 for k in ks):
            raise QIFError("the number of epochs must be at least 1")
        q.check_params(mm, ss, r)
        rows = q.parameter_table(mm, ss, r, ks)
        if as_json:
            typer.echo(json.dumps(_jsonable(rows)))
        else:
            table = Table(title=f"Topics API capacities: m = {mm}, s = {ss}, r = {r}")
            for col in ("epochs", "ML×₁ same set", "ML×₁ indep. sets", "e^ε", "ε"):
                table.add_column(col, justify="right")
            for row in rows:
                table.add_row(str(row["epochs"]), _num(row["bayes_capacity"]),
                              _num(row["bayes_capacity_kronecker"]),
                              _num(row["max_case_capacity"]), _num(row["epsilon"]))
            out.print(table)
            a, qq = q.counting_a_q(mm, ss, r)
            out.print(f"p = {_num(rows[0]['p'])}, q = {qq:.6g}, A = p/q = {_num(a)}; "
                      f"P(correct count, N=10) = {q.p_correct(10, ss, r):.4%}")
    else:
        from topicslab.io import read_sets

        data = read_sets(sets_path)
        mm = data.taxonomy.size if m is None else m
        q.check_params(mm, s if s is not None else data.k, r)
        single = q.population_tables(data, weeks=week, r=r, s=s, m=mm)
        results = [single]
        if weeks is not None:
            results.append(q.population_tables(data, weeks=parse_int_range(weeks, what="weeks"),
                                               r=r, s=s, m=mm))
        if as_json:
            typer.echo(json.dumps(_jsonable([t.to_dict() for t in results])))
        else:
            from topicslab.qif.report import population_rows

            for t in results:
                label = f"week {t.epochs[0]}" if len(t.epochs) == 1 else f"weeks {t.epochs}"
                table = Table(title=f"{sets_path.name}: {label}, m = {t.m}, s = {t.s}, r = {t.r}")
                table.add_column("quantity")
                table.add_column("value", justify="right")
                table.add_column("capacity / bound", justify="right")
                for name, value, bound in population_rows(t):
                    table.add_row(name, _num(value),
                                  bound if isinstance(bound, str) else _num(bound))
                out.print(table)
        mm = single.m
        ss = single.s
    if plot is not None:
        q.tradeoff_figure(mm, reference_s=ss, reference_r=r, path=plot)
        err.print(f"wrote {plot}")


__all__ = ["parse_int_range", "qif"]
