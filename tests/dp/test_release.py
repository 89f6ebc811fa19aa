"""Public release schema (docs/design.md §Files): round trips in both schemas and bad files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from topicslab.datamodel import TopicSets
from topicslab.dp import DPStatistics, compute_statistics, load_statistics, save_statistics
from topicslab.errors import InputError
from topicslab.taxonomy import load

M = 12


def _stats(tax, seed=0, epsilon=50.0) -> DPStatistics:
    rng = np.random.default_rng(seed)
    sets = np.sort(np.argsort(rng.random((400, 2, tax.size)), -1)[..., :5], -1)
    return compute_statistics(TopicSets(sets.astype(np.int16), tax), epsilon=epsilon,
                              delta=1e-6, seed=seed)


@pytest.mark.parametrize("schema", ["current", "legacy"])
def test_round_trip_small_taxonomy(tmp_path, tax12, schema):
    st = _stats(tax12)
    save_statistics(tmp_path, st, schema=schema)
    names = {"current": "q_within.json", "legacy": "qwithin.json"}
    assert (tmp_path / names[schema]).exists() and (tmp_path / "taxonomy.json").exists()
    back = load_statistics(tmp_path, taxonomy=tax12)
    np.testing.assert_allclose(back.q_within, st.q_within, rtol=0, atol=0)
    np.testing.assert_allclose(back.q_across, st.q_across, rtol=0, atol=0)
    np.testing.assert_allclose(back.q_single, st.q_single)
    assert back.k == 5 and back.ledger is not None
    assert back.ledger.mechanisms == st.ledger.mechanisms


@pytest.mark.parametrize("lags", [0, 2])
def test_the_files_read_back_the_released_object_bit_for_bit(tmp_path, lags):
    """``topicslab run`` hands the release it made to the fit without reading its files
    again (``RunContext.keep_statistics``): the two must be the same statistics."""
    import dataclasses

    tax = load("v2")
    rng = np.random.default_rng(3)
    sets = np.sort(np.argsort(rng.random((600, 3, tax.size)), -1)[..., :5], -1)
    st = compute_statistics(TopicSets(sets.astype(np.int16), tax), weeks=(0, 1, 2),
                            epsilon=1.0986122886681098, delta=1e-15, seed=2,
                            overlap_lags=lags)
    save_statistics(tmp_path / "r", st)
    back = load_statistics(tmp_path / "r")
    for field in dataclasses.fields(DPStatistics):
        a, b = getattr(st, field.name), getattr(back, field.name)
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype, field.name
            np.testing.assert_array_equal(a, b, err_msg=field.name, strict=True)
        elif field.name == "ledger":
            assert a.to_dict() == b.to_dict()
        else:
            assert a == b, field.name
    assert (st.q_overlap is None) == (lags == 0)


def test_round_trip_v2_detects_taxonomy(tmp_path):
    st = _stats(load("v2"), seed=1, epsilon=1e4)
    save_statistics(tmp_path, st)
    (tmp_path / "privacy_ledger.json").unlink()
    back = load_statistics(tmp_path)
    assert back.taxonomy.version == "v2" and back.ledger is None
    np.testing.assert_array_equal(back.q_across, st.q_across)
    assert back.k == 5  # inferred from sum q_within ~ C(5,2)


def _write(path, records):
    path.write_text(json.dumps(records), encoding="utf-8")


def _release(tmp_path, tax, within, across, *, legacy=False):
    _write(tmp_path / ("qwithin.json" if legacy else "q_within.json"), within)
    _write(tmp_path / ("qacross.json" if legacy else "q_across.json"), across)
    _write(tmp_path / "taxonomy.json",
           [{"topics_id": int(i), "topic_label": lab}
            for i, lab in zip(tax.ids, tax.labels, strict=True)])


def test_unordered_pairs_either_order_and_legacy_labels(tmp_path, tax12):
    ids, labs = [int(x) for x in tax12.ids], tax12.labels
    within = [{"topic_1_id": ids[3], "topic_1_label": labs[3], "topic_2_id": ids[1],
               "topic_2_label": labs[1], "frequency": 0.2},
              {"topic_1_id": ids[1], "topic_2_id": ids[3], "frequency": 0.2}]
    across = [{"week_1_topic_id": ids[2], "week_2_topic_id": ids[2], "frequency": 0.5}]
    _release(tmp_path, tax12, within, across)
    st = load_statistics(tmp_path, taxonomy=tax12, k=2)
    assert st.q_within[1, 3] == st.q_within[3, 1] == 0.2
    assert st.q_across[2, 2] == 0.5 and st.q_single[1] == pytest.approx(0.2)
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    _release(legacy, tax12, [{"topic1": labs[4], "topic2": labs[0], "frequency": 0.1}],
             [{"topic_week1": labs[0], "topic_week2": labs[4], "frequency": 0.3}], legacy=True)
    st2 = load_statistics(legacy, taxonomy=tax12, k=2)
    assert st2.q_within[0, 4] == 0.1 and st2.q_across[0, 4] == 0.3


@pytest.mark.parametrize(("record", "field", "msg"), [
    ({"topic_1_id": 1, "topic_2_id": 4, "frequency": float("nan")}, "frequency", "nan"),
    ({"topic_1_id": 1, "topic_2_id": 4, "frequency": -0.1}, "frequency", "probability"),
    ({"topic_1_id": 1, "topic_2_id": 4, "frequency": "x"}, "frequency", "number"),
    ({"topic_1_id": 1, "topic_2_id": 999, "frequency": 0.1}, "topic_2_id", "unknown topic id"),
    ({"topic_1_id": 1, "topic_1_label": "/Nope", "topic_2_id": 4, "frequency": 0.1},
     "topic_1_label", "wrong taxonomy"),
    ({"topic_1_id": 1, "topic_2_id": 1, "frequency": 0.1}, "topic_2_id", "two different"),
    ({"topic_1_id": 1, "frequency": 0.1}, "topic_2_id", "missing"),
])
def test_bad_records_name_file_record_field(tmp_path, tax12, record, field, msg):
    good = {"topic_1_id": 1, "topic_2_id": 7, "frequency": 0.1}
    _release(tmp_path, tax12, [good, record], [])
    with pytest.raises(InputError) as exc:
        load_statistics(tmp_path, taxonomy=tax12)
    text = str(exc.value)
    assert "q_within.json" in text and "row 2" in text and repr(field) in text  # 1-based
    assert msg.lower() in text.lower()


def test_wrong_taxonomy_file(tmp_path, tax12):
    _release(tmp_path, tax12, [], [])
    with pytest.raises(InputError, match="taxonomy"):
        load_statistics(tmp_path, taxonomy="v2")
    with pytest.raises(InputError, match=r"taxonomy\.json"):
        load_statistics(tmp_path)  # neither v1 nor v2


def test_conflicting_duplicate_pair_and_bad_json(tmp_path, tax12):
    _release(tmp_path, tax12, [{"topic_1_id": 1, "topic_2_id": 4, "frequency": 0.1},
                               {"topic_1_id": 4, "topic_2_id": 1, "frequency": 0.2}], [])
    with pytest.raises(InputError, match="different frequencies"):
        load_statistics(tmp_path, taxonomy=tax12)
    (tmp_path / "q_across.json").write_text("[{", encoding="utf-8")
    (tmp_path / "q_within.json").write_text("[]", encoding="utf-8")
    with pytest.raises(InputError, match="invalid JSON"):
        load_statistics(tmp_path, taxonomy=tax12)


@pytest.mark.parametrize(("record", "field", "msg"), [
    ({"topic_1_id": True, "topic_2_id": 4, "frequency": 0.1}, "topic_1_id", "integer"),
    ({"topic_1_id": 1, "topic_2_id": 4.0, "frequency": 0.1}, "topic_2_id", "integer"),
    ({"topic_1_id": 1, "topic_2_id": 4, "frequency": True}, "frequency", "number"),
    ({"topic_1_id": 2**70, "topic_2_id": 4, "frequency": 0.1}, "topic_1_id", "unknown"),
    ({"topic_1_id": 1, "topic_2_id": 4, "frequency": 1.5}, "frequency", "probability"),
])
def test_bulk_reader_leaves_faults_to_the_record_reader(tmp_path, tax12, record, field, msg):
    """The bulk path accepts nothing the record-by-record reader refuses (bools are not ids or
    frequencies, ids beyond int64 are unknown), and the fault keeps its row and field."""
    good = [{"topic_1_id": 1, "topic_2_id": 7, "frequency": 0.1},
            {"topic_1_id": 4, "topic_2_id": 7, "frequency": 0.2}]
    _release(tmp_path, tax12, [*good, record], [])
    with pytest.raises(InputError) as exc:
        load_statistics(tmp_path, taxonomy=tax12)
    text = str(exc.value)
    assert "row 3" in text and repr(field) in text and msg in text.lower()


def test_bulk_reader_agrees_with_record_reader_on_repeats_and_labels(tmp_path, tax12):
    ids, labs = [int(x) for x in tax12.ids], tax12.labels
    within = [{"topic_1_id": ids[1], "topic_2_id": ids[3], "frequency": 0.2},
              {"topic_1_id": ids[3], "topic_2_id": ids[1], "frequency": 0.2}]  # same pair
    across = [{"week_1_topic_id": ids[2], "week_1_topic_label": labs[2],
               "week_2_topic_id": ids[5], "frequency": 0.5},
              {"week_1_topic_id": ids[5], "week_2_topic_id": ids[2],
               "week_2_topic_label": labs[2], "frequency": 0.25}]
    _release(tmp_path, tax12, within, across)
    st = load_statistics(tmp_path, taxonomy=tax12, k=2)
    assert st.q_within[1, 3] == st.q_within[3, 1] == 0.2
    assert st.q_across[2, 5] == 0.5 and st.q_across[5, 2] == 0.25
    across[1]["week_2_topic_label"] = labs[4]
    _release(tmp_path, tax12, within, across)
    with pytest.raises(InputError) as exc:
        load_statistics(tmp_path, taxonomy=tax12, k=2)
    assert "q_across.json" in str(exc.value) and "row 2" in str(exc.value)
    assert "'week_2_topic_label'" in str(exc.value)


@pytest.mark.parametrize("schema", ["current", "legacy"])
def test_the_pair_files_are_json_dumps_of_their_records_byte_for_byte(schema):
    """The pair files are written from each topic's fields encoded once; they must be what
    ``json.dumps`` of the records writes (labels with quotes, backslashes, controls and
    non-ASCII; frequencies of every magnitude, -0.0 included)."""
    from topicslab.dp.release import _pair_records, _records
    from topicslab.taxonomy import Taxonomy

    labels = ['/A "quoted"', "/B\\back", "/C\u00e9t\u00e9 \u2028", "/D\ttab\x01", "/E"]
    tax = Taxonomy.from_rows("odd5", [(i * 7 + 1, lab) for i, lab in enumerate(labels)])
    ids = [int(x) for x in tax.ids]
    values = np.array([0.0, -0.0, 5e-324, 1e-300, 0.1, 1 / 3, 1.0, 2.5e10, 123456789.125,
                       1e-7], dtype=np.float64)
    i, j = np.triu_indices(5, 1)
    names = ((("topic_1_id", "topic_1_label"), ("topic_2_id", "topic_2_label"))
             if schema == "current" else (("topic1",), ("topic2",)))

    def field(name, t):
        return ids[t] if name.endswith("_id") else tax.labels[t]

    records = [{**{n: field(n, a) for n in names[0]}, **{n: field(n, b) for n in names[1]},
                "frequency": float(f)} for a, b, f in zip(i, j, values, strict=True)]
    assert _pair_records(*names, ids, list(tax.labels), i, j, values) == _records(records)
    with pytest.raises(ValueError, match="not JSON compliant"):
        _pair_records(*names, ids, list(tax.labels), i, j, np.where(values > 1, np.nan, values))
