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
