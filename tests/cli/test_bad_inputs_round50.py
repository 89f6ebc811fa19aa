"""Bad input, the fiftieth independent round: custom taxonomies given to the library, browsing
histories of odd times and hosts given to ``ingest``, and ``convert`` to formats that record
less than the sets hold.

- ``Taxonomy.from_rows`` took what it could not use: no rows was NumPy's "IndexError: index -1
  is out of bounds", an id of 2**31 - 1 asked for an 8 GiB lookup table (MemoryError) and one
  of 2**40 was an OverflowError, a label of no path a bare ``ValueError``, an int label an
  ``AttributeError``, an id given as text beside ints a ``TypeError`` of ``sorted``, a bucket
  "high" a ``KeyError``; and it took an id of 1.5 or True as topic 1, the labels ``"/"`` and
  ``"/a/"`` (parts of no name), a version that is no text (3) or holds a line break (which
  split every one-line error naming the taxonomy), a row of three fields, and the names
  ``"v1"``/``"v2"`` of the shipped taxonomies -- whose files then read back in the shipped
  taxonomy. A taxonomy of 40,000 topics was built, and ``api.top_k`` of it returned indices
  wrapped around int16 (topic 39999 as -25537), ``generate`` then refusing its own sets.
  Each is now a ``ParameterError`` naming ``version``, ``rows`` or ``buckets`` (at most
  32,767 topics, ids at most 2**24 - 1).
- A Parquet file of custom taxonomy "mine" read with ``taxonomy=`` another custom one of the
  same ids ("other"), or v2: read without a word, the topics taken for the other's labels.
  Only two shipped names were compared; any two names that differ are now refused.
- ``population.generate(..., taxonomy=custom)`` (and ``load_reference(custom)``): "unknown
  taxonomy version 't5'; choose one of ('v1', 'v2')", a custom taxonomy's name looked up as a
  shipped one (the v2 parameters are carried over by label, as for v1, documented).
- ``api.answers(sets)`` / ``api.observe(sets)`` of a ``TopicSets`` (as every other engine
  takes one): "sets must be an integer array, got dtype object", and from ``observe`` a bare
  ``TypeError``; both are now a ``TypeError`` (as round 6 chose for a wrong type here) that
  says to pass ``.sets`` with the mechanism of its k and taxonomy.
- ``dp.compute_statistics`` of a taxonomy of one topic: "k must be in 2..1, got 5", a range
  no k is in; it now names the taxonomy (pairs of topics need two).
- ``ingest`` of a visit at ``0000-01-01T00:00:00Z`` (or ``0001-01-01T00:30:00+01:00``,
  ``9999-12-31T23:30:00-01:00``: outside the years 1..9999 in UTC): "error: OverflowError:
  date value out of range", exit 1, after all the work; now exit 2 naming the row and field.
  The same of an ``--epoch-start`` outside those years in UTC (``0001-01-01T00:00+01:00``
  before a visit of 0001-01-01T00:30Z): now refused naming ``--epoch-start``.
- ``ingest`` of a history whose hosts are punycode (Chrome's history stores IDNs so:
  ``xn--bcher-kva.de``) against a table naming ``bücher.de``: the visits were unclassified
  (two spellings of one domain); both now reduce to one domain.
- ``convert`` of Parquet sets (k = 5, or taxonomy v1 with ids that are all v2's) to CSV, TSV,
  long, profiles or TFRecord, which record neither k nor the taxonomy: said "wrote ... (k = 5,
  taxonomy v1)", and the file read back as k = its widest week and as v2 without a word; it
  now notes what the format does not record and how to read it back.
- A topic label holding ``$`` (a custom taxonomy's "/Deals $x^$ off") in a report figure
  (``report.figures.top_topics``, ``top_pairs``, which ``build_report`` draws): parsed as
  mathtext, "ValueError: ... ParseSyntaxException", so no report; labels are now drawn as
  text.
- ``qif --sets P --weeks 0..199`` (a profile of 200 weeks): "error: OverflowError: (34,
  'Numerical result out of range')", exit 1 -- (m / s)^weeks past a float; and ``--weeks
  0..39 --s 234``: C(469, 234)^40, an exact integer of ~5,600 digits, "ValueError: Exceeds
  the limit (4300 digits) for integer string conversion". A profile now has at most
  ``MAX_EPOCHS`` (40) weeks, the limit of the multi-epoch capacities, and a count past 4,000
  digits is refused, both naming ``--weeks``.

Each case holds to ``test_bad_inputs.py``'s contract (exit 2, one ``error:`` line naming the
file, row or field, nothing written; from Python an ``InputError`` naming the field).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from refusal import check_refused, invoke

from topicslab.errors import InputError


def _toy(name: str, m: int, base: int = 500, prefix: str = "T"):
    from topicslab.taxonomy import Taxonomy

    return Taxonomy.from_rows(name, [(base + i, f"/{prefix}{i}") for i in range(m)])


@pytest.mark.parametrize(("kwargs", "named"), [
    ({"version": "e", "rows": []}, "rows"),
    ({"version": "e", "rows": [(1.5, "/a")]}, "rows[0] id"),
    ({"version": "e", "rows": [(True, "/a")]}, "rows[0] id"),
    ({"version": "e", "rows": [(2**31 - 1, "/a")]}, "rows[0] id"),
    ({"version": "e", "rows": [(2**40, "/a")]}, "rows[0] id"),
    ({"version": "e", "rows": [(1, "/a"), ("2", "/b")]}, "rows[1] id"),
    ({"version": "e", "rows": [(1, 5)]}, "rows"),
    ({"version": "e", "rows": [(1, "a")]}, "rows"),
    ({"version": "e", "rows": [(1, "/")]}, "rows"),
    ({"version": "e", "rows": [(1, "/a"), (2, "/a/")]}, "rows"),
    ({"version": "e", "rows": [(1, "/a\nb")]}, "rows"),
    ({"version": "e", "rows": [(1, "/a", "x")]}, "rows"),
    ({"version": "e", "rows": [(1, "/a/b")]}, "rows"),
    ({"version": "e", "rows": [(1, "/a")], "buckets": {"/a": "high"}}, "buckets"),
    ({"version": "e", "rows": [(1, "/a")], "buckets": {"/b": "High"}}, "buckets"),
    ({"version": "e", "rows": [(i + 1, f"/B{i}") for i in range(40_000)]}, "rows"),
    ({"version": 3, "rows": [(1, "/a")]}, "version"),
    ({"version": "e\nx", "rows": [(1, "/a")]}, "version"),
    ({"version": "v2", "rows": [(1, "/a")]}, "version"),
])
def test_from_rows_refuses_what_it_cannot_use(kwargs: dict, named: str) -> None:
    from topicslab.taxonomy import Taxonomy

    with pytest.raises(InputError) as info:
        Taxonomy.from_rows(**kwargs)
    assert info.value.field == named, str(info.value)
    assert "\n" not in str(info.value)


def test_from_rows_still_builds_what_it_can() -> None:
    tax = _toy("mine", 2)
    assert tax.size == 2 and tax.max_id == 501
    odd = _toy("é", 3, base=7, prefix="Ünï ")
    assert odd.labels == ("/Ünï 0", "/Ünï 1", "/Ünï 2")
    from topicslab import api

    widest = _toy("widest", 2**15 - 1, base=1)
    assert api.top_k(np.arange(widest.size, dtype=float)[None, :], k=5,
                     taxonomy=widest).min() == widest.size - 5


def test_a_file_of_one_custom_taxonomy_is_not_read_in_another(tmp_path: Path) -> None:
    from topicslab import io as tio
    from topicslab.datamodel import TopicSets

    mine, other = _toy("mine", 5), _toy("other", 5, prefix="U")
    raw = np.array([[[0, 1, 2, -1, -1]], [[3, -1, -1, -1, -1]]], dtype=np.int16)
    path = tmp_path / "s.parquet"
    tio.write_sets(path, TopicSets(raw, mine, np.arange(2, dtype=np.int64)))
    assert tio.read_sets(path, taxonomy=mine).taxonomy is mine
    for given in (other, "v2"):
        with pytest.raises(InputError) as info:
            tio.read_sets(path, taxonomy=given)
        assert info.value.field == "taxonomy" and "mine" in str(info.value)


def test_a_population_of_a_custom_taxonomy() -> None:
    from topicslab import population

    tax = _toy("t2", 2)
    sets = population.generate(50, 2, seed=1, k=2, taxonomy=tax)
    assert sets.taxonomy is tax and sets.k == 2
    assert set(np.unique(sets.sets).tolist()) <= {0, 1}
    assert population.load_reference(tax).taxonomy == "t2"


def test_a_release_of_a_one_topic_taxonomy_names_the_taxonomy() -> None:
    from topicslab import dp
    from topicslab.datamodel import TopicSets

    raw = np.zeros((4, 2, 1), dtype=np.int16)
    sets = TopicSets(raw, _toy("t1", 1), np.arange(4, dtype=np.int64))
    with pytest.raises(InputError) as info:
        dp.compute_statistics(sets, epsilon=1.0, delta=1e-6, seed=1)
    assert info.value.field == "taxonomy", str(info.value)
    assert "2..1" not in str(info.value)


@pytest.fixture(scope="module")
def domains(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("domains")
    (d / "dom.csv").write_text("domain,topics\na.com,1\nbücher.de,9\n", encoding="utf-8")
    return d / "dom.csv"


@pytest.mark.parametrize("when", ["0000-01-01T00:00:00Z", "0001-01-01T00:30:00+01:00",
                                  "9999-12-31T23:30:00-01:00"])
def test_ingest_refuses_a_time_outside_the_years_1_to_9999(tmp_path: Path, domains: Path,
                                                           when: str) -> None:
    visits = tmp_path / "v.csv"
    visits.write_text(f"user_id,timestamp,url\n1,2024-01-01T00:00:00Z,a.com\n2,{when},a.com\n",
                      encoding="utf-8")
    res = invoke(["ingest", "--visits", str(visits), "--domains", str(domains),
                  "--out", str(tmp_path / "p.csv"), "-q"])
    line = check_refused(res.output, res.exit_code, "row 2, field 'timestamp'")
    assert "year" in line
    assert not (tmp_path / "p.csv").exists()


def test_ingest_reads_a_punycode_host_as_its_unicode_domain(tmp_path: Path,
                                                            domains: Path) -> None:
    from topicslab import io as tio

    visits = tmp_path / "v.csv"
    visits.write_text("user_id,timestamp,url\n1,2024-01-01T00:00:00Z,https://www.xn--bcher-kva.de/x"
                      "\n2,2024-01-01T00:00:00Z,BÜCHER.DE\n", encoding="utf-8")
    res = invoke(["ingest", "--visits", str(visits), "--domains", str(domains),
                  "--out", str(tmp_path / "p.csv"), "-q"])
    assert res.exit_code == 0, res.output
    assert "missing from" not in res.output
    sets = tio.read_sets(tmp_path / "p.csv", taxonomy="v2")
    for row in sets.taxonomy.id_of(sets.sets[:, 0]):
        assert 9 in row.tolist()


def test_convert_says_what_the_target_format_does_not_record(tmp_path: Path) -> None:
    from topicslab import io as tio
    from topicslab.datamodel import TopicSets
    from topicslab.taxonomy import load

    narrow = np.array([[[0, 1, -1, -1, -1]], [[2, -1, -1, -1, -1]]], dtype=np.int16)
    tio.write_sets(tmp_path / "k.parquet", TopicSets(narrow, load("v2"), np.arange(2)))
    v1 = load("v1")
    ids = np.array([1, 4, 9, 12, 13])  # v1 ids that are all v2 ids too
    dense = v1.index(ids).astype(np.int16).reshape(1, 1, 5)
    tio.write_sets(tmp_path / "v1.parquet", TopicSets(dense, v1, np.arange(1)))
    res = invoke(["convert", str(tmp_path / "k.parquet"), str(tmp_path / "k.csv")])
    assert res.exit_code == 0, res.output
    assert "does not record k = 5" in res.output and "--k 5" in res.output
    assert tio.read_sets(tmp_path / "k.csv").k == 2  # what the note says
    res = invoke(["convert", str(tmp_path / "v1.parquet"), str(tmp_path / "v1.long.csv"),
                  "--to", "long"])
    assert res.exit_code == 0, res.output
    assert "does not record taxonomy v1" in res.output, res.output
    res = invoke(["convert", str(tmp_path / "v1.parquet"), str(tmp_path / "v1b.parquet")])
    assert res.exit_code == 0 and "does not record" not in res.output


def test_figures_draw_a_label_holding_dollar_signs_as_text() -> None:
    from topicslab.report import figures as fg

    for label in ("/Deals $x^$ off", "/a $\\frac{$"):
        assert fg.top_topics([label], {"DP statistics": [0.5]})[:4] == b"\x89PNG"
        assert fg.top_pairs([f"{label} + x"], {"DP statistics": [0.5]}, "T")[:4] == b"\x89PNG"


@pytest.fixture(scope="module")
def long_history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """20 users over 200 weeks of random 5-topic profiles."""
    from topicslab import io as tio
    from topicslab.datamodel import TopicSets
    from topicslab.taxonomy import load

    rng = np.random.default_rng(0)
    raw = np.sort(rng.random((20, 200, 40)).argsort(-1)[..., :5], -1).astype(np.int16)
    path = tmp_path_factory.mktemp("long") / "long.parquet"
    tio.write_sets(path, TopicSets(raw, load("v2"), np.arange(20)))
    return path


@pytest.mark.parametrize("args", [["--weeks", "0..199"], ["--weeks", "0..39", "--s", "234"]])
def test_qif_of_a_long_profile_is_refused_naming_weeks(long_history: Path,
                                                       args: list[str]) -> None:
    res = invoke(["qif", "--sets", str(long_history), *args, "--json"])
    check_refused(res.output, res.exit_code, "--weeks")


def test_qif_of_forty_weeks_is_still_computed(long_history: Path) -> None:
    res = invoke(["qif", "--sets", str(long_history), "--weeks", "0..39", "--json"])
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize(("when", "start"), [
    ("0001-01-01T00:30:00Z", "0001-01-01T00:00+01:00"),
    ("9999-12-31T23:00:00Z", "9999-12-31T23:59:59.999999-01:00"),
])
def test_ingest_refuses_an_epoch_start_outside_the_years_1_to_9999(
        tmp_path: Path, domains: Path, when: str, start: str) -> None:
    visits = tmp_path / "v.csv"
    visits.write_text(f"user_id,timestamp,url\n1,{when},a.com\n", encoding="utf-8")
    res = invoke(["ingest", "--visits", str(visits), "--domains", str(domains),
                  "--out", str(tmp_path / "p.csv"), "-q", "--epoch-start", start])
    check_refused(res.output, res.exit_code, "--epoch-start")
    assert not (tmp_path / "p.csv").exists()


@pytest.mark.parametrize("call", ["answers", "observe"])
def test_answers_and_observe_of_a_topic_sets_object_name_sets(call: str) -> None:
    from topicslab import api, population

    tax = _toy("c5", 5)
    sets = population.generate(20, 2, seed=1, k=2, taxonomy=tax)
    with pytest.raises(TypeError, match=r"pass TopicSets\.sets, with mechanism=") as info:
        getattr(api, call)(sets, 2, seed=1, mechanism=api.Mechanism(k=2, taxonomy=tax))
    assert "\n" not in str(info.value)
    assert getattr(api, call)(sets.sets, 2, seed=1,
                              mechanism=api.Mechanism(k=2, taxonomy=tax)).max() < 5
