"""Readers of visits logs and domain tables: accepted shapes, and one-line located errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from topicslab.errors import InputError
from topicslab.io.visits import (
    hosts_of,
    iter_visits,
    read_domain_table,
    registrable_domain,
    visits_time_range,
)
from topicslab.taxonomy import load

TAX = load("v2")


def _topics(table, domain: str) -> list[int]:  # type: ignore[no-untyped-def]
    i = table.index[domain]
    return sorted(int(t) for t in TAX.id_of(table.topics[table.indptr[i]:table.indptr[i + 1]]))


def test_registrable_domains_and_hosts() -> None:
    assert registrable_domain("www.bbc.co.uk") == "bbc.co.uk"
    assert registrable_domain("a.b.example.com.") == "example.com"
    assert registrable_domain("someone.github.io") == "someone.github.io"  # private suffix
    assert registrable_domain("192.168.0.1") == "192.168.0.1"
    assert registrable_domain("localhost") == "localhost"
    got = hosts_of(pa.array(["https://u:p@WWW.Example.com:8080/a?b#c", "example.org.",
                             "ftp://[::1]/x", "plain.host/path"])).to_pylist()
    assert got == ["www.example.com", "example.org", "[::1]", "plain.host"]


@pytest.mark.parametrize("text", [
    'domain,topics\nwww.bbc.co.uk,243;325\nempty.org,\ncars.com,"[57, 1]"\n',
    'domain,topic_id\nbbc.co.uk,243\nbbc.co.uk,325\nempty.org,\ncars.com,57\ncars.com,1\n',
])
def test_domain_table_csv_shapes(tmp_path: Path, text: str) -> None:
    path = tmp_path / "d.csv"
    path.write_text(text, encoding="utf-8")
    t = read_domain_table(path)
    assert set(t.domains) == {"bbc.co.uk", "empty.org", "cars.com"}
    assert _topics(t, "bbc.co.uk") == [243, 325]
    assert _topics(t, "cars.com") == [1, 57]
    assert _topics(t, "empty.org") == []


def test_domain_table_json_shapes(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({"bbc.co.uk": [243, 325], "www.cars.com": [57]}))
    b.write_text(json.dumps([{"domain": "bbc.co.uk", "topics": [243, 325]},
                             {"domain": "cars.com", "topics": "57"}]))
    for path in (a, b):
        t = read_domain_table(path)
        assert t.domains == ("bbc.co.uk", "cars.com")
        assert _topics(t, "cars.com") == [57]


@pytest.mark.parametrize(("name", "text", "row", "field", "words"), [
    ("d.csv", "domain,topics\na.com,1\nb.com,3\n", 2, "topics", "not in taxonomy v2"),
    ("d.csv", "domain,topics\na.com,1;x\n", 1, "topics", "expected topic ids"),
    ("d.csv", "domain,topics\na.com,1;1\n", 1, "topics", "appears twice"),
    ("d.csv", "domain,topics\nwww.a.com,1\na.com,4\n", 2, "domain", r"earlier entry \(row 1\)"),
    ("d.csv", "domain,topics\nhttp s,1\n", 1, "domain", "not a domain name"),
    ("d.csv", "site_name,topics\na.com,1\n", None, "domain", "missing column"),
    ("d.csv", "domain,labels\na.com,1\n", None, "topics", "missing column"),
    ("d.csv", "domain,topic_id\na.com,1\na.com,z\n", 2, "topic_id", "expected an integer"),
    ("d.json", '{"a.com": [1], "b.com": ["x"]}', 2, "b.com", "list of topic ids"),
    ("d.json", '[{"domain": "a.com"}]', 1, "topics", "missing topics"),
    ("d.json", '{"a.com": [1]', None, None, "not valid JSON"),
])
def test_domain_table_errors(tmp_path: Path, name: str, text: str, row: int | None,
                             field: str | None, words: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=words) as exc:
        read_domain_table(path)
    assert (exc.value.file, exc.value.row, exc.value.field) == (str(path), row, field)
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize(("text", "row", "field", "words"), [
    ("user_id,timestamp,url\n1,2024-01-01,a.com\nx,2024-01-01,a.com\n", 2, "user_id",
     "expected an integer"),
    ("user_id,timestamp,url\n1,2024-01-01,a.com\n1,yesterday,a.com\n", 2, "timestamp",
     "cannot read a time"),
    ("user_id,timestamp,url\n1,2024-01-01,a.com\n1,,a.com\n", 2, "timestamp", "missing"),
    ("user_id,week,url\n1,0,a.com\n1,-1,a.com\n", 2, "week", "negative"),
    ("user_id,week,url\n1,0,a.com\n1,1.5,a.com\n", 2, "week", "expected an integer"),
    ("user_id,url\n1,a.com\n", None, "timestamp", "missing column"),
    ("user_id,week,timestamp,url\n1,0,2024-01-01,a.com\n", None, "week", "choose one"),
    ("user,week,page\n1,0,a.com\n", None, "url", "missing column"),
    ("user_id,week,url,extra\n1,0,a.com\n", 1, None, "expected 4 fields"),
])
def test_visits_errors(tmp_path: Path, text: str, row: int, field: str | None,
                       words: str) -> None:
    path = tmp_path / "v.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=words) as exc:
        list(iter_visits(path))
    assert (exc.value.file, exc.value.row, exc.value.field) == (str(path), row, field)


def test_visits_times_text_and_parquet(tmp_path: Path) -> None:
    path = tmp_path / "v.csv"
    path.write_text("user_id,timestamp,host\n1,2024-01-01T01:00:00+01:00,a.com\n"
                    "2,1704067200,b.com\n3,2024-01-01 00:00:01,c.com\n", encoding="utf-8")
    (b,) = list(iter_visits(path))
    assert b.time.tolist() == [1704067200_000000] * 2 + [1704067201_000000]
    assert visits_time_range(path) == (1704067200_000000, 1704067201_000000)
    pq.write_table(pa.table({"user_id": [1, 2], "visit_time": pa.array(
        np.array(["2024-01-02", "2024-01-05"], dtype="datetime64[ms]")), "url": ["a", "b"]}),
        tmp_path / "v.parquet", row_group_size=1)
    assert visits_time_range(tmp_path / "v.parquet") == (1704153600_000000, 1704412800_000000)
    pq.write_table(pa.table({"user_id": [1, None], "week": [0, 1], "url": ["a", "b"]}),
                   tmp_path / "n.parquet")
    with pytest.raises(InputError, match="missing value") as exc:
        list(iter_visits(tmp_path / "n.parquet"))
    assert (exc.value.row, exc.value.field) == (2, "user_id")


@pytest.mark.parametrize(("columns", "row", "field", "words"), [
    ({"user_id": [1.0, 2.5], "week": [0, 1], "url": ["a.com", "b.com"]}, 2, "user_id",
     "expected an integer"),
    ({"user_id": [1, 2], "week": [0, 1], "url": [1, 2]}, 1, "url", "expected text"),
    ({"user_id": [1, 2], "week": [0, 1], "host": ["a.com", None]}, 2, "host", "missing"),
    ({"user_id": [1, 2], "timestamp": ["2024-01-01", "noon"], "url": ["a", "b"]}, 2,
     "timestamp", "cannot read a time"),
    ({"user_id": [1, 2], "timestamp": [1.5, 2.5], "url": ["a", "b"]}, 1, "timestamp",
     "expected timestamps"),
])
def test_parquet_visits_errors(tmp_path: Path, columns: dict[str, list[object]], row: int,
                               field: str, words: str) -> None:
    path = tmp_path / "v.parquet"
    pq.write_table(pa.table(columns), path)
    with pytest.raises(InputError, match=words) as exc:
        list(iter_visits(path))
    assert (exc.value.file, exc.value.row, exc.value.field) == (str(path), row, field)

