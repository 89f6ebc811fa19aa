"""Bad input, the twenty-third independent round (issue 15), full scope.

``ingest``: a visits log's URL whose host could not be read was counted as another domain
without a word -- ``http://a b.com/`` as ``a``, ``https://exa mple.com`` as ``exa``,
``http://[::1/`` as ``[``, ``https://site.de:abc/`` (a port that is not a number) as
``site.de`` -- and a domain table with no domains (a header only, ``{}`` or ``[]``) was
accepted, so that every visit was unclassified and every profile was padding topics only.

Integers written with a plus sign (``+5``), which the readers' pattern takes and Arrow's cast
does not: in a CSV's ``user_id``, topic ids, a long table's ``week`` or a visits log's
columns they were "integer 0 is outside the 64-bit signed range" naming the first row (not
the row of the ``+``); in a domain table's topics, ``ArrowInvalid`` with exit code 1; as Unix
seconds, "cannot read a time".

Topic sets of no weeks: a CSV or Parquet file of ``user_id`` alone (or a TFRecord of records
with no week feature) was read as users of zero weeks -- ``convert`` wrote it, ``observe``
ended in "ValueError: zero-size array to reduction operation maximum" (exit code 1), ``reid``
and ``validate`` printed numpy's or an empty range's message -- and ``io.write_sets`` wrote
such sets as files that no reader takes.

The Python API (``topicslab.io``): ``write_sets`` wrote sets whose ``user_ids`` repeat a user
(every reader refuses the file) and, to TFRecord, more shards than users (empty shard files,
which every reader refuses); ``iter_sets_parquet(batch_size=0)`` was "not a valid Parquet
file", a batch size past 64 bits an ``OverflowError``; ``iter_visits(batch_rows=0)`` was
``range()``'s ``ValueError`` and ``batch_rows=-1`` an empty log; ``DomainTable.from_mapping``
read topic id 1.7 as 1 (and ``"1;2"`` or ``None`` were Python errors); ``ingest_visits`` took
a ``DomainTable`` of no domains.

Site traces (Parquet) from another writer: a week column dropped, or named as the sets' week
columns (``epoch_3_topics``), was read as traces of fewer weeks, whatever the topicslab
metadata said; metadata saying 7 weeks over 4 week columns was read too. The sets reader
refused all three. In TFRecord sets, a week feature misspelt in every record
(``epoch_3_topic``) was skipped, and the file read as one week fewer.

``sample`` of a persistent model whose ``model.json`` lost its ``model`` key (read, as files
before persistent types, as the paper's types) blamed the tensors: "model.safetensors, field
'theta': theta has shape (2, 1, 5, 469), model.json says (2, 4, 5, 469)".

Interruptions: a Ctrl-C that landed in pyarrow's argument packing (``ingest`` reading the
domain table) was turned by pyarrow into "TypeError: Got unexpected argument type <class
'str'> for compute function": exit code 1 and that line, not "interrupted:" and 130. The
latch saw the signal, but only a command that succeeded asked it. ``kill`` (SIGTERM) and a
hang-up were not latched at all.

The same contract as ``test_bad_inputs.py``: exit code 2, one line ``error: ...`` naming the
offending file, row or field, no traceback, and nothing written.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from refusal import fit_small_model, invoke, population_and_stats, refusal_test

from topicslab.io.visits import sample_files


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped ingest sample, and copies of it with one edit."""
    d = tmp_path_factory.mktemp("round23")
    visits, domains = sample_files()
    shutil.copy(visits, d / "visits.csv")
    shutil.copy(domains, d / "domains.csv")
    text = (d / "visits.csv").read_text(encoding="utf-8")
    first = "https://m.dogwalkers.de"
    assert first in text
    for name, url in [("space", "http://dog walkers.de/"), ("bracket", "http://[::1/"),
                      ("port", "https://m.dogwalkers.de:abc/")]:
        (d / f"visits-{name}.csv").write_text(text.replace(first, url, 1), encoding="utf-8")
    (d / "visits-plus-user.csv").write_text(text.replace("\n104,", "\n+104,", 1),
                                            encoding="utf-8")
    (d / "domains-header.csv").write_text("domain,topics\n", encoding="utf-8")
    dom = (d / "domains.csv").read_text(encoding="utf-8")
    assert ",325\n" in dom
    (d / "domains-plus.csv").write_text(dom.replace(",325\n", ",+325\n", 1), encoding="utf-8")
    (d / "sets-plus.csv").write_text("user_id,epoch_0_topics\n1,3;4\n+1,5\n",
                                     encoding="utf-8")
    (d / "users-only.csv").write_text("user_id\n1\n2\n", encoding="utf-8")
    pq.write_table(pa.table({"user_id": pa.array([1, 2], pa.int64())}),
                   d / "users-only.parquet")
    population_and_stats(d)
    fit_small_model(invoke, d)
    shutil.copytree(d / "model", d / "model-no-kind")
    meta = json.loads((d / "model" / "model.json").read_text(encoding="utf-8"))
    assert meta.pop("model") == "persistent"
    (d / "model-no-kind" / "model.json").write_text(json.dumps(meta), encoding="utf-8")
    res = invoke(["observe", "--sets", str(d / "pop.parquet"), "--out", str(d / "traces.parquet")])
    assert res.exit_code == 0, res.output
    traces = pq.read_table(d / "traces.parquet")
    meta = traces.schema.metadata
    pq.write_table(traces.drop(["epoch_3_topic"]), d / "traces-week-dropped.parquet")
    pq.write_table(traces.drop(["epoch_3_topic"]).replace_schema_metadata(None),
                   d / "traces-week-dropped-no-meta.parquet")
    pq.write_table(traces.rename_columns([*traces.column_names[:-1], "epoch_3_topics"]),
                   d / "traces-week-misnamed.parquet")
    pq.write_table(traces.replace_schema_metadata(
        {**meta, b"topicslab": meta[b"topicslab"].replace(b'"weeks": 4', b'"weeks": 7')}),
        d / "traces-meta-weeks-7.parquet")
    from topicslab import io as tio

    tio.write_sets(d / "pop.tfrecord", tio.read_sets(d / "pop.parquet"))
    records = [tio.decode_example(data) for _, data in tio.iter_records(d / "pop.tfrecord")]
    for feats in records:
        feats["epoch_3_topic"] = feats.pop("epoch_3_topics")
    tio.write_records(d / "week-misspelt.tfrecord", [tio.encode_example(f) for f in records])
    (d / "domains-empty.json").write_text("{}", encoding="utf-8")
    return d


INGEST = ["ingest", "-q", "--out", "{out}.parquet"]
REID_TRACES = ["reid", "--no-progress", "--targets", "20", "--traces"]

CASES: list[tuple[str, list[str], str]] = [
    # counted as the unclassified domain 'dog', '[' or read as m.dogwalkers.de, exit code 0
    *[(f"ingest-url-{name}", [*INGEST, "-d", "{in}/domains.csv", "-v",
                              f"{{in}}/visits-{name}.csv"],
       f"visits-{name}.csv, row 1, field 'url': no host name in")
      for name in ("space", "bracket", "port")],
    # every visit unclassified, every profile padding topics only, exit code 0
    ("ingest-domains-header-only", [*INGEST, "-v", "{in}/visits.csv", "-d",
                                    "{in}/domains-header.csv"],
     "domains-header.csv, field '--domains': the domain table lists no domains"),
    ("ingest-domains-empty-object", [*INGEST, "-v", "{in}/visits.csv", "-d",
                                     "{in}/domains-empty.json"],
     "domains-empty.json, field '--domains': the domain table lists no domains"),
    # "integer 0 is outside the 64-bit signed range", row 1 (the + is in row 2)
    ("convert-user-id-with-plus", ["convert", "{in}/sets-plus.csv", "{out}.parquet"],
     "sets-plus.csv, row 2, field 'user_id': user id 1 appears more than once"),
    # zero-week users: convert wrote them, observe ended in a ValueError (exit code 1)
    ("convert-csv-of-user-ids-only", ["convert", "{in}/users-only.csv", "{out}.parquet"],
     "users-only.csv, field 'epoch_0_topics': no week column"),
    ("observe-parquet-of-user-ids-only", ["observe", "--sets", "{in}/users-only.parquet",
                                          "--out", "{out}.parquet"],
     "users-only.parquet, field 'epoch_0_topics': no week column"),
    ("reid-csv-of-user-ids-only", ["reid", "--sets", "{in}/users-only.csv", "--no-progress"],
     "users-only.csv, field 'epoch_0_topics': no week column"),
    # attacked as traces of 3 weeks, exit code 0
    ("reid-traces-week-dropped", [*REID_TRACES, "{in}/traces-week-dropped.parquet"],
     "field 'epoch_3_topic': metadata says 4 weeks, columns give 3"),
    ("reid-traces-week-misnamed",
     [*REID_TRACES, "{in}/traces-week-misnamed.parquet"],
     "field 'epoch_3_topics': unknown week column"),
    ("reid-traces-metadata-says-7-weeks", [*REID_TRACES, "{in}/traces-meta-weeks-7.parquet"],
     "field 'epoch_4_topic': metadata says 7 weeks, columns give 4"),
    # converted as 3 weeks, exit code 0
    ("convert-tfrecord-week-misspelt", ["convert", "{in}/week-misspelt.tfrecord",
                                        "{out}.parquet"],
     "week-misspelt.tfrecord, row 1, field 'epoch_3_topic': unknown week feature"),
    ("sample-persistent-model-without-its-kind",
     ["sample", "--model", "{in}/model-no-kind", "--users", "5", "--seed", "1", "--out",
      "{out}.parquet"],
     "model-no-kind/model.json, field 'model': no 'model' key, so read as the paper's types"),
]

test_bad_input_is_refused = refusal_test(CASES)


def test_urls_with_a_port_path_or_space_after_the_host_are_still_read(inputs: Path,
                                                                     work: Path) -> None:
    """Guard: a port, an IPv6 host, a path with a space and a trailing space still give the
    host."""
    import pyarrow as pa

    from topicslab.io.visits import hosts_of

    got = hosts_of(pa.array(["https://a.com:8080/x", "http://[::1]:80/", "https://a.com/b c",
                             "a.com ", "a.com?q", "https://a b.com"])).to_pylist()
    assert got == ["a.com", "[::1]", "a.com", "a.com", "a.com", ""]
    res = invoke(["ingest", "-q", "-v", str(inputs / "visits.csv"), "-d",
                  str(inputs / "domains.csv"), "--out", str(work / "p.parquet")])
    assert res.exit_code == 0, res.output


def test_integers_with_a_plus_sign_are_read(inputs: Path, work: Path) -> None:
    """``+104`` as a user id and ``+325`` as a topic id are read as 104 and 325 (they were
    refused as out of range, or ended in ``ArrowInvalid``)."""
    from topicslab import io as tio
    from topicslab.io.visits import read_domain_table

    table = read_domain_table(inputs / "domains-plus.csv")
    assert table.taxonomy.ids[table.topics[table.indptr[0]]] == 325
    res = invoke(["ingest", "-q", "-v", str(inputs / "visits-plus-user.csv"), "-d",
                  str(inputs / "domains-plus.csv"), "--out", str(work / "p.parquet")])
    assert res.exit_code == 0, res.output
    assert 104 in tio.read_sets(work / "p.parquet").user_ids
    (work / "s.csv").write_text("user_id,epoch_0_topics\n+7,+3;4\n", encoding="utf-8")
    got = tio.read_sets(work / "s.csv")
    ids = got.topic_ids()[0, 0]
    assert got.user_ids.tolist() == [7] and set(ids[ids >= 0].tolist()) == {3, 4}


def test_traces_without_metadata_of_fewer_weeks_are_still_read(inputs: Path) -> None:
    """Guard: traces with no topicslab metadata are read from their week columns."""
    from topicslab import io as tio

    assert tio.read_traces(inputs / "traces-week-dropped-no-meta.parquet").n_weeks == 3
    assert tio.read_traces(inputs / "traces.parquet").n_weeks == 4


@pytest.mark.parametrize("name", ["p.parquet", "p.csv", "p.tfrecord"])
def test_sets_of_no_weeks_are_not_written(work: Path, name: str) -> None:
    from topicslab import io as tio
    from topicslab.datamodel import TopicSets
    from topicslab.errors import InputError

    sets = TopicSets(np.full((2, 0, 5), -1, np.int16), "v2", np.arange(2, dtype=np.int64))
    with pytest.raises(InputError, match="field 'sets': the sets hold no week"):
        tio.write_sets(work / name, sets)
    assert not list(work.iterdir())


def _sets(users: int = 4) -> object:
    from topicslab.datamodel import TopicSets

    return TopicSets(np.tile(np.arange(5, dtype=np.int16), (users, 2, 1)), "v2",
                     np.arange(users, dtype=np.int64))


@pytest.mark.parametrize(("call", "named"), [
    # written, then "user id 0 appears more than once" on every read
    (lambda io, w, s: io.write_sets(w / "a.parquet", dataclasses.replace(
        s, user_ids=np.zeros(4, np.int64))), "field 'user_ids': user id 0 appears more than once"),
    # 1000 shard files, 996 of them empty: "empty file" on every read
    (lambda io, w, s: io.write_sets(w / "a.tfrecord", s, shards=1000),
     "field 'shards': shards must be in 1..4, got 1000"),
    (lambda io, w, s: list(io.iter_sets_parquet(w.parent / "in.parquet", batch_size=0)),
     "field 'batch_size': batch_size must be in 1..9223372036854775807, got 0"),
    (lambda io, w, s: list(io.iter_sets(w.parent / "in.parquet", batch_size=10**30)),
     "field 'batch_size'"),
], ids=["user-ids-repeated", "shards-past-the-users", "parquet-batch-of-0",
        "batch-past-64-bits"])
def test_api_writers_and_readers_refuse(work: Path, call: object, named: str) -> None:
    from topicslab import io as tio
    from topicslab.errors import InputError

    s = _sets()
    tio.write_sets(work.parent / "in.parquet", s)
    with pytest.raises(InputError, match=named.replace("(", r"\(").replace(")", r"\)")):
        call(tio, work, s)  # type: ignore[operator]
    assert not list(work.iterdir())


@pytest.mark.parametrize(("mapping", "named"), [
    ({"a.com": [1.7]}, "topics must be an integer, got 1.7"),  # read as topic 1
    ({"a.com": "1;2"}, "field 'a.com': expected a list of topic ids"),  # ValueError
    ({"a.com": None}, "field 'a.com': expected a list of topic ids"),  # TypeError
], ids=["float-id", "text", "none"])
def test_domain_table_from_mapping_refuses(mapping: dict, named: str) -> None:
    from topicslab.errors import InputError
    from topicslab.io.visits import DomainTable

    with pytest.raises(InputError, match=named):
        DomainTable.from_mapping(mapping)


@pytest.mark.parametrize("batch_rows", [0, -1])
def test_iter_visits_refuses_a_batch_of_no_rows(inputs: Path, batch_rows: int) -> None:
    from topicslab.errors import InputError
    from topicslab.io.visits import iter_visits

    with pytest.raises(InputError, match="field 'batch_rows'"):
        list(iter_visits(inputs / "visits.csv", batch_rows=batch_rows))


def test_ingest_visits_refuses_an_empty_domain_table(inputs: Path) -> None:
    from topicslab.api.ingest import ingest_visits
    from topicslab.errors import InputError
    from topicslab.io.visits import DomainTable

    with pytest.raises(InputError, match="the domain table lists no domains"):
        ingest_visits(inputs / "visits.csv", DomainTable.from_mapping({}))


@pytest.mark.parametrize("masked_as", [TypeError, "InputError"])
def test_a_ctrl_c_a_library_turned_into_another_error_is_an_interruption(
        inputs: Path, work: Path, monkeypatch: pytest.MonkeyPatch,
        masked_as: type[Exception] | str) -> None:
    import signal
    import sys

    from topicslab import _atomic
    from topicslab.api import ingest as api_ingest
    from topicslab.errors import InputError

    def read_domain_table(*args: object, **kwargs: object) -> object:
        try:  # as pyarrow's Cython argument packing: the KeyboardInterrupt becomes a TypeError
            signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            if masked_as == "InputError":  # and a reader's wrap_errors makes that a bad file
                raise InputError("not a valid CSV file (Got unexpected argument type)",
                                 file=str(inputs / "domains.csv")) from None
            raise TypeError("Got unexpected argument type <class 'str'> for compute "
                            "function") from None
        raise AssertionError("the signal was not delivered")

    monkeypatch.setattr(api_ingest, "read_domain_table", read_domain_table)
    monkeypatch.setattr(sys, "unraisablehook", sys.unraisablehook)
    previous = _atomic.latch_interrupts()
    try:
        res = invoke(["ingest", "-q", "-v", str(inputs / "visits.csv"), "-d",
                      str(inputs / "domains.csv"), "--out", str(work / "p.parquet")])
    finally:
        signal.signal(signal.SIGINT, previous)
        _atomic.clear_interrupt()
    assert res.exit_code == 130, res.output
    assert "interrupted: ingest stopped" in res.output and "error" not in res.output
    assert list(work.iterdir()) == []


def test_kill_and_hang_up_are_latched_as_ctrl_c_is(monkeypatch: pytest.MonkeyPatch) -> None:
    import signal
    import sys

    from topicslab import _atomic

    monkeypatch.setattr(sys, "unraisablehook", sys.unraisablehook)

    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        signal.signal(signal.SIGTERM, signal.default_int_handler)  # as topicslab._main does
        signal.signal(signal.SIGHUP, signal.SIG_IGN)  # nohup: stays ignored
        _atomic.latch_interrupts()
        assert signal.getsignal(signal.SIGTERM) is _atomic._latch
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        for number, handler in before.items():
            signal.signal(number, handler)
