"""``topicslab convert``: topic sets between formats (``topicslab.io.read_sets``, then
``write_sets``; in between, the checks that need the sets: repeated users under ``--lenient``,
shards past the users)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape

from topicslab.cli._app import SETS_TAXONOMY_HELP, app, err, out, sets_taxonomy
from topicslab.errors import InputError, naming_option

if TYPE_CHECKING:
    from topicslab.datamodel import TopicSets

_FORMATS_HELP = "parquet | csv | tsv | tfrecord | long | profiles"

#: measured peak bytes per topic slot (user x week x k) of a conversion once the sets are
#: read: 200,000 users x 4 weeks widened to --k 469 peaked at 8.7 GB to Parquet or CSV
#: (~22 bytes a slot) and 6.1 GB to TFRecord, where reading them took 1.9 GB
CONVERT_BYTES_PER_SLOT = 24


def _format(value: str | None, option: str) -> str | None:
    from topicslab.io.generic import FORMATS

    if value is not None and value not in FORMATS:
        raise InputError(f"unknown format {value!r}; choose one of {', '.join(FORMATS)}",
                         field=option)
    return value


def _check_to_agrees(target: Path, target_format: str) -> None:
    """Refuse --to naming another format than TARGET's extension (--to parquet x.csv would
    write a Parquet file that every reader then takes for CSV); long and profile tables are
    written as CSV, TSV or Parquet, as the name says."""
    from topicslab import io as tio

    try:
        named = tio.detect_format(target)
    except InputError:
        return  # no telling extension: --to decides
    table = ("parquet", "csv", "tsv")
    agrees = named in table if target_format in ("long", "profiles") else named == target_format
    if not agrees:
        raise InputError(f"--to {target_format} contradicts the name's extension, which means "
                         f"{named}; rename TARGET or change --to", file=str(target),
                         field="--to")


def _check_from_agrees(source: Path, source_format: str) -> None:
    """Refuse --from naming another format than SOURCE's content or extension (``--from csv
    x.parquet`` failed in the CSV reader with a codec error): a Parquet file is told by its
    first bytes, the rest by the name; CSV and TSV may be read either way (a tab-separated
    file named .csv), long and profile tables are CSV, TSV or Parquet."""
    from topicslab import io as tio

    table = ("parquet", "csv", "tsv")
    head = b""
    if source.is_file():
        try:
            with open(source, "rb") as fh:
                head = fh.read(4)
        except OSError:
            head = b""
    if head:
        is_parquet = head == b"PAR1"
        if is_parquet and source_format not in ("parquet", "long", "profiles"):
            raise InputError(f"--from {source_format} contradicts the file's content, which is "
                             "Parquet; give --from parquet (or leave --from out)",
                             file=str(source), field="--from")
        if not is_parquet and source_format == "parquet":
            raise InputError("--from parquet contradicts the file's content, which is not "
                             "Parquet (it does not begin with PAR1); change --from (or leave "
                             "it out)", file=str(source), field="--from")
        if is_parquet:
            return  # the content agrees, whatever the name
    try:
        named = tio.detect_format(source)
    except InputError:
        return  # no telling extension: --from decides
    agrees = (named in table if source_format in ("long", "profiles")
              else named in ("csv", "tsv") if source_format in ("csv", "tsv")
              else named == source_format)
    if not agrees:
        raise InputError(f"--from {source_format} contradicts the name's extension, which "
                         f"means {named}; rename SOURCE or change --from", file=str(source),
                         field="--from")


def check_target_name(target: Path, fmt: str, option: str = "TARGET") -> None:
    """Refuse a TARGET name the file written would contradict: one shard of a set
    (``x.tfrecord-00000-of-00002`` was written alone, a set with its other shard missing;
    ``--shards`` names the shards), or ``.gz`` on Parquet (written uncompressed: Parquet
    compresses its own pages)."""
    import re

    name = target.name.lower()
    if fmt == "tfrecord" and re.search(r"[-_][0-9]{5}-of-[0-9]{5}", name):
        raise InputError("names one shard of a set, which would be written alone (its other "
                         "shards missing); name the set (e.g. x.tfrecord) and give --shards N",
                         file=str(target), field=option)
    if name.endswith(".gz") and fmt not in ("csv", "tsv", "tfrecord") and (
            name.removesuffix(".gz").endswith((".parquet", ".pq"))):
        raise InputError("a Parquet file is not gzipped (it compresses its own pages); drop "
                         ".gz from the name", file=str(target), field=option)


@app.command()
def convert(
    source: Path = typer.Argument(..., help="Topic sets to read (any supported format)."),
    target: Path = typer.Argument(..., help="File to write (all or nothing)."),
    source_format: str | None = typer.Option(
        None, "--from", help=f"{_FORMATS_HELP} (default: from the name and columns)."),
    target_format: str | None = typer.Option(
        None, "--to", help=f"{_FORMATS_HELP} (default: from the name; long and profiles "
                           "must be named)."),
    taxonomy: str | None = typer.Option(None, "--taxonomy", help=SETS_TAXONOMY_HELP),
    k: int | None = typer.Option(None, "--k", min=1,
                                 help="Topics per week (default: the file's, or its widest)."),
    shards: int | None = typer.Option(None, "--shards", min=1, help="TFRecord output shards."),
    user_ids: str | None = typer.Option(
        None, "--user-ids",
        help="TFRecord output ids: bytes (the release's b'user N', default) | int64 | none."),
    lenient: bool = typer.Option(False, "--lenient",
                                 help="Merge a topic repeated in a week instead of refusing."),
) -> None:
    """Convert topic sets between formats: the release's TFRecord, Parquet, CSV/TSV, long
    tables and other tools' profile tables (t1..tk columns)."""
    from topicslab import io as tio
    from topicslab._paths import check_output_file, refuse_overwriting_inputs
    from topicslab.io._common import check_unique_users, is_pattern, not_found
    from topicslab.io.tfrecord import shard_names, shard_set_on_disk

    _format(source_format, "--from")
    _format(target_format, "--to")
    sets_taxonomy(taxonomy)
    if not source.exists() and not is_pattern(str(source)):
        raise InputError(not_found(str(source)), file=str(source), field="SOURCE")
    check_output_file(target, "TARGET")
    try:
        fmt = target_format or tio.detect_format(target)
    except InputError:
        # the library's advice names its own argument (format=); here it is --to
        raise InputError("cannot tell the format from the name: use one of the extensions "
                         ".parquet, .pq, .csv, .txt, .tsv, .tab or .tfrecord, or give --to "
                         "(parquet, csv, tsv, tfrecord, long, profiles)", file=str(target),
                         field="TARGET") from None
    if target_format is not None:
        _check_to_agrees(target, target_format)
    if source_format is not None:
        _check_from_agrees(source, source_format)
    check_target_name(target, fmt)
    options: dict[str, object] = {}
    for option, value in (("--shards", shards), ("--user-ids", user_ids)):
        if value is not None and fmt != "tfrecord":
            raise InputError(f"{option} applies to TFRecord output (--to tfrecord)",
                             field=option)
    if user_ids is not None:
        if user_ids not in ("bytes", "int64", "none"):
            raise InputError(f"--user-ids must be bytes, int64 or none, got {user_ids!r}",
                             field="--user-ids")
        options["user_ids"] = user_ids
    outputs = [("TARGET", target)]
    if fmt == "tfrecord":
        from topicslab.cli.model import MAX_SHARDS, _check_shards

        # before the shard names are listed: --shards 1000000000 listed them for minutes
        _check_shards(shards, MAX_SHARDS + 1, fmt)  # the names alone: users are not read yet
        options["shards"] = shards or 1
        outputs += [("TARGET", Path(p)) for p in
                    {*shard_names(target, shards or 1), *shard_set_on_disk(target)}]
    refuse_overwriting_inputs(outputs[:1], [("SOURCE", source)])
    for _, written in outputs[1:]:
        refuse_overwriting_inputs([("TARGET", written)], [("SOURCE", source)])
    with naming_option("SOURCE"):  # (a whole-file error named no field)
        sets = tio.read_sets(source, taxonomy=taxonomy, format=source_format, k=k,
                             strict=not lenient)
    if sets.n_users == 0:
        # a file with no users converts to one every reader refuses (an empty TFRecord,
        # a header-only CSV)
        raise InputError("holds no users: there is nothing to convert", file=str(source),
                         field="SOURCE")
    from topicslab._resources import require_memory

    # the sets are written slot by slot: a wide --k (or a wide file) multiplies the memory,
    # and 500,000 users x 4 weeks widened to k = 469 were killed by the kernel mid-write
    require_memory(float(sets.n_users) * sets.n_weeks * sets.k * CONVERT_BYTES_PER_SLOT,
                   f"converting {sets.n_users:,} users x {sets.n_weeks} weeks of {sets.k} "
                   "topic slots", field="--k" if k is not None else "SOURCE",
                   hint="use a smaller --k" if k is not None else "")
    if lenient:
        # --lenient merges repeated topics; a repeated user would be written as two users
        # that every other command then refuses
        check_unique_users(sets.user_ids, file=str(source))
    if fmt == "tfrecord":
        # as sample: a shard holds at least one user (more shards wrote empty files)
        _check_shards(shards, sets.n_users, fmt)
    tio.write_sets(target, sets, format=target_format, **options)
    shown = str(target)
    if fmt == "tfrecord" and (shards or 1) > 1:
        # the set's shards, not TARGET (p.tfrecord --shards 3 said "to p.tfrecord", a file
        # that does not exist)
        names = shard_names(target, shards or 1)
        shown = f"{len(names)} shards {names[0]} ... {names[-1]}"
    out.print(f"wrote {sets.n_users:,} users × {sets.n_weeks} weeks (k = {sets.k}, taxonomy "
              f"{sets.taxonomy.version}) to {escape(shown)} ({fmt})", highlight=False,
              soft_wrap=True)
    _note_unrecorded(sets, fmt)


def _note_unrecorded(sets: TopicSets, fmt: str) -> None:
    """Say what a file of ``fmt`` does not record and a reader of it then takes otherwise:
    only Parquet holds k and the taxonomy; the others are read back with k = the widest week
    and the taxonomy the ids detect (v2 sets of k = 5 whose weeks hold at most 2 topics were
    read back as k = 2, and v1 sets whose ids are all v2's as v2, without a word)."""
    import numpy as np

    from topicslab.io.detect import detect_taxonomy

    if fmt == "parquet" or sets.n_users == 0:
        return
    widest = int(np.count_nonzero(sets.sets >= 0, axis=-1).max(initial=0)) or 5
    used = np.unique(sets.sets[sets.sets >= 0])
    detected = detect_taxonomy(sets.taxonomy.id_of(used)).version
    lost = []
    if widest != sets.k:
        lost.append(f"k = {sets.k} (read back as k = {widest}, its widest week: give --k "
                    f"{sets.k} when reading it)")
    if detected != sets.taxonomy.version:
        lost.append(f"taxonomy {escape(sets.taxonomy.version)} (its ids read back as "
                    f"{detected}: give --taxonomy {escape(sets.taxonomy.version)} when "
                    "reading it)")
    if lost:
        err.print(f"[yellow]note[/]: {fmt} does not record {' or '.join(lost)}",
                  highlight=False, soft_wrap=True)
