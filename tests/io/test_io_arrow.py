"""``topicslab.io.arrow_to_sets``: the one Arrow-to-dense conversion of the Parquet reader,
the streamed DP statistics and the Spark engine."""

from __future__ import annotations

import pyarrow as pa
import pytest

from topicslab.errors import InputError
from topicslab.io import arrow_to_sets

FIELDS = ["epoch_0_topics", "epoch_1_topics"]


def test_sets_sorted_padded_and_taxonomy_detected():
    cols = [pa.array([7, 3]), pa.array([[9, 1], []]), pa.array([[43], [4, 1, 2]])]
    got = arrow_to_sets(cols, FIELDS)
    assert got.taxonomy.version == "v1"  # 43 and 2 are v1 ids only
    assert got.user_ids.tolist() == [7, 3] and got.k == 3
    assert got.topic_ids().tolist() == [[[1, 9, -1], [43, -1, -1]],
                                        [[-1, -1, -1], [1, 2, 4]]]
    none = pa.array([[]], type=pa.list_(pa.int32()))
    empty = arrow_to_sets([pa.array([1]), none, none], FIELDS,
                          taxonomy="v2", empty_k=1)
    assert empty.sets.shape == (1, 2, 1)


def test_repeats_merge_unless_strict_and_errors_locate():
    cols = [pa.array([5, 6]), pa.array([[1], [4, 4]]), pa.array([[1], [1]])]
    assert arrow_to_sets(cols, FIELDS, strict=False).topic_ids()[1, 0].tolist() == [4]
    with pytest.raises(InputError) as info:
        arrow_to_sets(cols, FIELDS, file="f.parquet", row_base=10)
    assert (info.value.row, info.value.field) == (12, "epoch_0_topics")
    with pytest.raises(InputError, match="user 6: topic id 4 appears twice") as info:
        arrow_to_sets(cols, FIELDS, file="f.parquet", row_base=None, name_users=True)
    assert info.value.row is None
    with pytest.raises(InputError, match="more than k=1"):
        arrow_to_sets([pa.array([1]), pa.array([[1, 4]]), pa.array([[9]])], FIELDS,
                      taxonomy="v2", k=1)
    with pytest.raises(InputError, match="expected a list of topic ids"):
        arrow_to_sets([pa.array([1]), pa.array([1]), pa.array([[1]])], FIELDS)
