"""``TopicSets.validate`` checks a large table in blocks of users (its masks no longer cover
the whole table at once): the rows it names and the order of its checks are unchanged."""

from __future__ import annotations

import numpy as np
import pytest

from topicslab.datamodel import TopicSets
from topicslab.errors import InputError
from topicslab.taxonomy import resolve

N = (1 << 20) + 1000  # past the first block


def _sets() -> TopicSets:
    s = np.empty((N, 1, 2), dtype=np.int16)
    s[:, 0, 0], s[:, 0, 1] = 3, 7
    return TopicSets(s, resolve("v2"))


def test_a_valid_table_passes() -> None:
    _sets().validate()


def test_rows_past_the_first_block_are_named() -> None:
    bad = _sets()
    bad.sets[N - 10, 0, 1] = 2  # out of order
    with pytest.raises(InputError, match="sorted") as info:
        bad.validate()
    assert info.value.row == N - 10


def test_a_range_error_anywhere_comes_before_an_order_error() -> None:
    bad = _sets()
    bad.sets[5, 0, 1] = 2  # out of order, first block
    bad.sets[N - 1, 0, 1] = 9999  # out of range, second block
    with pytest.raises(InputError, match="out of range") as info:
        bad.validate()
    assert info.value.row == N - 1


def _first_problem(s: np.ndarray, m: int, allow_empty: bool) -> tuple[str, int, int] | None:
    """The masks' reference: the first range problem anywhere, else the first order one."""
    bad = (s < -1) | (s >= m)
    if not allow_empty:
        bad |= s == -1
    if bad.any():
        u, w, _ = np.argwhere(bad)[0]
        return "out of range", int(u), int(w)
    real = s[..., 1:] >= 0
    problem = real & ((s[..., 1:] <= s[..., :-1]) | (s[..., :-1] == -1))
    if problem.any():
        u, w, _ = np.argwhere(problem)[0]
        return "sorted", int(u), int(w)
    return None


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("allow_empty", [True, False])
def test_the_compiled_checks_name_what_the_masks_named(seed: int, allow_empty: bool) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40_000))
    s = np.sort(rng.integers(0, 469, size=(n, 3, 4)), axis=-1).astype(np.int16)
    s[:, :, 3] = np.where(rng.random((n, 3)) < 0.3, -1, s[:, :, 3])
    for _ in range(int(rng.integers(0, 4))):  # a few problems anywhere
        u, w, j = int(rng.integers(n)), int(rng.integers(3)), int(rng.integers(4))
        s[u, w, j] = rng.choice([-1, 0, 470, -3, int(s[u, w, 0])])
    sets = TopicSets(np.zeros((0, 3, 4), dtype=np.int16), resolve("v2"))
    sets.sets = s  # (past the constructor's own check)
    want = _first_problem(s, 469, allow_empty)
    if want is None:
        sets.validate(allow_empty=allow_empty)
        return
    with pytest.raises(InputError, match=want[0]) as info:
        sets.validate(allow_empty=allow_empty)
    assert (info.value.row, info.value.field) == (want[1], f"epoch_{want[2]}_topics")
