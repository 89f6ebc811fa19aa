"""The persistence statistic (``ContributionBound.overlap_lags``): exact counts, its query
in the budget and the ledger, the release files, and the refusals."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from topicslab import dp
from topicslab.datamodel import TopicSets
from topicslab.dp.counts import overlap_counts
from topicslab.errors import InputError
from topicslab.taxonomy import Taxonomy


def _random_sets(tax: Taxonomy, n: int, weeks: int, k: int = 3, seed: int = 0,
                 keep: float = 0.6) -> TopicSets:
    """Users who keep each topic of last week with probability ``keep``."""
    rng = np.random.default_rng(seed)
    m = tax.size
    out = np.empty((n, weeks, k), dtype=np.int16)
    for u in range(n):
        cur = rng.choice(m, k, replace=False)
        for w in range(weeks):
            if w:
                cur = np.array([t if rng.random() < keep else -1 for t in cur])
                fresh = rng.permutation([t for t in range(m) if t not in cur])
                cur[cur < 0] = fresh[: int((cur < 0).sum())]
            out[u, w] = np.sort(cur)
    return TopicSets(out, tax)


def _brute(sets: np.ndarray, lags: int, k: int) -> np.ndarray:
    hist = np.zeros((lags, k + 1), dtype=np.int64)
    for row in sets:
        for lag in range(1, lags + 1):
            hist[lag - 1, len(set(row[0].tolist()) & set(row[lag].tolist()))] += 1
    return hist


def test_overlap_counts_match_brute_force(tax12: Taxonomy) -> None:
    data = _random_sets(tax12, 300, 4, seed=1)
    got = overlap_counts(data.sets)
    assert np.array_equal(got, _brute(data.sets, 3, 3))
    # every user adds one unit per lag: the sensitivity the query is calibrated for
    assert (got.sum(axis=1) == 300).all()
    one_more = overlap_counts(np.concatenate([data.sets, data.sets[:1]]))
    assert int(np.abs(one_more - got).sum()) == 3
    assert math.isclose(float(np.sqrt(((one_more - got) ** 2).sum())), math.sqrt(3))


def test_overlap_counts_refuse_unbounded_sets() -> None:
    with pytest.raises(ValueError, match="bounded"):
        overlap_counts(np.array([[[1, 0, 2], [0, 1, 2]]], dtype=np.int16))
    with pytest.raises(ValueError, match="1 \\+ lags"):
        overlap_counts(np.zeros((2, 1, 3), dtype=np.int16))


def test_release_holds_the_statistic_and_spends_its_share(tax12: Taxonomy) -> None:
    data = _random_sets(tax12, 2000, 4, seed=2)
    st = dp.compute_statistics(data, k=3, epsilon=1e6, delta=1e-9, seed=0, overlap_lags=3)
    exact = _brute(data.sets, 3, 3) / 2000
    assert st.q_overlap is not None and st.q_overlap.shape == (3, 4)
    assert np.allclose(st.q_overlap.sum(axis=1), 1.0)
    assert np.abs(st.q_overlap - exact).max() < 1e-3  # ε = 1e6: σ ≈ 1e-5 users
    assert st.ledger is not None
    mechs = {q["name"]: q for q in st.ledger.mechanisms}
    ov = mechs["overlap"]
    assert ov["weeks"] == [0, 1, 2, 3]
    assert math.isclose(ov["sensitivity"], math.sqrt(3))
    assert math.isclose(ov["share"], dp.OVERLAP_SHARE)
    assert math.isclose(mechs["within_w0"]["share"], 0.25 * (1 - dp.OVERLAP_SHARE))
    assert st.ledger.contribution_bounding["overlap_weeks"] == [1, 2, 3]
    # basic composition of the four queries is the whole budget
    assert math.isclose(sum(q["epsilon"] for q in st.ledger.mechanisms), 1e6, rel_tol=1e-9)
    sig = st.noise_sigmas()
    assert sig is not None and sig["overlap"] == pytest.approx(ov["sigma_sampled"] / 2000,
                                                              rel=0.05)


def test_the_pairs_do_not_change_with_the_statistic(tax12: Taxonomy) -> None:
    """The released weeks keep their bounding (padding) draws: the pair statistics are the
    same with and without the persistence statistic, on weeks that need padding; the ledger
    of a release without it is the paper's (no overlap key)."""
    data = _random_sets(tax12, 500, 4, seed=3)
    short = data.sets.copy()
    short[::3, :, 2] = -1  # a third of the users show two topics a week: padded
    data = TopicSets(short, tax12)
    a = dp.compute_statistics(data, k=3, epsilon=1e6, delta=1e-9, seed=4)
    b = dp.compute_statistics(data, k=3, epsilon=1e6, delta=1e-9, seed=4, overlap_lags=2)
    assert a.q_overlap is None and b.q_overlap is not None
    # ε = 1e6: the noise is ~1e-5 users, far below one user's 1/500
    assert np.abs(a.q_across - b.q_across).max() < 1e-4
    assert np.abs(a.q_within - b.q_within).max() < 1e-4
    assert a.ledger is not None and "overlap_weeks" not in a.ledger.contribution_bounding
    assert [q["name"] for q in a.ledger.mechanisms] == ["within_w0", "within_w1",
                                                        "across_w0_w1"]


def test_ledger_labels_from_a_later_first_week(tax12: Taxonomy) -> None:
    data = _random_sets(tax12, 300, 5, seed=7)
    st = dp.compute_statistics(data, k=3, weeks=(1, 2), seed=0, overlap_lags=3,
                               accounting="tight")
    assert st.ledger is not None
    ov = st.ledger.mechanisms[-1]
    assert ov["name"] == "overlap" and ov["weeks"] == [1, 2, 3, 4]
    assert "first released week" in ov["query"]
    assert st.ledger.claimed["proven"] and st.ledger.claimed["epsilon"] == pytest.approx(
        math.log(3))


def test_overlap_lags_are_checked_before_the_private_part(tax12: Taxonomy) -> None:
    data = _random_sets(tax12, 50, 3, seed=5)
    with pytest.raises(InputError, match=r"overlap_lags 3 needs weeks 0\.\.3") as exc:
        dp.compute_statistics(data, k=3, overlap_lags=3)
    assert exc.value.field == "overlap_lags"
    with pytest.raises(InputError) as exc:
        dp.ContributionBound(overlap_lags=-1)
    assert exc.value.field == "overlap_lags"
    with pytest.raises(InputError, match="1 persistence"):
        dp.compute_statistics(data, k=3, overlap_lags=1, split=[0.25, 0.25, 0.5])
    st = dp.compute_statistics(data, k=3, overlap_lags=1, split=[0.2, 0.2, 0.5, 0.1], seed=1)
    assert st.ledger is not None and st.ledger.mechanisms[-1]["share"] == pytest.approx(0.1)


def test_out_of_core_engines_refuse_it() -> None:
    from topicslab.dp.stream import stream_statistics

    with pytest.raises(InputError, match="local engine only") as exc:
        stream_statistics("no-such-file.parquet",
                          contribution=dp.ContributionBound(overlap_lags=2))
    assert exc.value.field == "overlap_lags"


def test_release_files_round_trip_and_refuse_bad_records(tax12: Taxonomy,
                                                         tmp_path: Path) -> None:
    data = _random_sets(tax12, 400, 3, seed=6)
    st = dp.compute_statistics(data, k=3, epsilon=1e6, delta=1e-9, seed=0, overlap_lags=2)
    d = dp.save_statistics(tmp_path / "rel", st)
    back = dp.load_statistics(d, taxonomy=tax12)
    assert back.q_overlap is not None and np.array_equal(back.q_overlap, st.q_overlap)
    path = d / "q_overlap.json"
    good = json.loads(path.read_text())
    cases = [
        ([{**good[0], "lag": 0}, *good[1:]], "row 1", "lag"),
        ([{**good[0], "overlap": 4}, *good[1:]], "row 1", "overlap"),
        ([*good, good[0]], "row 9", "overlap"),
        (good[:-1], None, None),
        ([{**good[0], "frequency": good[0]["frequency"] + 0.5}, *good[1:]], None, "frequency"),
        ([{**good[0], "frequency": "0.1"}, *good[1:]], "row 1", "frequency"),
    ]
    for records, row, fld in cases:
        path.write_text(json.dumps(records))
        with pytest.raises(InputError) as exc:
            dp.load_statistics(d, taxonomy=tax12)
        assert exc.value.file == str(path)
        if row is not None:
            assert exc.value.row == int(row.split()[1])
        if fld is not None:
            assert exc.value.field == fld
    path.write_text(json.dumps(good[:4]))  # lag 1 only; the ledger says 2 lags
    with pytest.raises(InputError, match=r"released 2 lag\(s\)") as exc:
        dp.load_statistics(d, taxonomy=tax12)
    assert exc.value.file == str(path)
    path.unlink()  # the ledger lists the query: its file is required
    with pytest.raises(InputError, match="file missing"):
        dp.load_statistics(d, taxonomy=tax12)
    # a statistic the ledger does not account for is refused
    plain = dp.save_statistics(tmp_path / "plain", dp.compute_statistics(
        data, k=3, epsilon=1e6, delta=1e-9, seed=0))
    (plain / "q_overlap.json").write_text(json.dumps(good))
    with pytest.raises(InputError, match="not accounted for") as exc:
        dp.load_statistics(plain, taxonomy=tax12)
    assert exc.value.file == str(plain / "q_overlap.json")


def test_legacy_schema_keeps_the_statistic(tax12: Taxonomy, tmp_path: Path) -> None:
    data = _random_sets(tax12, 300, 3, seed=8)
    st = dp.compute_statistics(data, k=3, seed=0, overlap_lags=2)
    back = dp.load_statistics(dp.save_statistics(tmp_path / "old", st, schema="legacy"),
                              taxonomy=tax12)
    assert back.q_overlap is not None and np.array_equal(back.q_overlap, st.q_overlap)
