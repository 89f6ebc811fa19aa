"""The shipped taxonomy copies are the converter's output, and the type behaves."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from topicslab.errors import UnknownTopicError
from topicslab.taxonomy import HIGH, STANDARD, load
from topicslab.taxonomy.convert import build
from topicslab.taxonomy.markdown import parse_buckets, parse_topics


def _explainer_markdown(directory: Path) -> None:
    """Write the Topics API explainer's markdown tables (the converter's upstream format) for
    the shipped taxonomies, with a stray line and a header row the parser must skip."""
    for version in ("v1", "v2"):
        tax = load(version)
        rows = [f"| {i} | {lab} |" for i, lab in zip(tax.ids.tolist(), tax.labels, strict=True)]
        (directory / f"taxonomy_{version}.md").write_text(
            "# Taxonomy\n\n| ID | Topic |\n|---|---|\n" + "\n".join(rows) + "\n",
            encoding="utf-8")
    v2 = load("v2")
    tops = [f"| {lab} | {v2.bucket_name(i)} |" for i, lab in enumerate(v2.labels)
            if v2.parent[i] < 0]
    (directory / "topics-utility-buckets-v1.md").write_text(
        "Utility buckets\n\n| Topic | Bucket |\n|---|---|\n" + "\n".join(tops) + "\n",
        encoding="utf-8")


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_converter_rebuilds_the_shipped_copies(tmp_path, version):
    # the shipped CSVs are the converter's output for the explainer's tables: parse and
    # rebuild them from their markdown rendering and they must come back byte for byte
    _explainer_markdown(tmp_path)
    tax = load(version)
    assert parse_topics(tmp_path / f"taxonomy_{version}.md") == list(
        zip(tax.ids.tolist(), tax.labels, strict=True))
    shipped = resources.files("topicslab.taxonomy").joinpath(f"data/taxonomy_{version}.csv")
    assert shipped.read_text(encoding="utf-8") == build(tmp_path)[version]


def test_parsers_refuse_files_without_tables(tmp_path):
    empty = tmp_path / "empty.md"
    empty.write_text("# nothing here\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no taxonomy rows"):
        parse_topics(empty)
    with pytest.raises(ValueError, match="no bucket rows"):
        parse_buckets(empty)


def test_sizes_and_id_ranges():
    v1, v2 = load("v1"), load("v2")
    assert v1.size == 349 and v1.ids[0] == 1 and v1.max_id == 349
    assert v2.size == 469 and v2.ids[0] == 1 and v2.max_id == 629
    assert (np.diff(v2.ids) > 0).all()


def test_buckets_inherited_from_top_level():
    tax = load("v2")
    table = {lab: tax.bucket_name(i) for i, lab in enumerate(tax.labels) if tax.parent[i] < 0}
    assert set(table.values()) == {"Standard", "High"}
    for i, lab in enumerate(tax.labels):
        top = "/" + lab.split("/")[1]
        assert tax.bucket_name(i) == table[top], lab
    soccer = int(tax.index(tax.find("/Sports/Soccer")))
    assert tax.bucket[soccer] == HIGH
    assert tax.bucket[int(tax.index(tax.find("/News/Local News")))] == STANDARD
    assert (load("v1").bucket == STANDARD).all()  # v1 predates utility buckets


def test_hierarchy_from_label_paths():
    tax = load("v2")
    soccer = int(tax.index(tax.find("/Sports/Soccer")))
    sports = int(tax.index(tax.find("/Sports")))
    assert tax.parent[soccer] == sports
    assert tax.parent[sports] == -1
    assert tax.top_level[soccer] == sports
    assert soccer in tax.children(sports)
    for i, lab in enumerate(tax.labels):
        p = tax.parent[i]
        if p >= 0:
            assert lab.startswith(tax.labels[p] + "/")
            assert tax.depth[i] == tax.depth[p] + 1
        else:
            assert tax.depth[i] == 1
    deep = int(np.argmax(tax.depth))
    assert tax.ancestors(deep)[-1] == tax.top_level[deep]


def test_index_roundtrip_and_unknown_ids():
    tax = load("v2")
    dense = tax.index(tax.ids)
    assert (dense == np.arange(tax.size)).all()
    assert (tax.id_of(dense) == tax.ids).all()
    assert tax.id_of([-1, 0]).tolist() == [-1, 1]
    with pytest.raises(UnknownTopicError, match="topic id 2 "):
        tax.index([1, 2])  # 2 is a gap in v2
    with pytest.raises(UnknownTopicError):
        tax.index([630])
    with pytest.raises(UnknownTopicError):
        tax.index([-5])
    assert tax.is_known([1, 2, 629, 630]).tolist() == [True, False, True, False]
    assert tax.label(243) == "/News"
    assert tax.find("/News") == 243
    with pytest.raises(UnknownTopicError):
        tax.find("/Nope")
    with pytest.raises(UnknownTopicError):
        load("v3")


def test_convert_command_rebuilds_from_files_in_the_repository(tmp_path, capsys):
    # `python -m topicslab.taxonomy.convert DIR` (README, Development) on the markdown rendering
    # of the shipped tables: it rewrites the package's CSVs with identical bytes
    from topicslab.taxonomy.convert import main

    _explainer_markdown(tmp_path)
    data = resources.files("topicslab.taxonomy").joinpath("data")
    before = {v: data.joinpath(f"taxonomy_{v}.csv").read_bytes() for v in ("v1", "v2")}
    main([str(tmp_path)])
    assert capsys.readouterr().out.count("wrote ") == 2
    assert {v: data.joinpath(f"taxonomy_{v}.csv").read_bytes() for v in ("v1", "v2")} == before
