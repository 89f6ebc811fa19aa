"""Arrow columns of topic lists -> dense topic sets: the one conversion behind the Parquet
reader, the out-of-core DP statistics (``topicslab.dp.stream``) and the Spark engine.

Public functions:
    arrow_to_sets(columns, fields, *, taxonomy=None, k=None, strict=True, file=None,
                  row_base=0, empty_k=5, name_users=False) -> TopicSets

``columns`` are ``user_id`` (integers; whole floats accepted) then one Arrow list column of
taxonomy ids per week (``fields`` names them). Lists become sorted dense sets with ``-1``
after (``topicslab.datamodel``); an unknown id, a repeated topic (unless ``strict=False``,
then merged) or more than ``k`` topics is a one-line ``InputError`` naming the file, the
1-based row (``row_base`` rows before this batch; ``None`` when unknown, as in a Spark
partition) and the week's column. Without ``k`` the width is the batch's widest week
(distinct topics when not strict), ``empty_k`` if every week is empty. Without ``taxonomy``
it is detected from the batch's ids (``topicslab.io.detect``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from topicslab.datamodel import TopicSets
from topicslab.errors import InputError
from topicslab.io._common import (
    DEFAULT_K,
    ListError,
    distinct_width,
    integer_values,
    list_parts,
    lists_to_dense,
)
from topicslab.io.detect import detect_taxonomy
from topicslab.taxonomy import Taxonomy, resolve

__all__ = ["arrow_to_sets"]

#: users converted per ``lists_to_dense`` call (its kernel is one pass; blocks bound the
#: temporaries of the offsets and values taken out of each Arrow list column)
_BLOCK = 1 << 16


def arrow_to_sets(columns: Sequence[pa.Array], fields: Sequence[str], *,
                  taxonomy: Taxonomy | str | None = None, k: int | None = None,
                  strict: bool = True, file: str | None = None, row_base: int | None = 0,
                  empty_k: int = DEFAULT_K, name_users: bool = False) -> TopicSets:
    """``TopicSets`` (``int16[n, len(fields), k]``) from ``user_id`` and week list columns.

    ``name_users`` starts a set error with ``user N:`` (where rows are not known).
    """
    def row_of(i: int) -> int | None:
        return None if row_base is None else row_base + i + 1

    where = file or "<arrow batch>"
    uids = integer_values(columns[0], file=where, field="user_id", row_of=row_of)
    n = uids.shape[0]
    parts = []
    for arr, field in zip(columns[1:], fields, strict=True):
        t = arr.type
        if not (pa.types.is_list(t) or pa.types.is_large_list(t)
                or pa.types.is_fixed_size_list(t)):
            raise InputError(f"expected a list of topic ids, got column type {t}", file=file,
                             row=row_of(0), field=field)
        offsets, flat = list_parts(arr)

        def value_row(j: int, offsets: npt.NDArray[np.int64] = offsets) -> int | None:
            return row_of(int(np.searchsorted(offsets, j, side="right") - 1))

        parts.append((offsets, integer_values(flat, file=where, field=field,
                                              row_of=value_row)))
    tax = resolve(taxonomy) if taxonomy is not None else detect_taxonomy(
        np.concatenate([np.zeros(0, np.int64)] + [v for _, v in parts]))
    if k is None:
        k = max((int(np.diff(o).max()) if strict else distinct_width(o, v)
                 for o, v in parts if o.shape[0] > 1), default=0) or empty_k
    out = np.full((n, len(parts), k), -1, dtype=np.int16)
    for w, (offsets, values) in enumerate(parts):
        for start in range(0, n, _BLOCK):
            o = offsets[start:start + _BLOCK + 1]
            try:
                out[start:start + _BLOCK, w, :] = lists_to_dense(
                    o - o[0], values[o[0]:o[-1]], k, tax, dedupe=not strict)
            except ListError as err:
                i = start + err.list_index
                who = f"user {int(uids[i])}: " if name_users else ""
                raise InputError(who + err.message, file=file, row=row_of(i),
                                 field=fields[w]) from None
    return TopicSets(out, tax, uids)
