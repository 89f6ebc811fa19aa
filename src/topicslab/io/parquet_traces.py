"""Site traces as Parquet: one row per (site, user).

Public functions:
    write_traces_parquet(path, traces)
    read_traces_parquet(path, *, taxonomy=None, strict=True) -> SiteTraces

Layout: ``user_id`` (int64), ``site`` (int64), ``epoch_{w}_topic`` (int32 taxonomy id; null for
a withheld answer). Rows are written site-major. Sites and users come back in order of first
appearance, so a written file reads back exactly; (site, user) pairs missing from a file read
as withheld. Key-value metadata ``topicslab`` holds taxonomy, weeks and provenance.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.parquet as pq

from topicslab._atomic import atomic_path
from topicslab.datamodel import SiteTraces
from topicslab.errors import InputError
from topicslab.io._common import (
    FORMAT_VERSION,
    META_KEY,
    PathLike,
    check_block_format,
    check_exists,
    decode_meta,
    encode_meta,
    integer_values,
    pick_taxonomy,
    trace_column,
    week_columns,
    wrap_errors,
)
from topicslab.taxonomy import Taxonomy

__all__ = ["read_traces_parquet", "write_traces_parquet"]


def write_traces_parquet(path: PathLike, traces: SiteTraces) -> None:
    """Write ``traces`` to ``path`` (atomic)."""
    if not isinstance(traces, SiteTraces):  # (an AttributeError inside)
        raise TypeError(f"write_traces_parquet takes SiteTraces, got {type(traces).__name__}")
    # written, these files were refused by read_traces ("the same (site, user) pair appears
    # twice", "no week column")
    if traces.n_weeks == 0 and traces.n_users:
        raise InputError(f"the traces hold no week (shape {traces.traces.shape}): no reader "
                         "takes such a file; give at least one week", file=os.fspath(path),
                         field="traces")
    for name in ("user_ids", "site_ids"):
        ids = np.sort(getattr(traces, name))
        twice = ids[1:][ids[1:] == ids[:-1]]
        if twice.size:
            raise InputError(f"{name[:-4]} id {int(twice[0])} appears more than once in {name}: "
                             "no reader takes such a file; give each once",
                             file=os.fspath(path), field=name)
    s, u, weeks = traces.traces.shape
    block = {"format": "site_traces", "format_version": FORMAT_VERSION,
             "taxonomy": traces.taxonomy.version, "weeks": weeks, "provenance": traces.metadata}
    fields = [pa.field("user_id", pa.int64(), nullable=False),
              pa.field("site", pa.int64(), nullable=False)]
    fields += [pa.field(trace_column(w), pa.int32()) for w in range(weeks)]
    schema = pa.schema(fields, metadata={META_KEY: encode_meta(block)})
    ids = traces.taxonomy.id_of(traces.traces).reshape(s * u, weeks)
    cols = [pa.array(np.tile(traces.user_ids, s)), pa.array(np.repeat(traces.site_ids, u))]
    for w in range(weeks):
        col = ids[:, w]
        cols.append(pa.array(col, type=pa.int32(), mask=col < 0))
    table = pa.Table.from_arrays(cols, schema=schema)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd")


def _first_seen(keys: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64],
                                                       npt.NDArray[np.int64]]:
    """Distinct keys in order of first appearance, and each row's position among them."""
    uniq, first, inv = np.unique(keys, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.shape[0])
    return uniq[order], rank[inv.reshape(-1)]


def read_traces_parquet(path: PathLike, *, taxonomy: Taxonomy | str | None = None,
                        strict: bool = True) -> SiteTraces:
    """Read site traces; a repeated (site, user) pair is an error (the last wins if not
    ``strict``). Rows in errors are 1-based data rows."""
    file = check_exists(path)
    with wrap_errors(file, "Parquet"):
        pf = pq.ParquetFile(file)
        schema = pf.schema_arrow
        block = decode_meta(schema.metadata, file=file)
        if "site" not in schema.names and "epoch_0_topics" in schema.names:
            # (was "field 'site': missing column"; the reverse mistake is TracesNotSetsError)
            raise InputError("holds topic sets (a profile per user and week), not site "
                             "traces: give it where topic sets are read (reid --sets), or "
                             "make traces of it with topicslab observe", file=file)
        for name in ("user_id", "site"):
            if name not in schema.names:
                raise InputError("missing column", file=file, field=name)
        check_block_format(block, "site_traces", file=file)
        weeks = week_columns(schema.names, "epoch_{w}_topic", file=file)
        # as the sets reader: a week column dropped (or misspelt) was read as a file of fewer
        # weeks, whatever the metadata said
        columns = {trace_column(w) for w in range(weeks)}
        typo = next((n for n in schema.names if n.lower().startswith("epoch")
                     and n not in columns), None)
        if typo is not None:
            raise InputError("unknown week column: the week columns of site traces are named "
                             "epoch_0_topic, epoch_1_topic, ...; rename or remove it",
                             file=file, field=typo)
        said = block.get("weeks") if block else None
        if isinstance(said, int) and not isinstance(said, bool) and said != weeks:
            raise InputError(f"metadata says {said} weeks, columns give {weeks}", file=file,
                             field=trace_column(min(weeks, said)))
        tax = pick_taxonomy(taxonomy, block.get("taxonomy") if block else None, file=file)
        prov = block.get("provenance") if block else None
        metadata: dict[str, Any] = prov if isinstance(prov, dict) else {}
        names = ["user_id", "site"] + [trace_column(w) for w in range(weeks)]
        table = pf.read(columns=names)

        def col(name: str) -> pa.Array:
            c = table.column(name)
            return pa.concat_arrays(c.chunks) if c.num_chunks else pa.array([], c.type)

        def row_of(i: int) -> int:
            return i + 1

        users = integer_values(col("user_id"), file=file, field="user_id", row_of=row_of)
        sites = integer_values(col("site"), file=file, field="site", row_of=row_of)
        user_ids, u_pos = _first_seen(users)
        site_ids, s_pos = _first_seen(sites)
        n = users.shape[0]
        flat = s_pos * user_ids.shape[0] + u_pos
        if strict and n:
            seen = np.zeros(site_ids.shape[0] * user_ids.shape[0], dtype=np.int32)
            np.add.at(seen, flat, 1)
            if (seen > 1).any():
                dup = np.flatnonzero(seen[flat] > 1)
                raise InputError("the same (site, user) pair appears twice", file=file,
                                 row=int(dup[1]) + 1, field="site")
        out = np.full((site_ids.shape[0] * user_ids.shape[0], weeks), -1, dtype=np.int16)
        for w in range(weeks):
            field = trace_column(w)
            arr = col(field)
            present = ~np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=bool)
            values = integer_values(arr.filter(pa.array(present)) if arr.null_count else arr,
                                    file=file, field=field,
                                    row_of=lambda j, p=present: int(np.flatnonzero(p)[j]) + 1)
            known = tax.is_known(values)
            if not known.all():
                j = int(np.argmin(known))
                raise InputError(f"topic id {int(values[j])} is not in taxonomy {tax.version}",
                                 file=file, row=int(np.flatnonzero(present)[j]) + 1,
                                 field=field)
            out[flat[present], w] = tax.index(values)
        traces = out.reshape(site_ids.shape[0], user_ids.shape[0], weeks)
        return SiteTraces(traces, tax, user_ids, site_ids, dict(metadata))
