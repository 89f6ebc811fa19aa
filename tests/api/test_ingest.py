"""``ingest_visits``: visits log -> per-week topic counts -> the mechanism's top-5 profile.

Expected profiles are computed by hand from the ranking rule (utility bucket, then count) on
logs where no tie or padding decides; where randomness decides (padding), the ingested
profiles must equal ``top_k`` on the same counts with the same row keys, i.e. the mechanism's.
Topic ids of taxonomy v2 used: Standard 1, 4, 12, 23, 100, 101, 243; High 57, 325.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from topicslab.api import top_k
from topicslab.api.ingest import TopicCounter, ingest_visits
from topicslab.errors import InputError
from topicslab.io.visits import DomainTable
from topicslab.taxonomy import load

TAX = load("v2")
DOMAINS = {"arts.com": [1], "events.com": [4], "movies.com": [12], "music.com": [23],
           "books.com": [100], "kids-books.com": [101], "cars.com": [57],
           "bbc.co.uk": [243, 325], "empty.org": []}


def _write_csv(path: Path, rows: list[tuple[object, ...]],
               header: str = "user_id,timestamp,url") -> Path:
    path.write_text(header + "\n" + "".join(",".join(map(str, r)) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def _visits(user: int, day: str, host: str, n: int) -> list[tuple[object, ...]]:
    return [(user, day, host)] * n


def _ids(sets: np.ndarray) -> list[int]:
    return [int(t) for t in TAX.id_of(sets) if t >= 0]


@pytest.fixture
def table() -> DomainTable:
    return DomainTable.from_mapping(DOMAINS, taxonomy=TAX)


def test_top5_by_count(tmp_path: Path, table: DomainTable) -> None:
    # counts 6, 5, 4, 3, 2, 1 on six Standard topics: the 1-visit topic (101) drops out
    rows = (_visits(1, "2024-01-01", "arts.com", 6) + _visits(1, "2024-01-02", "events.com", 5)
            + _visits(1, "2024-01-03", "movies.com", 4) + _visits(1, "2024-01-04", "music.com", 3)
            + _visits(1, "2024-01-05", "books.com", 2)
            + _visits(1, "2024-01-07T23:59:59Z", "kids-books.com", 1))
    res = ingest_visits(_write_csv(tmp_path / "v.csv", rows), table)
    assert res.sets.sets.shape == (1, 1, 5)
    assert _ids(res.sets.sets[0, 0]) == [1, 4, 12, 23, 100]
    assert res.report.padded_user_weeks == 0


def test_high_bucket_outranks_counts(tmp_path: Path, table: DomainTable) -> None:
    # one visit of a High topic (57) beats the Standard topics; 100 (2 visits) drops out
    rows = (_visits(1, "2024-01-01", "arts.com", 6) + _visits(1, "2024-01-01", "events.com", 5)
            + _visits(1, "2024-01-01", "movies.com", 4) + _visits(1, "2024-01-01", "music.com", 3)
            + _visits(1, "2024-01-01", "books.com", 2) + _visits(1, "2024-01-01", "cars.com", 1))
    res = ingest_visits(_write_csv(tmp_path / "v.csv", rows), table)
    assert _ids(res.sets.sets[0, 0]) == [1, 4, 12, 23, 57]


def test_weeks_subdomains_and_multi_topic_domains(tmp_path: Path, table: DomainTable) -> None:
    # news.bbc.co.uk and https://WWW.BBC.co.uk:443/... reduce to bbc.co.uk: both its topics
    # count once per visit. 2024-01-08 00:00Z is the first instant of week 1.
    rows = [(5, "2024-01-01T00:00:00Z", "https://user@WWW.BBC.co.uk:443/sport?x=1"),
            (5, "2024-01-07T23:59:59Z", "news.bbc.co.uk"),
            (5, "2024-01-08T00:00:00Z", "arts.com"),
            (5, "2024-01-15T12:00:00+02:00", "http://events.com/"),  # 10:00Z, week 2
            (2, "2024-01-02", "movies.com")]
    res = ingest_visits(_write_csv(tmp_path / "v.csv", rows), table)
    assert res.sets.user_ids.tolist() == [2, 5]
    dense = res.counts.dense()
    assert dense.shape == (2, 3, TAX.size)
    expect = np.zeros_like(dense)
    expect[1, 0, TAX.index([243, 325])] = 2
    expect[1, 1, TAX.index(1)] = 1
    expect[1, 2, TAX.index(4)] = 1
    expect[0, 0, TAX.index(12)] = 1
    assert np.array_equal(dense, expect)
    assert res.report.weeks == 3 and res.report.epoch_start == "2024-01-01T00:00:00Z"
    # the week-0 profile keeps both observed topics (High 325 and Standard 243)
    assert {243, 325} <= set(_ids(res.sets.sets[1, 0]))


def test_epoch_start_moves_the_windows(tmp_path: Path, table: DomainTable) -> None:
    rows = [(1, "2024-01-03", "arts.com"), (1, "2024-01-05", "events.com")]
    path = _write_csv(tmp_path / "v.csv", rows)
    res = ingest_visits(path, table, epoch_start="2023-12-29")  # weeks from Friday
    assert res.report.weeks == 2
    assert res.counts.dense()[0, 0, TAX.index(1)] == 1
    assert res.counts.dense()[0, 1, TAX.index(4)] == 1
    with pytest.raises(InputError, match="before the epoch start") as exc:
        ingest_visits(path, table, epoch_start="2024-01-04")
    assert exc.value.row == 1 and exc.value.field == "timestamp"


def test_padding_is_the_mechanisms(tmp_path: Path, table: DomainTable) -> None:
    # few topics per week: the padding comes from the mechanism's own keyed randomness
    rng = np.random.default_rng(3)
    hosts = [*DOMAINS, "unknown.net"]
    rows = [(int(u), f"2024-01-{int(d):02d}", hosts[int(h)])
            for u, d, h in zip(rng.integers(0, 6, 60), rng.integers(1, 22, 60),
                               rng.integers(0, len(hosts), 60), strict=True)]
    res = ingest_visits(_write_csv(tmp_path / "v.csv", rows), table, seed=11)
    n, w = res.sets.n_users, res.sets.n_weeks
    keys = (res.sets.user_ids[:, None] * 2**16 + np.arange(w)[None, :]).reshape(-1)
    expect = top_k(res.counts.dense().reshape(n * w, -1), k=5, taxonomy=TAX, seed=11,
                   row_keys=keys).reshape(n, w, 5)
    assert np.array_equal(res.sets.sets, expect)
    res.sets.validate(allow_empty=False)
    # a user's week does not depend on the other users of the log, nor on the weeks it spans
    last = res.sets.user_ids[-1]
    assert last > 0 and np.count_nonzero(res.counts.dense()[-1, 0]) < 5  # padding decides
    mine = [r for r in rows if r[0] == last and r[1] < "2024-01-08"]  # week 0 only
    alone = ingest_visits(_write_csv(tmp_path / "one.csv", mine), table, seed=11,
                          epoch_start=res.report.epoch_start)
    assert alone.sets.n_weeks == 1 < w
    assert np.array_equal(alone.sets.sets[0, 0], res.sets.sets[-1, 0])
    # the batch size changes nothing (the counter's tables grow many times)
    small = ingest_visits(tmp_path / "v.csv", table, seed=11, batch_rows=7)
    assert np.array_equal(small.sets.sets, res.sets.sets)


def test_unclassified_domains_are_reported(tmp_path: Path, table: DomainTable) -> None:
    rows = (_visits(1, "2024-01-01", "a.unknown.net", 2) + _visits(2, "2024-01-01", "b.net", 3)
            + _visits(2, "2024-01-01", "unknown.net", 1) + _visits(2, "2024-01-02", "empty.org", 4)
            + _visits(1, "2024-01-02", "arts.com", 5))
    r = ingest_visits(_write_csv(tmp_path / "v.csv", rows), table).report
    assert (r.visits, r.classified_visits, r.no_topic_visits, r.unclassified_visits) == \
        (15, 5, 4, 6)
    assert r.unclassified == [("b.net", 3), ("unknown.net", 3)]
    assert r.users == 2 and r.empty_user_weeks == 1  # user 2 saw no topic at all
    assert r.as_dict(top=1)["top_unclassified"] == [["b.net", 3]]


def test_parquet_log_with_week_column(tmp_path: Path, table: DomainTable) -> None:
    hosts = pa.array(["arts.com", "cars.com", "nowhere.io"]).dictionary_encode()
    pq.write_table(pa.table({"user": pa.array([9, 9, 4, 9], pa.int64()),
                             "week": pa.array([0, 2, 1, 2], pa.int32()),
                             "host": pa.DictionaryArray.from_arrays(
                                 pa.array([0, 1, 2, 0], pa.int32()), hosts.dictionary)}),
                   tmp_path / "v.parquet")
    res = ingest_visits(tmp_path / "v.parquet", table)
    assert res.sets.user_ids.tolist() == [4, 9] and res.report.weeks == 3
    assert res.report.epoch_start is None
    d = res.counts.dense()
    assert d[1, 0, TAX.index(1)] == 1 and d[1, 2, TAX.index(57)] == 1
    assert d[1, 2, TAX.index(1)] == 1 and d[0].sum() == 0
    with pytest.raises(InputError, match="epoch start applies to timestamps"):
        ingest_visits(tmp_path / "v.parquet", table, epoch_start="2024-01-01")


def test_empty_log_is_refused(tmp_path: Path, table: DomainTable) -> None:
    with pytest.raises(InputError, match="no visits") as exc:
        ingest_visits(_write_csv(tmp_path / "v.csv", []), table)
    assert exc.value.file == str(tmp_path / "v.csv")


def test_counter_rejects_what_it_cannot_pack(table: DomainTable) -> None:
    c = TopicCounter(table)
    with pytest.raises(ValueError, match="weeks"):
        c.add([1], [1 << 16], [0])
    with pytest.raises(ValueError, match="codes"):
        c.add([1], [0], [len(table)])
