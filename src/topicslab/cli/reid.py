"""``topicslab reid``: cross-site re-identification risk (Carey et al.; issue 5).

* ``--sets FILE``   simulate two websites' traces per trial -> ``topicslab.attacks.measure_risk``
  (``risk_curve`` when ``--weeks`` lists several values; ``--bounds`` adds ``reid_bounds``);
* ``--traces FILE`` attack given two-site traces (the smaller site id is website 1) ->
  ``topicslab.attacks.measure_risk_traces``.

Prints a rich table; ``--json FILE`` writes every figure atomically.
"""

from __future__ import annotations

import contextlib
import math
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from topicslab._checks import comma_items
from topicslab._numbers import format_number
from topicslab.cli._app import (
    MAX_SEED,
    SETS_TAXONOMY_HELP,
    app,
    err,
    given,
    on_interrupt,
    out,
    sets_taxonomy,
)
from topicslab.cli.population import API_K, require_at_most_k
from topicslab.errors import InputError, naming_option

_ATTACK_HELP = ("hamming | asymmetric | learned (with --attack-model) | all (or a comma list "
                "of attacks).")


def _attack_names(text: str) -> list[str]:
    from topicslab.attacks import available_attacks

    try:
        names = comma_items(text)
    except ValueError as exc:
        if "is not ASCII" not in str(exc):
            raise InputError(str(exc), field="--attack") from None
        # an attack is a name, not a number: "'hämming' is not ASCII (numbers are read in
        # the digits 0-9 only)" was the line; it is an unknown attack, refused below
        names = [t.strip() for t in text.split(",")]
    if "learned" in names and names.count("learned") > 1:
        # the hand-made attacks' repeats are refused by the library; learned never reaches it
        raise InputError(f"attack learned given twice in {text!r}", field="--attack")
    if names == ["all"]:
        return available_attacks()
    if "all" in names:  # ("unknown attack 'all'; choose from ... or all")
        raise InputError(f"'all' names every attack: give --attack all alone, or list the "
                         f"attacks, got {text!r}", field="--attack")
    unknown = [n for n in names if n not in available_attacks() and n != "learned"]
    if not names or unknown:
        raise InputError(f"unknown attack {', '.join(unknown) or text!r}; choose from "
                         f"{', '.join(available_attacks())}, learned or all", field="--attack")
    return names


def _weeks(text: str, lookback: int, *, past_the_engines: bool = False) -> list[int]:
    """The call-weeks of ``text``, checked against the engines' range; ``past_the_engines``
    lets weeks above that range through, for a check against the data's weeks first (a
    file of 4 weeks: ``--weeks 20`` is past its weeks, whatever the engines take)."""
    from topicslab.attacks import check_call_weeks
    from topicslab.cli.qif import parse_int_range

    try:
        values = parse_int_range(text, what="weeks")
    except Exception as exc:  # QIFError: re-locate on this command's option
        raise InputError(str(exc), field="--weeks") from None
    if not values:
        raise InputError(f"no weeks in {text!r}", field="--weeks")
    if len(set(values)) != len(values):
        # a repeated r would measure the same point twice (as --attack refuses a repeat)
        raise InputError(f"weeks must be distinct, got {text!r}", field="--weeks")
    return [v if past_the_engines and v >= 1 else check_call_weeks(v, lookback)
            for v in values]


def _check_weeks_of(r_list: list[int], lookback: int, n_weeks: int, file: Path) -> list[int]:
    """Call-weeks answered from the last ``lookback`` epochs need ``r + lookback - 1`` weeks
    of profiles: more than the file holds is refused naming its weeks; then the engines'
    own range."""
    from topicslab.attacks import check_call_weeks

    for r in r_list:
        if r + lookback - 1 > n_weeks:
            most = n_weeks - lookback + 1
            advice = f"use --weeks {most} or less" if most >= 1 else "use a smaller --lookback"
            raise InputError(f"--weeks {r} with --lookback {lookback} needs {r + lookback - 1} "
                             f"weeks of profiles; the file has {n_weeks}: {advice}",
                             file=str(file), field="--weeks")
    return [check_call_weeks(r, lookback) for r in r_list]


def _check_size(protocol: Any, users: int, weeks: int, attacks: int) -> None:
    """Refuse a protocol whose targets and trials cannot fit in memory, naming the option
    that weighs most."""
    from topicslab._resources import require_memory

    work, trials = protocol.memory(users, weeks, attacks)
    count = protocol.target_count(users)
    targets = f"{users if count is None else count:,} targets x " if users else ""
    require_memory(work + trials, f"re-identification of {targets}{protocol.trials:,} trials",
                   field="--trials" if trials >= work else "--targets",
                   hint="use fewer --trials" if trials >= work else "use fewer --targets")


#: Bytes per edge of the one-to-one matching's candidate graph (rows, users, weights, tags and
#: each attack's copies, then the solver's sparse matrix): ~78 measured at 3,000 users.
_EDGE_BYTES = 80


def _check_matching_size(opts: Any, users: int, attacks: int) -> None:
    """The candidate graph holds users x min(--candidates, users) edges per attack: refused
    before any trace is drawn when it cannot fit (--candidates 100000 at 100K users asked
    for terabytes after minutes of work)."""
    from topicslab._resources import require_memory

    if opts is None:
        return
    keep = min(opts.candidates, users)
    if opts.candidates > users and given("candidates"):
        # typed past the population it was used as every user without a word (as
        # attack-train's counts and --targets say it)
        err.print(f"[yellow]note[/]: --candidates {opts.candidates:,} but only {users:,} "
                  "users: every user is a candidate of every trace (the complete graph)")
    require_memory(_EDGE_BYTES * users * keep * max(1, attacks),
                   f"the one-to-one matching's candidate graph of {users:,} traces x {keep:,} "
                   f"candidates x {attacks} attack(s)", field="--candidates",
                   hint="use fewer --candidates")


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


#: Targets of the Bayes attacker where its exact value is out of reach (±0.7% at 50%).
BAYES_TARGETS = 20_000


def _bayes_cell(b: Any, bay: Any) -> str:
    if b.full_information_bound is not None:
        return format_number(b.full_information_bound)
    lo, hi = bay.ci95
    return f"{bay.risk:.4g} ± {(hi - lo) / 2:.2g}"


def _bounds_table(bounds: list[Any], bayes: list[Any]) -> Table:
    table = Table(title="the Bayes attacker and bounds on any attacker's accuracy (Carey et "
                        "al.)",
                  caption="Bayes C1: full-information Bayes-optimal accuracy, exact; with ±: "
                          "measured on sampled traces (95% CI)")
    certified = any(b.full_information_interval is not None for b in bounds)
    table.add_column("r", justify="right")
    cols = ("Bayes C1", *(("C1 certified",) if certified else ()), "partial L2",
            "matching L4", "MI L9", "LDP L3", "k-anon L7")
    for col in cols:
        table.add_column(col, justify="right", no_wrap=col.startswith(("Bayes", "C1")))
    for b, bay in zip(bounds, bayes, strict=True):
        interval = b.full_information_interval
        cells = [str(b.weeks), _bayes_cell(b, bay)]
        if certified:
            cells.append("—" if interval is None
                         else f"{interval[0]:.4g}–{interval[1]:.4g}")
        table.add_row(*cells, format_number(b.partial_information_bound),
                      format_number(b.matching_bound), format_number(b.mutual_information_bound),
                      format_number(b.ldp_bound), f"1/{b.k_anonymity}")
    return table


def _matching_options(matching: str, candidates: int, objective: str, solver: str,
                      setting: str) -> Any:
    """The checked options of the one-to-one matching attack, or ``None`` (Lemma 5's per-item
    rule only); options that only the assignment reads are refused without it."""
    from topicslab.attacks.matching import DEFAULT_CANDIDATES, MatchingOptions
    from topicslab.errors import ParameterError

    try:
        opts = MatchingOptions(matching, candidates, objective, solver)
    except (ParameterError, InputError) as exc:
        raise InputError(exc.message, field=f"--{exc.field}") from None
    if setting != "matching" and (opts.matching != "per-item" or given("matching")):
        # the random-user setting has no matching to choose (the assignment needs every
        # user's website-2 trace); typed at its default too, it is a mistake
        raise InputError("--matching chooses the attack of the matching setting: add "
                         "--setting matching (or drop --matching)", field="--matching")
    if opts.matching == "per-item":
        # typed at its default value is still typed: refused too, not silently ignored
        for name, value, default in (("--candidates", candidates, DEFAULT_CANDIDATES),
                                     ("--objective", objective, "loglik"),
                                     ("--solver", solver, "lapjv")):
            if value != default or given(name[2:]):
                raise InputError(f"{name} applies to the one-to-one attack: add --setting "
                                 "matching --matching assignment", field=name)
        return None
    return opts


def _matching_table(results: list[Any]) -> Table:
    table = Table(title="matching setting: one-to-one assignment vs the per-item random-user "
                        "rule (Lemma 5), same traces",
                  caption="success in %; ties at random (users and traces relabelled at "
                          "random), one draw per trial")
    for col in ("r", "attack", "1-to-1", "95% CI", "per-item", "E\\[per-item]", "in graph",
                "edges"):
        table.add_column(col, justify="left" if col == "attack" else "right",
                         no_wrap=col == "attack")
    for res in results:
        for name, a in res.attacks.items():
            d = a.matching_dict()
            if d is None:
                continue
            lo, hi = d["ci95_binomial"]
            in_graph = sum(m["in_graph"] for m in d["per_trial"]) / max(1, d["traces"])
            table.add_row(str(res.weeks), name, f"{100 * d['rate_mean']:.3f}",
                          f"{100 * lo:.3f}–{100 * hi:.3f}",
                          f"{100 * d['random_user_rate_mean']:.3f}",
                          f"{100 * d['random_user_expected_mean']:.3f}",
                          f"{100 * in_graph:.1f}%",
                          f"{d['per_trial'][0]['edges']:,}")
    return table


@app.command()
def reid(
    sets_path: Path | None = typer.Option(None, "--sets", "-s",
                                          help="Topic sets: simulate two websites per trial."),
    taxonomy: str | None = typer.Option(None, "--taxonomy", help=SETS_TAXONOMY_HELP),
    traces_path: Path | None = typer.Option(None, "--traces",
                                            help="Two-site traces (Parquet) to attack."),
    attack: str = typer.Option("all", "--attack", "-a", help=_ATTACK_HELP),
    weeks: str | None = typer.Option(
        None, "--weeks", "-w",
        help="Call-weeks r: N, or a curve A,B,C / A..B with --sets (default 4; with --traces "
             "all the file's weeks)."),
    targets: str = typer.Option("10240", "--targets", "-t",
                                help="Targets per trial, or all (every user once)."),
    trials: int | None = typer.Option(None, "--trials",
                                      help="Trials (default 10 with --sets, 1 with --traces)."),
    seed: int = typer.Option(0, "--seed", min=0, max=MAX_SEED,
                             help="Seed of API secrets, targets, ties."),
    json_path: Path | None = typer.Option(None, "--json", help="Write every figure as JSON."),
    p: float = typer.Option(0.05, "--p", help="Probability of a random topic (mechanism)."),
    lookback: int = typer.Option(1, "--lookback",
                                 help="Epochs returned per call (1 as in the papers; 3 Chrome)."),
    setting: str = typer.Option("random-user", "--setting",
                                help="random-user | matching (Lemma 5: every user)."),
    engine: str = typer.Option("exact", "--engine", help="exact | brute (reference)."),
    matching: str = typer.Option(
        "per-item", "--matching",
        help="With --setting matching: per-item (Lemma 5: the random-user rule per trace) | "
             "assignment (also the one-to-one assignment of traces to users; its solve "
             "step took 0.5-1.5 minutes at 100K users, see --solver)."),
    candidates: int = typer.Option(
        32, "--candidates",
        help="--matching assignment: users kept per trace in the sparse graph."),
    objective: str = typer.Option(
        "loglik", "--objective",
        help="--matching assignment: loglik (most likely permutation) | posterior (most "
             "expected correct pairs, per-trace posteriors)."),
    solver: str = typer.Option(
        "lapjv", "--solver",
        help="--matching assignment: lapjv (scipy's LAPJVsp) | cost-scaling (OR-Tools' "
             "min-cost flow; pip install 'topicslab[matching]'; the one that finished the "
             "largest graphs, docs/theory.md §5) | auto (cost-scaling when installed)."),
    bounds: bool = typer.Option(False, "--bounds",
                                help="Also compute the framework's bounds and the Bayes "
                                     "attacker with full information (with --sets)."),
    figure_path: Path | None = typer.Option(
        None, "--figure", help="With --bounds: risk, Bayes attacker and bounds against r "
                               "(PNG)."),
    certify: bool = typer.Option(
        False, "--certify",
        help="With --bounds: where Corollary 1 is not exact (r ≥ 5 weeks of the full "
             "taxonomy), also bracket it between certified bounds (docs/theory.md §2c; at "
             "1M users about 5 minutes at r = 5, 30 at r = 6, 3× more a week beyond)."),
    certify_log: Path | None = typer.Option(
        None, "--certify-log",
        help="With --certify: record each finished walk of the certified bracket in this "
             "file (.jsonl), and resume from it: a stopped run given the same file does not "
             "count again what it counted (one file serves several r and populations)."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bars."),
    k: int = typer.Option(API_K, "--k", min=1,
                          help="Most topics a week of --sets may hold (the API's top 5, as "
                               "stats --k)."),
    attack_model: Path | None = typer.Option(
        None, "--attack-model", help="Model directory of --attack learned (attack-train)."),
    device: str = typer.Option("cpu", "--device", help="cpu | cuda | auto (learned attack)."),
) -> None:
    """Cross-site re-identification risk: Hamming and asymmetric attacks, exact engine."""
    import dataclasses

    from topicslab import attacks as atk
    from topicslab._paths import check_output_file, refuse_overwriting_inputs
    from topicslab.api import Mechanism

    if (sets_path is None) == (traces_path is None):
        raise InputError("give exactly one of --sets or --traces")
    sets_taxonomy(taxonomy)
    if taxonomy is not None and sets_path is None:
        raise InputError("--taxonomy tells the taxonomy of --sets; traces carry their own "
                         "(drop --taxonomy)", field="--taxonomy")
    if traces_path is not None and (k != API_K or given("k")):
        # typed at its default value too: --k 5 was ignored without a word
        raise InputError("--k bounds the weeks of --sets; traces hold one answer per call "
                         "(drop --k)", field="--k")
    # the learned attack's model directory is an input too (--json model/model.json wrote over it)
    inputs = [("--sets", sets_path), ("--traces", traces_path), ("--attack-model", attack_model)]
    if json_path is not None:
        check_output_file(json_path, "--json", (".json",), "JSON")
        refuse_overwriting_inputs([("--json", json_path)], inputs)
    if certify and not bounds:
        raise InputError("--certify brackets the Bayes attacker of --bounds: add --bounds",
                         field="--certify")
    if certify_log is not None:
        if not certify:
            raise InputError("--certify-log records the walks of --certify: add --certify",
                             field="--certify-log")
        check_output_file(certify_log, "--certify-log", (".jsonl",), "JSON-lines")
        refuse_overwriting_inputs([("--certify-log", certify_log), ("--json", json_path),
                                   ("--figure", figure_path)], inputs)
        from topicslab.qif.walk_log import check_walk_log, logged_walks

        check_walk_log(certify_log, field="--certify-log")
        log_name, walks_before = str(certify_log), logged_walks(certify_log)

        def kept() -> str:
            try:
                added = logged_walks(log_name) - walks_before
            except InputError:  # (damaged meanwhile: say nothing wrong about it)
                added = 0
            if added <= 0:
                return "nothing written (no partial output left)"
            return (f"the {added} certified walks finished are kept in {log_name} (the same "
                    "command with it resumes there); nothing else written")

        on_interrupt(kept)
    if figure_path is not None:
        if not bounds:
            raise InputError("--figure draws the bounds: add --bounds", field="--figure")
        check_output_file(figure_path, "--figure", (".png",), "PNG")
        refuse_overwriting_inputs([("--figure", figure_path), ("--json", json_path)], inputs)
    names = _attack_names(attack)
    learned = None
    if "learned" in names:
        from topicslab.attacks.learned import load_attack

        if attack_model is None:
            raise InputError("--attack learned needs --attack-model DIR (topicslab "
                             "attack-train)", field="--attack-model")
        if sets_path is None:
            raise InputError("the learned attack runs with --sets", field="--attack")
        if setting != "random-user":
            raise InputError("the learned attack runs in the random-user setting",
                             field="--setting")
        if engine != "exact":  # named as typed (it said --setting for --engine brute)
            raise InputError("the learned attack scores with its own engine: drop --engine",
                             field="--engine")
        with naming_option("--attack-model"):
            learned = load_attack(attack_model, device=device)
        names = [n for n in names if n != "learned"]
    elif attack_model is not None:
        raise InputError("--attack-model goes with --attack learned", field="--attack-model")
    else:
        if given("device"):  # the exact attacks run on the CPU
            raise InputError("--device applies to --attack learned only", field="--device")
    if traces_path is not None and given("lookback"):
        # given traces are already observed: the lookback they were observed with is in
        # their answers, and no computation reads this one (it was only recorded)
        raise InputError("--lookback sets how --sets are observed; --traces are observed "
                         "already (drop --lookback)", field="--lookback")
    if traces_path is not None and given("p") and "asymmetric" not in names:
        # with --sets, p simulates the answers; given traces are observed already, and of
        # the attacks only the asymmetric one reads p (its weights): --attack hamming read
        # none of it and only recorded it in --json as the traces' mechanism
        raise InputError("--p sets how --sets are observed and the asymmetric attack's "
                         "weights; --traces are observed already and --attack hamming "
                         "reads no p (drop --p)", field="--p")
    if setting == "matching" and given("targets"):
        raise InputError("the matching setting makes every user a target (Lemma 5); drop "
                         "--targets", field="--targets")
    # the protocol's and the mechanism's parameters, checked once, before any data is read
    if trials is None:
        trials = 10 if traces_path is None else 1
    protocol = atk.ReidProtocol(targets, trials, setting, engine)
    match_opts = _matching_options(matching, candidates, objective, solver, setting)
    mech = Mechanism(p=p, lookback=lookback)
    # (given traces are already observed: their weeks do not depend on the lookback)
    r_list = (_weeks(weeks, lookback if traces_path is None else 1,
                     past_the_engines=traces_path is None) if weeks is not None else None)
    _check_size(protocol, 0, 1, len(names))  # the trials' part: known before the data
    payload: dict[str, Any]
    theory: Any = None
    opts: dict[str, Any] = dict(attacks=names, seed=seed, progress=progress,
                                protocol=protocol, matching=match_opts)
    try:
        if sets_path is not None:
            from topicslab.io import read_sets
            from topicslab.io.parquet_sets import TracesNotSetsError

            try:
                with naming_option("--sets"):
                    data = read_sets(sets_path, taxonomy=taxonomy)
            except TracesNotSetsError as exc:
                raise InputError(f"{exc.message}: give it as --traces", file=str(sets_path),
                                 field="--sets") from None
            if data.n_users == 0:  # was attacked: "0 users, 0 targets", exit code 0
                raise InputError("holds no users: there is nothing to attack",
                                 file=str(sets_path), field="--sets")
            require_at_most_k(data, k, sets_path)
            mech = dataclasses.replace(mech, k=data.k, taxonomy=data.taxonomy)
            r_list = (_check_weeks_of(r_list, lookback, data.n_weeks, sets_path) if r_list
                      else [atk.check_call_weeks(4, lookback)])
            _check_size(protocol, data.n_users, max(r_list) + lookback - 1, len(names))
            _check_matching_size(match_opts, data.n_users, len(names))
            if learned is not None:
                from topicslab.attacks.learned import measure_risk_learned

                if len(r_list) != 1:
                    raise InputError("the learned attack takes one --weeks (its r)",
                                     field="--weeks")
                results = [measure_risk_learned(
                    data, learned, weeks=r_list[0], compare=names,
                    targets=protocol.targets, trials=protocol.trials, seed=seed,
                    mechanism=mech, progress=progress)]
                trained_p = learned.metadata.get("p")
                if isinstance(trained_p, int | float) and not math.isclose(trained_p, p):
                    # a legitimate experiment (an attacker trained on another mechanism),
                    # but said; only once it ran (a refusal of the weeks, the lookback or
                    # the taxonomy came after this note: two lines)
                    err.print(f"[yellow]note[/]: the learned attack was trained at p = "
                              f"{trained_p:g}; these traces are simulated at p = {p:g} (its "
                              "gains Δ are estimated from website 1 as usual, its learned "
                              "terms come from the training p)")
                payload = results[0].to_dict()
            elif len(r_list) == 1:
                results = [atk.measure_risk(data, weeks=r_list[0], mechanism=mech, **opts)]
                payload = results[0].to_dict()
            else:
                curve = atk.risk_curve(data, weeks=r_list, mechanism=mech, **opts)
                results = curve.results
                payload = curve.to_dict()
            # (a whole-file error of the log names the option; other errors pass as they are)
            with (contextlib.nullcontext() if certify_log is None else
                  naming_option("--certify-log", file=str(certify_log))):
                found = [atk.reid_bounds(data, weeks=r, mechanism=mech, seed=seed,
                                         certify=certify, certify_log=certify_log,
                                         progress=progress)
                         for r in r_list] if bounds else []
            if certify and all(b.full_information_interval is None for b in found):
                # (ran with no word: at these r Corollary 1 is exact, nothing to bracket)
                err.print(f"[yellow]note[/]: --certify had nothing to do: Corollary 1 is exact "
                          f"at r = {', '.join(map(str, r_list))} (it brackets it where it is "
                          "not, from r = 5 weeks of the full taxonomy)")
            if found:
                from topicslab.attacks.bayes import bayes_risk
                from topicslab.attacks.theory import TheoryCurve

                # where Corollary 1's exact sum is out of reach: the Bayes attacker measured
                bayes = [None if b.full_information_bound is not None else bayes_risk(
                    data, weeks=r + lookback - 1, mechanism=mech, seed=seed,
                    targets=min(BAYES_TARGETS, data.n_users)) for r, b in zip(
                        r_list, found, strict=True)]
                theory = TheoryCurve(data.n_users, r_list, results, bayes, found)
                payload["bounds"] = ([b.to_dict() for b in found] if len(found) > 1
                                     else found[0].to_dict())
                payload["theory"] = theory.rows()
            title = f"{sets_path.name}: {data.n_users:,} users"
        else:
            assert traces_path is not None
            from topicslab.io import read_traces

            if bounds:
                raise InputError("--bounds needs the profiles: use --sets", field="--bounds")
            if r_list is not None and len(r_list) > 1:
                raise InputError("--weeks lists apply to --sets", field="--weeks")
            with naming_option("--traces"):
                tr = read_traces(traces_path)
            mech = dataclasses.replace(mech, taxonomy=tr.taxonomy)
            site1, site2 = atk.split_sites(tr)
            use = site1.shape[1] if r_list is None else r_list[0]
            if use > site1.shape[1]:
                raise InputError(f"the traces have {site1.shape[1]} weeks, {use} requested",
                                 field="--weeks")
            _check_size(protocol, site1.shape[0], use, len(names))
            _check_matching_size(match_opts, site1.shape[0], len(names))
            res = atk.measure_risk_traces(site1[:, -use:], site2[:, -use:], mechanism=mech,
                                          **opts)
            results = [res]
            payload = res.to_dict()
            found = []
            title = f"{traces_path.name}: {res.users:,} users"
    except InputError as exc:
        raise exc.located(file=str(sets_path or traces_path)) from None
    except ValueError as exc:  # an engine's refusal of what this data and options combine
        raise InputError(str(exc), file=str(sets_path or traces_path)) from None
    first = results[0]
    seconds = sum(r.seconds for r in results)
    title += (f", {first.targets:,} targets × {first.trials} trial(s), {first.setting}, "
              f"{seconds:.1f} s")
    out.print(_risk_table(title, results))
    if match_opts is not None:
        out.print(_matching_table(results))
    if found:
        out.print(_bounds_table(found, theory.bayes))
        if any(b.full_information_bound is None for b in found):
            err.print("[dim]—: the exact sum over the |T|^r traces is past max_cells (more "
                      "than 3 weeks of the full taxonomy)[/]")
    if learned is not None:
        d = results[0].attacks["learned"].description
        err.print(f"learned attack: candidate recall {100 * d['candidate_recall_mean']:.2f}% "
                  f"(true user shares a topic with the target's trace)")
    for note in dict.fromkeys(n for r in results for n in r.notes):
        err.print(f"[yellow]note[/]: {escape(note)}")
    if certify_log is not None:
        # how much of the certified work the log spared (a resume that read nothing counted
        # for hours: another population or --weeks than the logged one)
        for note in (n for b in found for n in b.notes if n.startswith("walk log ")):
            err.print(f"[yellow]note[/]: {escape(note)}")
    if figure_path is not None:
        from topicslab._atomic import write_bytes_atomic
        from topicslab.report.figures import risk_and_bounds

        write_bytes_atomic(figure_path, risk_and_bounds(theory.rows(), theory.users))
        err.print(f"wrote {escape(str(figure_path))}")
    if json_path is not None:
        from topicslab._atomic import write_text_atomic
        from topicslab._json import dumps

        # JSON has no infinity: --p 0 wrote "ldp_bound": Infinity, which strict readers refuse
        # (the one rule of every JSON file: NaN null, an infinite bound "inf")
        write_text_atomic(json_path, dumps(payload, indent=2))
        err.print(f"wrote {escape(str(json_path))}")


__all__ = ["reid"]
