"""``topicslab population`` and ``topicslab observe``: thin wrappers over the library.

* population -> ``topicslab.population.generate_chunks`` streamed to ``topicslab.io.SetsWriter``
* observe    -> ``topicslab.io.read_sets`` + ``topicslab.api.observe`` + ``write_traces``
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np
import typer
from rich.markup import escape
from rich.table import Table

from topicslab._checks import MAX_COUNT, integer
from topicslab.cli._app import (
    MAX_SEED,
    SETS_TAXONOMY_HELP,
    app,
    err,
    given,
    out,
    sets_taxonomy,
)
from topicslab.errors import InputError, naming_option

#: what ``population`` and ``observe`` write: Parquet only (the population is streamed to one
#: Parquet file chunk by chunk; ``topicslab.io.write_sets`` converts to the other formats)
PARQUET = (".parquet", ".pq")

#: topics per week of the Topics API (its top 5); ``stats --k`` defaults to the same
API_K = 5


def taxonomy_size(version: str, option: str = "--taxonomy") -> int:
    """The number of topics of taxonomy ``version``; an unknown version is bad input."""
    from topicslab.taxonomy import VERSIONS, resolve

    if version not in VERSIONS:
        raise InputError(f"unknown taxonomy version {version!r}; choose one of "
                         f"{', '.join(VERSIONS)}", field=option)
    return resolve(version).size


def require_at_most_k(sets: object, k: int, file: Path) -> None:
    """Refuse a ``k`` past the file's taxonomy, and a week with more than ``k`` topics
    (``stats`` refuses both too, so every command agrees on what a valid week is)."""
    from topicslab.datamodel import TopicSets, set_sizes

    assert isinstance(sets, TopicSets)
    if k > sets.taxonomy.size:
        raise InputError(f"k must be at most {sets.taxonomy.size} (the topics of taxonomy "
                         f"{sets.taxonomy.version}), got {k}", file=str(file), field="--k")
    sizes = set_sizes(sets.sets)
    if sets.n_users == 0 or int(sizes.max()) <= k:
        return
    user, week = np.unravel_index(int(np.argmax(sizes > k)), sizes.shape)
    raise InputError(f"user {int(sets.user_ids[user])} has {int(sizes[user, week])} topics in "
                     f"week {int(week)}, more than k={k} (the Topics API's top {API_K}); fix "
                     "the file or pass --k", file=str(file), row=int(user) + 1,
                     field=f"epoch_{int(week)}_topics")


@app.command()
def population(
    users: int = typer.Option(1_000_000, "--users", "-n", min=1, help="Number of users."),
    weeks: int = typer.Option(4, "--weeks", "-w", min=1, help="Weeks (epochs) per user."),
    seed: int = typer.Option(0, "--seed", min=0, max=MAX_SEED,
                             help="Seed of the generator."),
    out_path: Path = typer.Option(Path("pop.parquet"), "--out", "-o",
                                  help="Output Parquet file (.parquet)."),
    k: int = typer.Option(5, "--k", min=1, help="Topics per weekly profile."),
    taxonomy: str = typer.Option("v2", "--taxonomy", help="Taxonomy version (v1 or v2)."),
    params: Path | None = typer.Option(None, "--params",
                                       help="Population parameters JSON (default: shipped)."),
    persistence: float = typer.Option(
        0.0, "--persistence", min=0.0, max=1.0,
        help="Stress: interest stability from calibrated (0) to interests that never change "
             "(1); drift, exploration and weekly jitter scale by 1 - persistence."),
    routine: float = typer.Option(
        0.0, "--routine", min=0.0, max=1.0,
        help="Stress: probability that a week repeats last week's whole profile "
             "(--persistence 1 --routine 1: one profile for every week)."),
    groups: float = typer.Option(
        0.0, "--groups", min=0.0, max=1.0,
        help="Stress: interests in cliques of 3-5 topics; a visit to one member counts for "
             "each other member with this probability."),
    interests: float | None = typer.Option(
        None, "--interests", min=0.0, max=20.0,
        help="Stress: mean number of persistent interests per user (calibrated: 3)."),
    chunk_users: int = typer.Option(250_000, "--chunk-users", min=1000,
                                    help="Users generated and written per chunk."),
) -> None:
    """Generate the calibrated reference population (weekly top-k topic sets)."""
    from topicslab import io as tio
    from topicslab import population as pop
    from topicslab._paths import check_output_file, refuse_overwriting_inputs

    check_output_file(out_path, "--out", PARQUET, "Parquet")
    refuse_overwriting_inputs([("--out", out_path)], [("--params", params)])
    from topicslab.api import Mechanism

    Mechanism(k=k, taxonomy=taxonomy)  # the profile size and taxonomy, checked once
    # (past 2^63 users the generator's refusal blamed its first_user, then its n_users)
    integer(users, "--users", at_least=1, at_most=MAX_COUNT,
            why="the users' ids are 64-bit integers")
    try:
        base = pop.PopulationParams.load(params, taxonomy) if params else None
    except InputError as exc:
        # a field of the file is named as such; a file that cannot be read is the option's
        raise (exc if exc.field is not None else exc.located(field="--params")) from None
    stress = pop.Stress(persistence=persistence, routine=routine, groups=groups,
                        interests=interests)
    if given("routine") and weeks < 2:
        # no week has a last week to repeat: the option changed nothing, without a word
        raise InputError("--routine repeats last week's profile, and --weeks 1 has no last "
                         "week: drop --routine, or give --weeks 2 or more", field="--routine")
    if given("routine") and base is not None and routine < base.profile_repeat:
        # the stress takes the larger of the two: a lower --routine changed nothing
        raise InputError(f"--routine {routine:g} is below the profile_repeat "
                         f"{base.profile_repeat:g} of --params, which it would leave as it is "
                         "(the stress keeps the larger): give --routine "
                         f"{base.profile_repeat:g} or more, or edit the file",
                         file=str(params), field="--routine")
    p = base if stress.is_identity else stress.apply(base, taxonomy)
    t0 = time.perf_counter()
    n_real_weeks = 0
    first = None
    # the generator checks its arguments (--weeks) when made, before the writer opens
    def check_memory() -> None:
        check_generation_memory(min(users, chunk_users), weeks, "--chunk-users",
                                "use a smaller --chunk-users, fewer --weeks or a smaller --k",
                                writing=True, k=k)

    try:
        chunks = pop.generate_chunks(users, weeks, seed=seed, params=p, k=k,
                                     taxonomy=taxonomy, chunk_users=chunk_users, progress=True)
    except InputError as exc:
        if exc.field == "chunk_users":  # the library's own memory check of a chunk: this
            check_memory()  # command's, which counts the writer too, says it in its options
        raise
    _check_disk(out_path, users, weeks)
    check_memory()
    with tio.SetsWriter(out_path, taxonomy=taxonomy, k=k, weeks=weeks) as writer:
        for chunk in chunks:
            writer.write(chunk)
            n_real_weeks += int(chunk.metadata.get("padded_user_weeks", 0))
            if first is None:
                first = chunk
    dt = time.perf_counter() - t0
    table = Table(title=f"reference population → {escape(str(out_path))}", show_header=False)
    table.add_row("users", f"{users:,}")
    table.add_row("weeks", str(weeks))
    table.add_row("k / taxonomy", f"{k} / {taxonomy}")
    table.add_row("padded user-weeks", f"{n_real_weeks / (users * weeks):.1%}")
    table.add_row("seed", str(seed))
    if not stress.is_identity:
        table.add_row("stress", ", ".join(f"{k} {v}" for k, v in stress.to_dict().items()
                                          if v))
    table.add_row("seconds", f"{dt:.1f}")
    table.add_row("file size", f"{out_path.stat().st_size / 1e6:.1f} MB")
    out.print(table)
    if first is not None:
        _print_top_topics(first)


#: topic slots counted at a time for the summary of the first chunk
_SUMMARY_BLOCK = 1 << 22


def _print_top_topics(sets: object, n: int = 5) -> None:
    from topicslab.datamodel import TopicSets

    assert isinstance(sets, TopicSets)
    tax = sets.taxonomy
    # a block at a time: the whole chunk's mask, selection and int64 copy (bincount's)
    # took 11 bytes a topic slot, 763 MiB for a chunk of 5M users x 4 weeks, after the file
    # was written: out of memory there was exit code 1 beside a complete output
    counts = np.zeros(tax.size, dtype=np.int64)
    flat = sets.sets.reshape(-1)
    for start in range(0, flat.size, _SUMMARY_BLOCK):
        part = flat[start:start + _SUMMARY_BLOCK]
        counts += np.bincount(part[part >= 0], minlength=tax.size)
    share = counts / (sets.n_users * sets.n_weeks)
    top = np.argsort(-share)[:n]
    t = Table(title="most frequent profile topics (first chunk)")
    t.add_column("topic id", justify="right")
    t.add_column("label")
    t.add_column("q_single", justify="right")
    for i in top:
        t.add_row(str(int(tax.ids[i])), tax.labels[i], f"{share[i]:.2%}")
    out.print(t)


@app.command()
def observe(
    sets_path: Path = typer.Option(..., "--sets", "-s", help="Topic-set sequences file."),
    taxonomy: str | None = typer.Option(None, "--taxonomy", help=SETS_TAXONOMY_HELP),
    sites: int = typer.Option(2, "--sites", min=1, help="Number of sites calling the API."),
    seed: int = typer.Option(0, "--seed", min=0, max=MAX_SEED,
                             help="Browser-side seed of the answers."),
    p: float = typer.Option(0.05, "--p", help="Random-topic probability, in [0, 1]."),
    weeks: int | None = typer.Option(None, "--weeks", min=1,
                                     help="Call-weeks observed (default: all)."),
    lookback: int = typer.Option(
        1, "--lookback", help="Epochs returned per call (1 as in the papers, 3 in Chrome)."),
    witnessed: float | None = typer.Option(
        None, "--witnessed", min=0.0, max=1.0,
        help="Caller filtering: probability a caller witnessed a (user, topic); off by default."),
    out_path: Path = typer.Option(Path("traces.parquet"), "--out", "-o", help="Output Parquet."),
    k: int = typer.Option(API_K, "--k", min=1,
                          help="Most topics a week may hold (the API's top 5, as stats --k)."),
) -> None:
    """Simulate the answers sites receive (one topic per site, user and week)."""
    from topicslab import api
    from topicslab import io as tio
    from topicslab._paths import check_output_file, refuse_overwriting_inputs
    from topicslab.datamodel import SiteTraces

    check_output_file(out_path, "--out", PARQUET, "Parquet")
    refuse_overwriting_inputs([("--out", out_path)], [("--sets", sets_path)])
    mech = api.Mechanism(p=p, lookback=lookback)  # checked once, before the data is read
    t0 = time.perf_counter()
    if k > taxonomy_size("v2"):
        raise InputError(f"k must be at most {taxonomy_size('v2')} (the most topics a taxonomy "
                         f"has), got {k}", field="--k")
    sets_taxonomy(taxonomy)
    with naming_option("--sets"):
        data = tio.read_sets(sets_path, taxonomy=taxonomy)
    if data.n_users == 0:
        raise InputError("holds no users: there is nothing to observe", file=str(sets_path),
                         field="--sets")
    require_at_most_k(data, k, sets_path)
    check_observed_weeks(weeks, lookback, data.n_weeks, sets_path)
    mech = dataclasses.replace(mech, k=data.k, taxonomy=data.taxonomy)
    _check_answers_size(sites, data.n_users,
                        data.n_weeks if weeks is None else weeks + lookback - 1, data.k)
    traces = api.observe(data.sets, sites, weeks=weeks, seed=seed, mechanism=mech,
                         user_ids=data.user_ids, witnessed=witnessed)
    result = SiteTraces(traces, data.taxonomy, data.user_ids,
                        metadata={"source": str(sets_path), "seed": seed, "p": p,
                                  "lookback": lookback, "witnessed": witnessed})
    tio.write_traces(out_path, result)
    dt = time.perf_counter() - t0
    first = data.n_weeks - traces.shape[2]
    in_prof = (traces[..., None] == data.sets[None, :, first:, :]).any(-1)
    table = Table(title=f"site traces → {escape(str(out_path))}", show_header=False)
    table.add_row("sites × users × epochs",
                  f"{traces.shape[0]} × {traces.shape[1]:,} × {traces.shape[2]}")
    table.add_row("answers from the profile", f"{in_prof.mean():.2%} "
                  f"(expected {(1 - p) + p * data.k / data.taxonomy.size:.2%} unfiltered)")
    table.add_row("withheld (filtering)", f"{(traces < 0).mean():.2%}")
    table.add_row("seconds", f"{dt:.1f}")
    out.print(table)
    if traces.shape[0] >= 2:
        err.print(f"site 0 and site 1 agree on {(traces[0] == traces[1]).mean():.2%} of "
                  "(user, epoch) answers")




def _check_disk(out_path: Path, users: int, weeks: int) -> None:
    """Refuse a population whose file surely cannot fit on its disk, naming --users."""
    from topicslab._resources import require_disk
    from topicslab.io.parquet_sets import PARQUET_BYTES_PER_USER_WEEK

    require_disk(float(users) * weeks * PARQUET_BYTES_PER_USER_WEEK,
                 f"{users:,} users x {weeks} weeks", out_path, field="--users",
                 hint="use fewer --users")



#: what writing that chunk to Parquet adds while it is held (the taxonomy ids as int32 list
#: values and offsets, Arrow's copies): ``population`` peaked at 105-125 bytes a user-week
#: in all (20,000 x 1,023, 100,000 x 100), and 250,000 x 1,023 (the default chunk) passed
#: the estimate of 80 and was killed by the kernel for memory (23.5 GB of 23)
WRITE_BYTES_PER_USER_WEEK = 48


def check_generation_memory(users: int, weeks: int, option: str, hint: str,
                            writing: bool = False, k: int = API_K) -> None:
    """Refuse generating ``users`` x ``weeks`` at once when it surely cannot fit in memory
    (``population`` generates a chunk of --chunk-users at a time, ``writing`` it to Parquet
    while it is held), naming ``option``. The bytes per user-week, measured at the API's
    ``k`` = 5, grow with ``k`` (the top-k sets, their ids and offsets): 100,000 users x 4
    weeks peaked at 0.3 GB with k = 5 and 4.5 GB with k = 469 (~22 bytes a topic slot)."""
    from topicslab._resources import require_memory
    from topicslab.population.generator import CHUNK_BYTES_PER_USER_WEEK

    per = ((CHUNK_BYTES_PER_USER_WEEK + (WRITE_BYTES_PER_USER_WEEK if writing else 0))
           * max(k, API_K) / API_K)
    require_memory(float(users) * weeks * per,
                   f"generating {users:,} users x {weeks:,} weeks"
                   f"{f' of {k} topics' if k != API_K else ''} at once", field=option,
                   hint=hint)


#: bytes per answer of ``observe``: the int16 traces, the in-profile check against the k
#: topics of the week (bool per slot, twice) and the Parquet conversion (generous)
_ANSWER_BYTES = 20


def _check_answers_size(sites: int, users: int, epochs: int, k: int) -> None:
    """Refuse more answers than fit in memory (one per site, user and epoch), naming --sites:
    the data is already in memory, the sites multiply it."""
    from topicslab._resources import require_memory

    require_memory(float(sites) * users * epochs * (_ANSWER_BYTES + 2 * k),
                   f"the answers of {sites:,} sites x {users:,} users x {epochs} epochs",
                   field="--sites", hint="use fewer --sites")


def check_observed_weeks(weeks: int | None, lookback: int, n_weeks: int, file: Path) -> None:
    """``weeks`` call-weeks answered from the last ``lookback`` epochs need
    ``weeks + lookback - 1`` weeks of profiles."""
    if lookback > n_weeks:
        raise InputError(f"--lookback {lookback} is more than the {n_weeks} weeks of "
                         f"{file}; use at most {n_weeks}", field="--lookback")
    most = n_weeks - lookback + 1
    if weeks is not None and weeks > most:
        raise InputError(f"--weeks {weeks} with --lookback {lookback} needs "
                         f"{weeks + lookback - 1} weeks of profiles, {file} has {n_weeks}; use "
                         f"--weeks {most} or less", field="--weeks")
