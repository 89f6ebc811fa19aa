"""Out-of-core engine: streamed counts equal the in-memory engine's exactly."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from topicslab import io as tio
from topicslab.cli import stats as _stats  # noqa: F401  (registers the command)
from topicslab.cli._app import app
from topicslab.dp import bound_contributions, compute_statistics, pair_counts
from topicslab.dp.stream import CountAccumulator, ranges_disjoint, stream_counts, stream_statistics
from topicslab.errors import InputError
from topicslab.population import generate
from topicslab.taxonomy import load

runner = CliRunner()


def local_reference(path, weeks, *, k=5, bound="reject", seed=0, strict=True):
    """What the in-memory engine computes: read whole, bound, count."""
    data = tio.read_sets(path, strict=strict)
    bounded, report = bound_contributions(data.sets[:, list(weeks)], data.taxonomy.size, k=k,
                                          bound=bound, seed=seed, user_ids=data.user_ids)
    return pair_counts(bounded, data.taxonomy.size), report, data


def assert_same(bc, ref_counts):
    assert np.array_equal(bc.counts.within, ref_counts.within)
    assert np.array_equal(bc.counts.across, ref_counts.across)


@pytest.fixture(scope="module")
def pop_file(tmp_path_factory):
    pop = generate(3000, 3, seed=11, first_user=10_000)
    path = tmp_path_factory.mktemp("pop") / "pop.parquet"
    tio.write_sets(path, pop, row_group_size=400)
    return path


def messy_lists(n: int, n_weeks: int, seed: int):
    """Raw weekly lists with every case bounding handles: full, short, empty, null,
    repeated topics, over-long weeks (taxonomy v2 ids)."""
    ids = load("v2").ids
    rng = np.random.default_rng(seed)
    weeks = []
    for _ in range(n_weeks):
        col = []
        for _ in range(n):
            r = rng.random()
            if r < 0.1:
                col.append(None)
            elif r < 0.2:
                col.append([])
            elif r < 0.4:
                col.append([int(x) for x in rng.choice(ids[:40], rng.integers(1, 5))])
            elif r < 0.5:
                t = [int(x) for x in rng.choice(ids[:40], 3, replace=False)]
                col.append([*t, t[0], t[1]])  # repeated topics
            elif r < 0.6:
                col.append([int(x) for x in rng.choice(ids, 7, replace=False)])  # over-long
            else:
                col.append([int(x) for x in rng.choice(ids[:60], 5, replace=False)])
        weeks.append(col)
    return weeks


def write_foreign(path, user_ids, weeks, row_group_size=97):
    """A Parquet file from another tool: no topicslab metadata, user ids in any order."""
    cols = {"user_id": pa.array(user_ids, pa.int64())}
    for w, col in enumerate(weeks):
        cols[f"epoch_{w}_topics"] = pa.array(col, pa.list_(pa.int32()))
    pq.write_table(pa.table(cols), path, row_group_size=row_group_size)


@pytest.fixture(scope="module")
def messy_file(tmp_path_factory):
    n = 1500
    rng = np.random.default_rng(5)
    uids = rng.permutation(np.arange(n, dtype=np.int64) * 7 + 3)  # unsorted: exact id check
    path = tmp_path_factory.mktemp("messy") / "messy.parquet"
    write_foreign(path, uids, messy_lists(n, 3, 6))
    return path


@pytest.mark.parametrize(("weeks", "chunk"), [((0, 1), 512), ((0, 1, 2), 4096), ((1,), 333)])
def test_generated_population_equals_local(pop_file, weeks, chunk):
    ref, rep, data = local_reference(pop_file, weeks, seed=3)
    bc = stream_counts(pop_file, weeks=weeks, seed=3, chunk_users=chunk)
    assert_same(bc, ref)
    assert bc.bounding == rep
    assert bc.n_users == data.n_users
    assert bc.weeks == list(weeks)
    assert bc.counts.within.sum() == data.n_users * 10 * len(weeks)


def test_fingerprint_ignores_chunking_but_not_data(pop_file):
    a = stream_counts(pop_file, seed=3, chunk_users=500).fingerprint
    assert a == stream_counts(pop_file, seed=3, chunk_users=2048).fingerprint
    assert a != stream_counts(pop_file, weeks=(1, 2), seed=3).fingerprint
    assert a.startswith("mset-splitmix64-sha256:")


@pytest.mark.parametrize("k", [5, 3])
def test_messy_file_truncate_equals_local(messy_file, k):
    ref, rep, _ = local_reference(messy_file, (0, 1, 2), k=k, bound="truncate", seed=9,
                                  strict=False)
    bc = stream_counts(messy_file, weeks=(0, 1, 2), k=k, bound="truncate", seed=9,
                       strict=False, chunk_users=256)
    assert_same(bc, ref)
    assert bc.bounding == rep
    assert rep.weeks_truncated > 0 and rep.weeks_missing > 0 and rep.weeks_padded > 0


def test_messy_file_counts_match_raw_lists(tmp_path):
    """Independent of io: dense raw lists (repeats kept) bounded in one piece."""
    n = 600
    weeks = messy_lists(n, 2, 21)
    uids = np.arange(n, dtype=np.int64)[::-1] + 100
    path = tmp_path / "raw.parquet"
    write_foreign(path, uids, weeks)
    tax = load("v2")
    raw = np.full((n, 2, 8), -1, dtype=np.int16)
    for w, col in enumerate(weeks):
        for u, lst in enumerate(col):
            if lst:
                raw[u, w, :len(lst)] = tax.index(np.asarray(lst))
    bounded, rep = bound_contributions(raw, tax.size, k=5, bound="truncate", seed=2,
                                       user_ids=uids)
    bc = stream_counts(path, bound="truncate", seed=2, strict=False, chunk_users=100)
    assert_same(bc, pair_counts(bounded, tax.size))
    # the reader (strict=False) merges repeats before bounding sees them
    assert bc.bounding.weeks_truncated == rep.weeks_truncated
    assert bc.bounding.padded_slots == rep.padded_slots


def test_strict_rejects_repeated_topic(messy_file):
    with pytest.raises(InputError, match="appears twice") as ei:
        stream_counts(messy_file, bound="truncate", seed=1)
    assert ei.value.file == str(messy_file) and ei.value.row is not None


def test_reject_mode_names_user_row_and_week(messy_file):
    with pytest.raises(InputError, match="more than k=5") as ei:
        stream_counts(messy_file, bound="reject", seed=1, strict=False, chunk_users=200)
    exc = ei.value
    table = pq.read_table(messy_file)
    row = exc.row
    assert row is not None and exc.field is not None
    uid = table.column("user_id")[row - 1].as_py()
    assert f"user {uid} " in exc.message
    week_list = table.column(exc.field)[row - 1].as_py()
    assert len(set(week_list)) > 5


def test_directory_of_files_equals_one_file(tmp_path, pop_file):
    pop = tio.read_sets(pop_file)
    d = tmp_path / "parts"
    d.mkdir()
    for i, lo in enumerate(range(0, pop.n_users, 1100)):
        tio.write_sets(d / f"part-{i:03d}.parquet", pop.subset(slice(lo, lo + 1100)))
    (d / "_SUCCESS").write_text("")
    one = stream_counts(pop_file, seed=8)
    many = stream_counts(d, seed=8, chunk_users=300)
    assert_same(many, one.counts)
    assert many.fingerprint == one.fingerprint and many.bounding == one.bounding


def test_duplicate_user_across_chunks_is_rejected(tmp_path):
    weeks = [[[1, 4]] * 6, [[9]] * 6]
    write_foreign(tmp_path / "d.parquet", [1, 2, 3, 4, 5, 2], weeks, row_group_size=3)
    with pytest.raises(InputError, match="user id 2 appears more than once") as ei:
        stream_counts(tmp_path / "d.parquet", seed=0, chunk_users=3)
    assert ei.value.row == 6 and ei.value.field == "user_id"
    with pytest.raises(InputError, match="user id 2 appears more than once") as ei:
        stream_counts(tmp_path / "d.parquet", seed=0, chunk_users=10)
    assert ei.value.row == 6


def test_unknown_topic_is_located(tmp_path):
    write_foreign(tmp_path / "u.parquet", [1, 2, 3], [[[1], [4], [9999]], [[1], [], [4]]])
    with pytest.raises(InputError, match="9999") as ei:
        stream_counts(tmp_path / "u.parquet", seed=0)
    assert ei.value.row == 3 and ei.value.field == "epoch_0_topics"


@pytest.mark.parametrize(("kw", "msg"), [
    ({"weeks": (0, 5)}, "weeks must be"),
    ({"chunk_users": 0}, "chunk_users must be in 1.."),
    ({"bound": "clip"}, "bound must be"),
])
def test_bad_parameters(pop_file, kw, msg):
    with pytest.raises(ValueError, match=msg):
        stream_counts(pop_file, seed=0, **kw)


def test_missing_file_and_bad_split(tmp_path, pop_file):
    with pytest.raises(InputError, match="no such file"):
        stream_counts(tmp_path / "nope.parquet", seed=0)
    with pytest.raises(ValueError, match="split"):
        stream_statistics(pop_file, split=(0.5, 0.5), seed=0)  # 3 queries for 2 weeks


def test_other_formats_go_through_io(tmp_path, pop_file):
    pop = tio.read_sets(pop_file)
    csv = tmp_path / "pop.csv"
    tio.write_sets(csv, pop)
    assert_same(stream_counts(csv, seed=4, chunk_users=700), stream_counts(pop_file, seed=4).counts)


def test_release_is_the_local_release(pop_file):
    """Same counts + same seed -> the shared release_counts gives identical statistics."""
    data = tio.read_sets(pop_file)
    local = compute_statistics(data, seed=13, accounting="tight")
    st = stream_statistics(pop_file, seed=13, accounting="tight", chunk_users=1000)
    assert np.array_equal(st.q_within, local.q_within)
    assert np.array_equal(st.q_across, local.q_across)
    assert st.n_estimate == local.n_estimate
    assert st.ledger is not None and local.ledger is not None
    assert st.ledger.audit["engine"] == "stream"
    assert st.ledger.audit["bounding"] == local.ledger.audit["bounding"]
    assert st.ledger.audit["input_fingerprint"].startswith("mset-")
    assert st.ledger.mechanisms == local.ledger.mechanisms


def test_accumulator_helpers():
    assert ranges_disjoint([(5, 9), (0, 4), (10, 10)])
    assert not ranges_disjoint([(0, 4), (4, 6)])
    acc = CountAccumulator(12, 2, k=5, bound="reject", pad_seed=1)
    acc.add(np.array([3, 4]), np.full((2, 2, 1), -1, np.int16))
    acc.add(np.array([7]), np.full((1, 2, 1), -1, np.int16))
    assert acc.ranges == [(3, 7)] and acc.n_users == 3
    assert acc.bounding_report().weeks_missing == 6


def test_cli_stream_engine(tmp_path, pop_file):
    out = tmp_path / "rel"
    res = runner.invoke(app, ["stats", "--sets", str(pop_file), "--out", str(out),
                              "--engine", "stream", "--chunk-users", "700", "--seed", "2"])
    assert res.exit_code == 0, res.output
    assert "stream" in res.output
    ledger = json.loads((out / "privacy_ledger.json").read_text())
    assert ledger["audit"]["engine"] == "stream"
    res = runner.invoke(app, ["stats", "--sets", str(pop_file), "--out", str(tmp_path / "o2"),
                              "--engine", "auto", "--seed", "2"])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "o2" / "privacy_ledger.json").read_text())[
        "audit"]["engine"] == "local"  # small file: auto stays in memory


@pytest.mark.parametrize(("args", "msg"), [
    (["--engine", "gpu"], "--engine must be one of"),
    (["--master", "local[1]"], "--master applies to --engine spark only"),
])
def test_cli_bad_engine_options(tmp_path, pop_file, args, msg):
    res = runner.invoke(app, ["stats", "--sets", str(pop_file), "--out", str(tmp_path / "o"),
                              *args])
    assert res.exit_code == 2
    assert msg in res.output
