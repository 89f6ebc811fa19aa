"""Bad input, the thirty-eighth independent round.

- A visits log (``ingest --visits``, CSV) whose page column opens a quote and never closes
  it: the CSV reader read the lines after it into that one value, and the host before the
  line break was taken -- every later visit was lost without a word (exit 0, "visits 1" of
  a log of two).
- An output directory holding a directory under the name of a file the command writes
  (``fit --out m`` with ``m/model.json/``, ``disclosure --figures f`` with ``f/rates.png/``,
  ``sample --out s.tfrecord --shards 2`` with ``s-00000-of-00002.tfrecord/``): refused only
  at the closing rename, after the work -- fit left its checkpoint behind, disclosure printed
  its table and sample its progress bar above the error line.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from refusal import (
    fit_small_model,
    invoke,
    population_and_stats,
    refusal_test,
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
]


test_bad_input_is_refused = refusal_test(CASES)


# ---- an output file's name taken by a directory: refused before the work ------------------


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
    from refusal import check_refused, tree

    (work / clash).mkdir(parents=True)
    before = tree(work)
    res = invoke([a.format(**{"in": inputs}) for a in args])
    where = clash + (f", field '{option}'" if option else "")
    check_refused(res.output, res.exit_code, f"{where}: {DIR_AT_FILE}")
    assert tree(work) == before
