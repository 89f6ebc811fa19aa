"""Bad input, the thirty-eighth independent round.

- A visits log (``ingest --visits``, CSV) whose page column opens a quote and never closes
  it: the CSV reader read the lines after it into that one value, and the host before the
  line break was taken -- every later visit was lost without a word (exit 0, "visits 1" of
  a log of two).
- A Parquet visits log whose page column is nested (a list of strings, a struct):
  "not a valid Parquet file (b'url')" -- a valid file, and a message naming no column or
  type (the page column is read as a dictionary, which Arrow cannot do for a nested column).
- An output directory holding a directory under the name of a file the command writes
  (``fit --out m`` with ``m/model.json/``, ``disclosure --figures f`` with ``f/rates.png/``,
  ``sample --out s.tfrecord --shards 2`` with ``s-00000-of-00002.tfrecord/``): refused only
  at the closing rename, after the work -- fit left its checkpoint behind, disclosure printed
  its table and sample its progress bar above the error line.
- A JSON file nested past Python's recursion limit (``[[[[...``, a few kB) given as any JSON
  input -- a release's output_parameters.json, a model's or learned attack's model.json, a
  file of DP statistics or its ledger, ``population --params``, ``ingest --domains``, the
  topicslab metadata of a Parquet file, an output directory's model.json: "error:
  RecursionError: maximum recursion depth exceeded ...", exit code 1, no file named.
- ``disclosure --rho 0.2 --rho ''`` (or ``--rho ,`` repeated): the empty repeat was dropped
  and the experiment ran on 0.2 alone, where ``--rho 0.2,`` is refused (a value left out).
- The Python API's writers of one format (``io.write_sets_csv``, ``_parquet``, ``_tfrecord``,
  ``_long``, ``_profiles``, ``io.write_traces_parquet``): only ``write_sets`` and
  ``write_traces`` checked what they were given. Given an array (or None) they failed with an
  AttributeError inside; given sets no reader takes back (a user id twice, no week, k = 0, a
  topic twice in a week in a text table) they wrote the file -- refused when read, or read
  back changed (a long table of no week read back with no user, a CSV or TFRecord of k = 0
  as k = 5).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from refusal import (
    check_refused,
    fit_small_model,
    invoke,
    population_and_stats,
    random_profiles,
    refusal_test,
    tree,
)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 users (v2, 4 weeks) as ``pop.parquet``, their DP statistics ``stats``, a fitted
    model ``model``, a domain table ``domains.csv`` and visits logs whose page column opens a
    quote and does not close it (``unclosed-first.csv``: in the first of two rows,
    ``unclosed-last.csv``: in the last)."""
    d = tmp_path_factory.mktemp("round38")
    population_and_stats(d)
    fit_small_model(invoke, d)
    (d / "domains.csv").write_text("domain,topics\nexample.com,1\nfoo.org,4;9\n",
                                   encoding="utf-8")
    head = "user_id,timestamp,url\n"
    (d / "unclosed-first.csv").write_text(
        head + '1,2024-01-01T10:00:00,"https://example.com/\n'
        "2,2024-01-09T10:00:00,https://foo.org/x\n", encoding="utf-8")
    (d / "unclosed-last.csv").write_text(
        head + "1,2024-01-01T10:00:00,https://example.com/\n"
        '2,2024-01-09T10:00:00,"https://foo.org/x\n', encoding="utf-8")
    return d


INGEST = ["ingest", "-q", "--domains", "{in}/domains.csv", "--out", "{out}.parquet",
          "--visits"]
LINE_BREAK = "field 'url': holds a line break, which no URL or host name has"
DIR_AT_FILE = "is a directory, where a file of this output is written"
CASES = [
    # an unclosed quote in the page column (every later row was read into it, and lost)
    ("ingest-unclosed-quote-first-row", [*INGEST, "{in}/unclosed-first.csv"],
     f"unclosed-first.csv, row 1, {LINE_BREAK}"),
    ("ingest-unclosed-quote-last-row", [*INGEST, "{in}/unclosed-last.csv"],
     f"unclosed-last.csv, row 2, {LINE_BREAK}"),
    # an empty repeat of --rho (was dropped: the experiment ran on the other values)
    ("disclosure-rho-empty-repeat", ["disclosure", "-q", "--personas", "4", "--mc-samples",
                                     "10", "--epochs", "2", "--rho", "0.2", "--rho", ""],
     "field '--rho': cannot read rho: '' gives no value"),
    ("disclosure-rho-comma-repeat", ["disclosure", "-q", "--personas", "4", "--mc-samples",
                                     "10", "--epochs", "2", "--rho", ",", "--rho", "0.2"],
     "field '--rho': cannot read rho: ',' gives no value"),
]


test_bad_input_is_refused = refusal_test(CASES)


# ---- an output file's name taken by a directory: refused before the work ------------------


DEEP = "[" * 3000 + "]" * 3000
NESTED = "invalid JSON: nested more than 500 levels deep: line 1 column 501"
FIT = ["fit", "--stats", "{w}/stats", "--out", "{w}/out", "--types", "2", "--steps", "1",
       "--no-progress"]


@pytest.mark.parametrize(("name", "args", "deep", "copy", "named"), [
    ("release", ["sample", "--model", "{w}/r.json", "--users", "5", "--seed", "0", "--out",
                 "{w}/s.parquet"], "r.json", None, f"r.json, field '--model': {NESTED}"),
    ("model-json", ["sample", "--model", "{w}/model", "--users", "5", "--seed", "0", "--out",
                    "{w}/s.parquet"], "model/model.json", "model",
     f"model.json, field '--model': {NESTED}"),
    ("q-single", FIT, "stats/q_single.json", "stats", f"q_single.json, field '--stats': {NESTED}"),
    ("ledger", ["stats", "--explain", "{w}/stats"], "stats/privacy_ledger.json", "stats",
     f"privacy_ledger.json, field '--explain': {NESTED}"),
    ("params", ["population", "--users", "20", "--out", "{w}/p.parquet", "--params",
                "{w}/p.json"], "p.json", None,
     "p.json, field '--params': not valid JSON (nested more than 500 levels deep"),
    ("domains", ["ingest", "-q", "--visits", "{w}/v.csv", "--domains", "{w}/d.json", "--out",
                 "{w}/o.parquet"], "d.json", None,
     "d.json, field '--domains': not valid JSON (nested more than 500 levels deep"),
    ("output-model-json", ["fit", "--stats", "{in}/stats", "--out", "{w}/m", "--types", "2",
                           "--steps", "1", "--no-progress"], "m/model.json", None, None),
])
def test_json_nested_past_the_recursion_limit_is_one_line(
        inputs: Path, work: Path, name: str, args: list[str], deep: str, copy: str | None,
        named: str | None) -> None:
    """Was "error: RecursionError: maximum recursion depth exceeded while decoding a JSON
    array", exit code 1, no file named (json raises RecursionError, not a ValueError)."""
    if copy is not None:
        shutil.copytree(inputs / copy, work / copy)
    (work / deep).parent.mkdir(parents=True, exist_ok=True)
    (work / deep).write_text(DEEP, encoding="utf-8")
    (work / "v.csv").write_text("user_id,timestamp,url\n1,2024-01-01T10:00:00,"
                                "https://example.com/\n", encoding="utf-8")
    before = tree(work)
    res = invoke([a.format(**{"in": inputs, "w": work}) for a in args])
    if named is None:  # an output's model.json that cannot be read: replaced by the fit
        assert res.exit_code == 0, res.output
        return
    check_refused(res.output, res.exit_code, named)
    assert tree(work) == before


def test_parquet_metadata_nested_past_the_recursion_limit_is_one_line(inputs: Path,
                                                                      work: Path) -> None:
    import pyarrow.parquet as pq

    table = pq.read_table(inputs / "pop.parquet")
    pq.write_table(table.replace_schema_metadata({b"topicslab": DEEP.encode()}),
                   work / "p.parquet")
    before = tree(work)
    res = invoke(["convert", str(work / "p.parquet"), str(work / "p.csv")])
    check_refused(res.output, res.exit_code,
                  "p.parquet, field 'SOURCE': corrupt topicslab metadata (not JSON)")
    assert tree(work) == before


@pytest.mark.parametrize(("name", "args", "clash", "option"), [
    ("fit", ["fit", "--stats", "{in}/stats", "--out", "m", "--types", "2", "--modes", "1",
             "--steps", "1", "--no-progress"], "m/model.json", "--out"),
    ("fit-history", ["fit", "--stats", "{in}/stats", "--out", "m", "--types", "2", "--modes",
                     "1", "--steps", "1", "--no-progress"], "m/fit_history.json", "--out"),
    ("disclosure", ["disclosure", "-q", "--personas", "4", "--mc-samples", "10", "--epochs",
                    "2", "--rho", "0.2", "--figures", "f"], "f/rates.png", "--figures"),
    ("sample-shard", ["sample", "--model", "{in}/model", "--users", "10", "--seed", "0",
                      "--out", "s.tfrecord", "--shards", "2"], "s-00000-of-00002.tfrecord",
     None),
    ("attack-train", ["attack-train", "--sets", "{in}/pop.parquet", "--out", "a", "--weeks",
                      "2", "--epochs", "0", "--validation", "50", "--no-progress"],
     "a/model.safetensors", "--out"),
])
def test_an_output_file_name_taken_by_a_directory_is_refused_first(
        inputs: Path, work: Path, name: str, args: list[str], clash: str,
        option: str | None) -> None:
    """Was refused at the closing rename, after the work: fit left m/checkpoints behind,
    disclosure printed its table and sample its progress bar above the error line."""
    (work / clash).mkdir(parents=True)
    before = tree(work)
    res = invoke([a.format(**{"in": inputs}) for a in args])
    where = clash + (f", field '{option}'" if option else "")
    check_refused(res.output, res.exit_code, f"{where}: {DIR_AT_FILE}")
    assert tree(work) == before


# ---- the Python API: each format's writer checks what it writes -------------------------


WRITERS = [("write_sets_csv", "a.csv"), ("write_sets_parquet", "a.parquet"),
           ("write_sets_tfrecord", "a.tfrecord"), ("write_sets_long", "a.csv"),
           ("write_sets_profiles", "a.csv")]


@pytest.mark.parametrize(("writer", "name"), WRITERS)
def test_a_format_writer_given_no_topic_sets_is_a_type_error(tmp_path: Path, writer: str,
                                                             name: str) -> None:
    """Was an AttributeError inside the writer ('ndarray' object has no attribute ...)."""
    from topicslab import io as tio

    with pytest.raises(TypeError, match=f"{writer} takes TopicSets, got ndarray"):
        getattr(tio, writer)(tmp_path / name, np.zeros((2, 1, 5), dtype=np.int16))
    assert not list(tmp_path.iterdir())


def _unreadable_sets() -> dict[str, tuple[object, str]]:
    from topicslab.datamodel import TopicSets

    sets = random_profiles(3, 2)
    twice = sets.copy()
    twice[0, 0, 1] = twice[0, 0, 0]
    return {
        "user-twice": (TopicSets(sets, "v2", np.array([1, 1, 2])),
                       "field 'user_ids': user id 1 appears more than once"),
        "no-week": (TopicSets(np.zeros((3, 0, 5), np.int16), "v2", np.arange(3)),
                    "field 'sets': the sets hold no week"),
        "no-slot": (TopicSets(np.zeros((3, 2, 0), np.int16), "v2", np.arange(3)),
                    "field 'sets': the sets hold no slot a week"),
        "topic-twice": (TopicSets(twice, "v2", np.arange(3)),
                        "field 'sets': user 0 (index), epoch_0_topics: topics must be "
                        "distinct"),
    }


@pytest.mark.parametrize(("writer", "name", "case"), [
    (writer, name, case) for writer, name in WRITERS
    for case in ("user-twice", "no-week", "no-slot", "topic-twice")
    # (the Parquet writer's SetsWriter checked the topics; the TFRecord writer takes raw
    # slots, a topic twice in a week, as sample writes them)
    if case != "topic-twice" or writer not in ("write_sets_parquet", "write_sets_tfrecord")])
def test_a_format_writer_refuses_sets_no_reader_takes(tmp_path: Path, writer: str, name: str,
                                                      case: str) -> None:
    """Were written (only write_sets checked): refused when read back, or read back changed."""
    from topicslab import io as tio
    from topicslab.errors import InputError

    sets, named = _unreadable_sets()[case]
    with pytest.raises(InputError) as exc:
        getattr(tio, writer)(tmp_path / name, sets)
    assert named in str(exc.value)
    assert name in str(exc.value)
    assert not list(tmp_path.iterdir())


def test_the_traces_writer_checks_what_it_writes(tmp_path: Path) -> None:
    """write_traces_parquet: an AttributeError given None; traces of a user twice written
    (read_traces refused them)."""
    from topicslab import api
    from topicslab import io as tio
    from topicslab.datamodel import SiteTraces
    from topicslab.errors import InputError

    with pytest.raises(TypeError, match="write_traces_parquet takes SiteTraces, got NoneType"):
        tio.write_traces_parquet(tmp_path / "t.parquet", None)  # type: ignore[arg-type]
    traces = api.observe(random_profiles(3, 2), sites=2, seed=0)
    twice = SiteTraces(traces, "v2", np.array([1, 1, 2]), np.arange(2))
    with pytest.raises(InputError, match="field 'user_ids': user id 1 appears more than once"):
        tio.write_traces_parquet(tmp_path / "t.parquet", twice)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("which", ["population", "synthetic"])
def test_distinct_topics_comparison_given_no_topic_sets_is_a_type_error(which: str) -> None:
    """Was an AttributeError ('NoneType' object has no attribute 'taxonomy')."""
    from topicslab import validate
    from topicslab.datamodel import TopicSets

    sets = TopicSets(random_profiles(3, 2), "v2", np.arange(3))
    args = (None, sets) if which == "population" else (sets, None)
    with pytest.raises(TypeError, match=f"distinct_topics_comparison takes TopicSets as "
                                        f"{which}_sets, got NoneType"):
        validate.distinct_topics_comparison(*args)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["list", "struct"])
def test_a_nested_page_column_of_a_parquet_log_names_its_type(work: Path, kind: str) -> None:
    """Was "v.parquet, field '--visits': not a valid Parquet file (b'url')"."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pages = ([["https://example.com/"]] if kind == "list" else [{"host": "example.com"}]) * 2
    pq.write_table(pa.table({"user_id": [1, 2], "week": [0, 0], "url": pa.array(pages)}),
                   work / "v.parquet")
    (work / "d.csv").write_text("domain,topics\nexample.com,1\n", encoding="utf-8")
    before = tree(work)
    res = invoke(["ingest", "-q", "--visits", "v.parquet", "--domains", "d.csv", "--out",
                  "o.parquet"])
    check_refused(res.output, res.exit_code,
                  f"v.parquet, row 1, field 'url': expected text (URLs or hosts), got column "
                  f"type {kind}<")
    assert tree(work) == before
