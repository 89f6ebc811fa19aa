"""Topic sets from any supported format to any other.

Public functions:
    convert_sets(source, target, *, source_format=None, target_format=None, taxonomy=None,
                 k=None, strict=True, **options) -> TopicSets

Reads ``source`` whole (``read_sets``: the format from the name or the columns, the taxonomy
from the metadata or the ids unless given) and writes ``target`` all or nothing
(``write_sets``; ``options`` go to its writer: ``shards`` and ``user_ids`` for TFRecord,
``row_group_size`` for Parquet, ``delimiter`` for text). Profile and long tables are named by
``target_format`` (their suffixes, ``.csv`` or ``.parquet``, say only the container).
"""

from __future__ import annotations

from typing import Any

from topicslab.datamodel import TopicSets
from topicslab.io._common import PathLike
from topicslab.io.generic import read_sets, write_sets
from topicslab.taxonomy import Taxonomy

__all__ = ["convert_sets"]


def convert_sets(source: PathLike, target: PathLike, *, source_format: str | None = None,
                 target_format: str | None = None, taxonomy: Taxonomy | str | None = None,
                 k: int | None = None, strict: bool = True, **options: Any) -> TopicSets:
    """Convert ``source`` to ``target``; returns the sets written. A ``target`` that is
    ``source`` (or lies inside a source directory of shards), and a source with no users (its
    conversion is a file every reader refuses), are ``InputError``."""
    import os

    from topicslab._paths import path_name, refuse_overwriting_inputs
    from topicslab.errors import InputError

    path_name(source, "source")
    path_name(target, "target")
    refuse_overwriting_inputs([("target", target)], [("source", source)])
    sets = read_sets(source, taxonomy=taxonomy, format=source_format, k=k, strict=strict)
    if sets.n_users == 0:
        raise InputError("holds no users: there is nothing to convert", file=os.fspath(source))
    write_sets(target, sets, format=target_format, **options)
    return sets
