"""``topicslab reid``: cross-site re-identification risk (spec 02; issue 5).

* ``--sets FILE``   simulate two websites' traces per trial -> ``topicslab.attacks.measure_risk``
  (``risk_curve`` when ``--weeks`` lists several values; ``--bounds`` adds ``reid_bounds``);
* ``--traces FILE`` attack given two-site traces (the smaller site id is website 1) ->
  ``topicslab.attacks.measure_risk_traces``.

Prints a rich table; ``--json FILE`` writes every figure atomically.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from topicslab.cli._app import app, err, out
from topicslab.cli.population import API_K, require_at_most_k
from topicslab.errors import InputError

_ATTACK_HELP = "hamming | asymmetric | all (or a comma list of registered attacks)."


def _attack_names(text: str) -> list[str]:
    from topicslab.attacks import available_attacks

    names = [t.strip() for t in text.split(",") if t.strip()]
    if names == ["all"]:
        return available_attacks()
    unknown = [n for n in names if n not in available_attacks()]
    if not names or unknown:
        raise InputError(f"unknown attack {', '.join(unknown) or text!r}; choose from "
                         f"{', '.join(available_attacks())} or all", field="--attack")
    return names


def _weeks(text: str) -> list[int]:
    from topicslab.cli.qif import parse_int_range

    try:
        values = parse_int_range(text, what="weeks")
    except Exception as exc:  # QIFError: re-locate on this command's option
        raise InputError(str(exc), field="--weeks") from None
    if not values or any(v < 1 for v in values):
        raise InputError(f"weeks must be positive integers, got {text!r}", field="--weeks")
    return values


def _targets(text: str) -> int | str:
    t = text.strip().lower()
    if t == "all":
        return "all"
    try:
        value = int(t)
    except ValueError:
        raise InputError(f"--targets must be a positive integer or all, got {text!r}",
                         field="--targets") from None
    if value < 1:
        raise InputError(f"--targets must be positive, got {value}", field="--targets")
    return value


def _fmt_bound(x: Any) -> str:
    if x is None:
        return "—"
    if isinstance(x, str):
        return x
    if not math.isfinite(x):
        return "∞"
    return f"{x:.4g}"


def _risk_table(title: str, results: list[Any]) -> Table:
    table = Table(title=title, caption="risks in % (95% CI over trials; E = exact expectation "
                                       "of the random tie-break)")
    for col in ("r", "attack", "risk", "± std", "95% CI", "E\\[risk]", "|argmax|"):
        table.add_column(col, justify="left" if col == "attack" else "right",
                         no_wrap=col == "attack")
    for res in results:
        for name, a in res.attacks.items():
            d = a.to_dict()
            lo, hi = d["ci95"]
            table.add_row(str(res.weeks), name, f"{100 * d['risk_mean']:.3f}",
                          f"{100 * d['risk_std']:.3f}", f"{100 * lo:.3f}–{100 * hi:.3f}",
                          f"{100 * d['expected_risk_mean']:.3f}",
                          f"{d['argmax_size_mean']:,.1f}")
    return table


def _bounds_table(bounds: list[Any]) -> Table:
    table = Table(title="bounds on any attacker's accuracy (Carey et al.)")
    table.add_column("r", justify="right")
    for col in ("LDP L3", "k-anon L7", "full info C1", "partial L2", "matching L4"):
        table.add_column(col, justify="right")
    for b in bounds:
        table.add_row(str(b.weeks), _fmt_bound(b.ldp_bound),
                      f"1/{b.k_anonymity}",
                      _fmt_bound(b.full_information_bound),
                      _fmt_bound(b.partial_information_bound), _fmt_bound(b.matching_bound))
    return table


@app.command()
def reid(
    sets_path: Path | None = typer.Option(None, "--sets", "-s",
                                          help="Topic sets: simulate two websites per trial."),
    traces_path: Path | None = typer.Option(None, "--traces",
                                            help="Two-site traces (Parquet) to attack."),
    attack: str = typer.Option("all", "--attack", "-a", help=_ATTACK_HELP),
    weeks: str | None = typer.Option(
        None, "--weeks", "-w",
        help="Call-weeks r: N, or a curve A,B,C / A..B with --sets (default 4; with --traces "
             "all the file's weeks)."),
    targets: str = typer.Option("10240", "--targets", "-t",
                                help="Targets per trial, or all (every user once)."),
    trials: int | None = typer.Option(None, "--trials", min=1,
                                      help="Trials (default 10 with --sets, 1 with --traces)."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of API secrets, targets, ties."),
    json_path: Path | None = typer.Option(None, "--json", help="Write every figure as JSON."),
    p: float = typer.Option(0.05, "--p", help="Probability of a random topic (mechanism)."),
    lookback: int = typer.Option(1, "--lookback", min=1,
                                 help="Epochs returned per call (1 as in the papers; 3 Chrome)."),
    setting: str = typer.Option("random-user", "--setting",
                                help="random-user | matching (Lemma 5: every user)."),
    engine: str = typer.Option("exact", "--engine", help="exact | brute (reference)."),
    bounds: bool = typer.Option(False, "--bounds",
                                help="Also compute the framework's bounds (with --sets)."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bars."),
    k: int = typer.Option(API_K, "--k", min=1,
                          help="Most topics a week of --sets may hold (the API's top 5, as "
                               "stats --k)."),
) -> None:
    """Cross-site re-identification risk: Hamming and asymmetric attacks, exact engine."""
    from topicslab import attacks as atk
    from topicslab._paths import check_output_file
    from topicslab.api import Mechanism

    if (sets_path is None) == (traces_path is None):
        raise InputError("give exactly one of --sets or --traces")
    if json_path is not None:
        check_output_file(json_path, "--json", (".json",), "JSON")
    names = _attack_names(attack)
    r_list = _weeks(weeks) if weeks is not None else None
    n_targets = _targets(targets)
    payload: dict[str, Any]
    try:
        if sets_path is not None:
            from topicslab.io import read_sets

            data = read_sets(sets_path)
            require_at_most_k(data, k, sets_path)
            mech = Mechanism(k=data.k, p=p, taxonomy=data.taxonomy, lookback=lookback)
            opts: dict[str, Any] = dict(attacks=names, targets=n_targets,
                                        trials=trials or 10, seed=seed, mechanism=mech,
                                        progress=progress, setting=setting, engine=engine)
            r_list = r_list or [4]
            if len(r_list) == 1:
                results = [atk.measure_risk(data, weeks=r_list[0], **opts)]
                payload = results[0].to_dict()
            else:
                curve = atk.risk_curve(data, weeks=r_list, **opts)
                results = curve.results
                payload = curve.to_dict()
            found = [atk.reid_bounds(data, weeks=r, mechanism=mech, seed=seed)
                     for r in r_list] if bounds else []
            if found:
                payload["bounds"] = ([b.to_dict() for b in found] if len(found) > 1
                                     else found[0].to_dict())
            title = f"{sets_path.name}: {data.n_users:,} users"
        else:
            assert traces_path is not None
            from topicslab.io import read_traces

            if bounds:
                raise InputError("--bounds needs the profiles: use --sets", field="--bounds")
            if r_list is not None and len(r_list) > 1:
                raise InputError("--weeks lists apply to --sets", field="--weeks")
            tr = read_traces(traces_path)
            mech = Mechanism(p=p, taxonomy=tr.taxonomy, lookback=lookback)
            site1, site2 = atk.split_sites(tr)
            use = site1.shape[1] if r_list is None else r_list[0]
            if use > site1.shape[1]:
                raise InputError(f"the traces have {site1.shape[1]} weeks, {use} requested",
                                 field="--weeks")
            res = atk.measure_risk_traces(site1[:, -use:], site2[:, -use:], attacks=names,
                                          targets=n_targets, trials=trials or 1, seed=seed,
                                          mechanism=mech, progress=progress, setting=setting,
                                          engine=engine)
            results = [res]
            payload = res.to_dict()
            found = []
            title = f"{traces_path.name}: {res.users:,} users"
    except ValueError as exc:
        raise InputError(str(exc)) from None
    except InputError as exc:
        raise exc.located(file=str(sets_path or traces_path)) from None
    first = results[0]
    seconds = sum(r.seconds for r in results)
    title += (f", {first.targets:,} targets × {first.trials} trial(s), {first.setting}, "
              f"{seconds:.1f} s")
    out.print(_risk_table(title, results))
    if found:
        out.print(_bounds_table(found))
        if any(b.full_information_bound is None for b in found):
            err.print("[dim]—: intractable (more than 2 weeks: |T|^r traces)[/]")
    for note in dict.fromkeys(n for r in results for n in r.notes):
        err.print(f"[yellow]note[/]: {note}")
    if json_path is not None:
        from topicslab._atomic import write_text_atomic

        write_text_atomic(json_path, json.dumps(payload, indent=2))
        err.print(f"wrote {json_path}")


__all__ = ["reid"]
