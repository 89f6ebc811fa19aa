"""``lists_to_dense`` (every reader's ragged lists -> dense sets) against a plain reference:
the same sets, and the same failure (message, list, place) as the rules say, in their order:
an unknown id anywhere, then a list longer than k, then a topic twice, then (with ``dedupe``)
more than k distinct topics."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topicslab.io._common import ListError, lists_to_dense
from topicslab.taxonomy import load

TAX = load("v2")


def reference(lists: list[list[int]], k: int, dedupe: bool) -> np.ndarray | tuple:
    offsets = np.cumsum([0] + [len(x) for x in lists])
    for i, x in enumerate(lists):
        for j, v in enumerate(x):
            if not TAX.is_known(np.array([v]))[0]:
                return (f"topic id {v} is not in taxonomy v2", i, int(offsets[i]) + j)
    if not dedupe:
        for i, x in enumerate(lists):
            if len(x) > k:
                return (f"{len(x)} topics in one week, more than k={k}", i, int(offsets[i]) + k)
        for i, x in enumerate(lists):
            twice = sorted({v for v in x if x.count(v) > 1}, key=lambda v: TAX.index([v])[0])
            if twice:
                second = [j for j, v in enumerate(x) if v == twice[0]][1]
                return (f"topic id {twice[0]} appears twice in one week", i,
                        int(offsets[i]) + second)
    out = np.full((len(lists), k), -1, dtype=np.int16)
    for i, x in enumerate(lists):
        dense = sorted(set(TAX.index(x).tolist())) if x else []
        if len(dense) > k:
            return (f"{len(dense)} distinct topics in one week, more than k={k}", i, None)
        out[i, :len(dense)] = dense
    return out


ids = st.one_of(st.sampled_from(TAX.ids[:8].tolist()), st.sampled_from(TAX.ids.tolist()),
                st.sampled_from([-3, 0, 2, 99_999]))


@settings(max_examples=300, deadline=None)
@given(lists=st.lists(st.lists(ids, max_size=7), max_size=12), k=st.integers(1, 6),
       dedupe=st.booleans())
def test_same_sets_and_failures_as_the_reference(lists: list[list[int]], k: int,
                                                 dedupe: bool) -> None:
    check(lists, k, dedupe)


def check(lists: list[list[int]], k: int, dedupe: bool) -> None:
    offsets = np.cumsum([0] + [len(x) for x in lists]).astype(np.int64)
    values = np.array([v for x in lists for v in x], dtype=np.int64)
    want = reference(lists, k, dedupe)
    if isinstance(want, tuple):
        with pytest.raises(ListError) as info:
            lists_to_dense(offsets, values, k, TAX, dedupe=dedupe)
        assert (info.value.message, info.value.list_index, info.value.value_index) == want
    else:
        np.testing.assert_array_equal(lists_to_dense(offsets, values, k, TAX, dedupe=dedupe),
                                      want)


@settings(max_examples=100, deadline=None)
@given(lists=st.lists(st.lists(st.sampled_from(TAX.ids[:6].tolist()), max_size=40),
                      max_size=6), k=st.integers(1, 6))
def test_long_raw_lists_deduplicated(lists: list[list[int]], k: int) -> None:
    """Raw release slots (``dedupe``) can be long lists of few topics (sorted another way)."""
    check(lists, k, True)


def test_week_list_arrays_are_the_lookup_and_mask_of_every_week() -> None:
    """The writer's per-week Arrow lists from one compiled pass equal the mask and cumsum of
    the looked-up ids week by week (the writers' former ``list_array``): full sets, short
    sets, empty weeks, no users, one week."""
    import pyarrow as pa

    from topicslab.io._common import week_list_arrays
    from topicslab.taxonomy import load

    tax = load("v2")
    rng = np.random.default_rng(3)
    sets = rng.integers(0, tax.size, size=(5_000, 6, 5)).astype(np.int16)
    sets[::4, 1, 2:] = -1
    sets[1::7, 3, :] = -1
    sets[2::9, 5, 0] = -1
    for arr in (sets, sets[:, :1], sets[:0], np.full((3, 2, 5), -1, np.int16),
                sets[:50].copy(order="F")):
        got = week_list_arrays(arr, tax)
        ids = tax.id_of(arr)
        assert len(got) == arr.shape[1]
        for w, lists in enumerate(got):
            mask = ids[:, w] >= 0
            offsets = np.zeros(len(ids) + 1, dtype=np.int32)
            np.cumsum(mask.sum(axis=1, dtype=np.int32), out=offsets[1:])
            want = pa.ListArray.from_arrays(pa.array(offsets),
                                            pa.array(ids[:, w][mask], type=pa.int32()))
            assert lists.type == pa.list_(pa.int32())
            assert lists.equals(want)
            assert lists.offsets.type == pa.int32()
    with pytest.raises(IndexError, match="out of range"):
        week_list_arrays(np.full((2, 1, 5), tax.size, np.int16), tax)
    with pytest.raises(TypeError, match="int16"):
        week_list_arrays(sets.astype(np.int32), tax)
