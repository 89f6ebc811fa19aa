"""Bad input, the thirty-ninth independent round.

- ``run --out R`` where ``R/model`` (or ``R/stats``, ``R/validation``) is a symbolic link to
  a directory outside R, e.g. another run's model: the stage's files were written through
  the link, replacing that other run's model under its report and stage record (exit 0).
- ``run --out R`` where a file the stages write inside the run's directories is a directory
  (``R/model/model.json/``, ``R/stats/q_single.json/``): refused by the closing rename, after
  the stages before it and the stage itself had run (``R/report.html/`` and the like were
  refused first).
- A run's ``stages.json`` whose ``seconds`` of a stage was edited to ``1e400`` (read as
  infinity): every stage was reused, then the run failed at its very end naming
  results.json ("'inf' is not of type 'number'"); ``true`` or ``-5`` went into the report.
- The Python API: ``ChunkedSets(draw, n, weeks, k, "v2")`` (a version name, as TopicSets
  takes) kept the text, and the attacks failed with an AttributeError ('str' object has no
  attribute 'size'); a ``draw`` of no function failed only at the first chunk, a chunk of
  another taxonomy was taken as the declared one; ``measure_risk(populations=5)`` was
  "object of type 'int' has no len()"; ``TopicSets.subset`` with an index past the table
  was NumPy's IndexError, and with one number "topic sets must be [n_users, n_weeks, k]";
  ``bayes_risk`` and ``reid_bounds`` given a mechanism of no Mechanism failed with an
  AttributeError, ``bayes_risk`` given an array or None too, and of no users with a
  ZeroDivisionError; ``theory_curve(mechanism=0)`` was taken for the default mechanism.
- ``qif.product_channel``: ``ProductChannel.entropy(weights)`` took weights of any length
  (its kernel read past a shorter array: a sum of garbage); a ``ProductChannel`` built with
  dimensions that do not match its tables corrupted the process's memory ("corrupted size
  vs. prev_size", the process killed); ``max_sums([])`` was an IndexError, a pair of no
  channel an AttributeError; ``topics_channel`` of fractional sets an IndexError.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from refusal import check_refused, invoke, random_profiles, tree

from topicslab.errors import InputError


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return tmp_path


def _sets(users: int = 30, weeks: int = 4, seed: int = 0) -> object:
    from topicslab.datamodel import TopicSets

    return TopicSets(random_profiles(users, weeks, seed), "v2")


# ---- run: the run's own directories and files, checked before any stage ------------------


def _run_dir(work: Path) -> Path:
    """An earlier run's directory (its stage record) beside another run's ``other``."""
    out = work / "r"
    out.mkdir()
    (out / "stages.json").write_text("{}", encoding="utf-8")
    for name in ("model", "stats", "validation"):
        (work / "other" / name).mkdir(parents=True)
        (work / "other" / name / "keep.json").write_text("{}", encoding="utf-8")
    return out


RUN = ["run", "--preset", "smoke", "--users", "300", "--fit-steps", "2", "--types", "2",
       "--targets", "50", "--trials", "2", "--no-disclosure", "-q", "--out"]


@pytest.mark.parametrize("name", ["model", "stats", "validation"])
def test_a_run_directory_linked_outside_the_run_is_refused(work: Path, name: str) -> None:
    """Was written through: the fit replaced another run's model (exit 0)."""
    out = _run_dir(work)
    (out / name).symlink_to(work / "other" / name, target_is_directory=True)
    before = tree(work)
    res = invoke([*RUN, str(out)])
    check_refused(res.output, res.exit_code,
                  f"r/{name}, field '--out': is a link to {(work / 'other' / name).resolve()}, "
                  "outside --out")
    assert tree(work) == before


@pytest.mark.parametrize("name", ["model", "stats", "validation"])
def test_the_python_api_refuses_a_run_directory_linked_outside_the_run(work: Path,
                                                                       name: str) -> None:
    """``experiment.run`` makes the same checks as the command (they were the command's
    only, and the Python API wrote through the link)."""
    from topicslab import experiment

    out = _run_dir(work)
    (out / name).symlink_to(work / "other" / name, target_is_directory=True)
    before = tree(work)
    with pytest.raises(InputError, match="outside --out"):
        experiment.run("smoke", out, users=300, overrides={"fit_steps": 2, "types": 2})
    assert tree(work) == before


def test_the_python_api_refuses_a_foreign_directory(work: Path) -> None:
    from topicslab import experiment

    (work / "m").mkdir()
    (work / "m" / "model.json").write_text("{}", encoding="utf-8")
    before = tree(work)
    with pytest.raises(InputError, match="not a run's output directory"):
        experiment.run("smoke", work / "m", users=300)
    assert tree(work) == before


def test_a_run_directory_linked_inside_the_run_is_not_refused_for_it(work: Path) -> None:
    """A link that stays inside --out changes nothing elsewhere: not this refusal (here the
    run then stops at the next check, a directory where a file is written)."""
    out = _run_dir(work)
    (out / "model-store").mkdir()
    (out / "model").symlink_to(out / "model-store", target_is_directory=True)
    (out / "synth.parquet").mkdir()
    res = invoke([*RUN, str(out)])
    check_refused(res.output, res.exit_code, "synth.parquet, field '--out': is a directory "
                                             "where the run writes a file")


@pytest.mark.parametrize("name", ["model/model.json", "model/model.safetensors",
                                  "stats/q_single.json", "stats/privacy_ledger.json",
                                  "stats/taxonomy.json"])
def test_a_stage_file_taken_by_a_directory_is_refused_first(work: Path, name: str) -> None:
    """Was refused by the stage's closing rename, after the stages before it had run."""
    out = _run_dir(work)
    (out / name).mkdir(parents=True)
    before = tree(work)
    res = invoke([*RUN, str(out)])
    check_refused(res.output, res.exit_code,
                  f"{name}, field '--out': is a directory where the run writes a file")
    assert tree(work) == before


@pytest.mark.parametrize("seconds", ["1e400", "-1e400", "true", "-5", "\"12\"",
                                     "1" + "0" * 400])
def test_an_edited_stage_time_is_no_time(work: Path, seconds: str) -> None:
    """Was read as it came: 1e400 (infinity) failed the run at its very end, naming
    results.json; true and -5 went into the report as times."""
    from topicslab.experiment.cache import StageCache

    record = {"fit": {"key": "k", "summary": {}, "seconds": 0.5}}
    text = json.dumps(record).replace("0.5", seconds)
    (work / "stages.json").write_text(text, encoding="utf-8")
    assert StageCache(work).seconds("fit") is None


def test_a_stage_time_as_recorded_is_kept(work: Path) -> None:
    from topicslab.experiment.cache import StageCache

    (work / "stages.json").write_text('{"fit": {"seconds": 2}, "qif": {"seconds": 0.25}}',
                                      encoding="utf-8")
    cache = StageCache(work)
    assert cache.seconds("fit") == 2.0 and cache.seconds("qif") == 0.25


# ---- the Python API: ChunkedSets, populations, subset -------------------------------------


def _draw(sets: object) -> object:
    return lambda lo, n: sets.subset(users=slice(lo, lo + n))  # type: ignore[attr-defined]


def test_chunked_sets_take_a_taxonomy_version_name() -> None:
    """Was kept as text: an AttributeError ('str' object has no attribute 'size') in the
    attacks."""
    from topicslab import attacks
    from topicslab.datamodel import ChunkedSets

    sets = _sets()
    chunked = ChunkedSets(_draw(sets), 30, 4, 5, "v2", chunk_users=7)  # type: ignore[arg-type]
    assert chunked.taxonomy.version == "v2"
    res = attacks.measure_risk(chunked, weeks=2, targets=10, trials=1, progress=False)
    assert res.users == 30


def test_chunked_sets_refuse_a_draw_of_no_function() -> None:
    from topicslab.datamodel import ChunkedSets

    with pytest.raises(TypeError, match="ChunkedSets takes a function draw"):
        ChunkedSets(5, 30, 4, 5, "v2")  # type: ignore[arg-type]


def test_chunked_sets_refuse_a_chunk_of_another_taxonomy() -> None:
    """Was taken as the declared taxonomy's topics."""
    from topicslab.datamodel import ChunkedSets, TopicSets

    sets = random_profiles(30, 4)
    chunked = ChunkedSets(lambda lo, n: TopicSets(sets[lo:lo + n], "v1"), 30, 4, 5, "v2",
                          chunk_users=7)
    with pytest.raises(InputError, match="came back in taxonomy v1, not the declared v2"):
        chunked.whole()


def test_measure_risk_populations_of_no_kind_is_a_type_error() -> None:
    """Was "object of type 'int' has no len()"."""
    from topicslab import attacks

    with pytest.raises(TypeError, match="populations takes a sequence of TopicSets"):
        attacks.measure_risk(_sets(), weeks=2, targets=5, trials=1, progress=False,
                             populations=5)  # type: ignore[arg-type]


@pytest.mark.parametrize(("users", "weeks", "named"), [
    ([100], None, "field 'users': cannot select users [100] of 30"),
    (None, [9], "field 'weeks': cannot select weeks [9] of 4"),
    ("a", None, "field 'users': cannot select users 'a' of 30"),
    (None, 1.5, "field 'weeks': cannot select weeks 1.5 of 4"),
    (np.ones(3, dtype=bool), None, "field 'users': cannot select users"),
])
def test_a_subset_past_the_table_names_its_argument(users: object, weeks: object,
                                                    named: str) -> None:
    """Was NumPy's IndexError ("index 100 is out of bounds for axis 0 with size 30")."""
    with pytest.raises(InputError, match=named.replace("[", r"\[").replace("]", r"\]")):
        _sets().subset(users, weeks)  # type: ignore[attr-defined]


@pytest.mark.parametrize("argument", ["users", "weeks"])
def test_a_subset_of_one_number_is_a_type_error(argument: str) -> None:
    """Was "topic sets must be [n_users, n_weeks, k], got (4, 5)" (the axis dropped)."""
    with pytest.raises(TypeError, match=f"as {argument}, got the number 2"):
        _sets().subset(**{argument: 2})  # type: ignore[attr-defined]


def test_a_subset_of_slices_and_lists_is_as_before() -> None:
    sub = _sets().subset([0, 2], slice(1, 3))  # type: ignore[attr-defined]
    assert sub.sets.shape == (2, 2, 5) and list(sub.user_ids) == [0, 2]


# ---- the Python API: the bounds and the Bayes attacker --------------------------------------


@pytest.mark.parametrize("function", ["bayes_risk", "reid_bounds"])
@pytest.mark.parametrize("mechanism", [5, "v2", 1.5, [2]])
def test_a_mechanism_of_no_mechanism_is_a_type_error(function: str, mechanism: object) -> None:
    """Was an AttributeError ('int' object has no attribute 'k')."""
    from topicslab.attacks import bayes, bounds

    call = bayes.bayes_risk if function == "bayes_risk" else bounds.reid_bounds
    with pytest.raises(TypeError, match="mechanism takes a Mechanism"):
        call(_sets(), weeks=2, mechanism=mechanism)  # type: ignore[operator]


@pytest.mark.parametrize("mechanism", [0, "", False])
def test_theory_curve_takes_no_falsy_value_for_the_default_mechanism(mechanism: object) -> None:
    """Was taken for "the default mechanism" (``mechanism or Mechanism(...)``)."""
    from topicslab.attacks.theory import theory_curve

    with pytest.raises(TypeError, match="mechanism takes a Mechanism"):
        theory_curve(_sets(), weeks=[1], targets=5, mechanism=mechanism,  # type: ignore[arg-type]
                     progress=False)


@pytest.mark.parametrize("sets", [None, "array", "list"])
def test_bayes_risk_given_no_topic_sets_is_a_type_error(sets: str | None) -> None:
    """Was an AttributeError ('NoneType' object has no attribute 'k')."""
    from topicslab.attacks import bayes

    given = {None: None, "array": random_profiles(5, 2), "list": [[[1, 2]]]}[sets]
    with pytest.raises(TypeError, match="bayes_risk takes TopicSets"):
        bayes.bayes_risk(given, weeks=1)  # type: ignore[arg-type]


def test_bayes_risk_of_no_users_is_refused() -> None:
    """Was a ZeroDivisionError."""
    from topicslab.attacks import bayes
    from topicslab.datamodel import TopicSets

    with pytest.raises(InputError, match="field 'sets': the sets hold no users"):
        bayes.bayes_risk(TopicSets(np.zeros((0, 4, 5), dtype=np.int16), "v2"), weeks=2)


# ---- the Python API: qif.product_channel --------------------------------------------------


def _channel() -> object:
    from topicslab.qif.product_channel import topics_channel

    return topics_channel(random_profiles(30, 3), 40, 0.2, 0.01)


@pytest.mark.parametrize("weights", [np.ones(29), np.ones(0), 5, np.ones((30, 2)),
                                     np.full(30, np.nan), -np.ones(30), "x"])
def test_entropy_checks_its_weights(weights: object) -> None:
    """Were taken as given: the kernel read past a shorter array (5: -6.6e+225)."""
    from topicslab.qif.errors import QIFError

    with pytest.raises(QIFError, match="weights must be one finite non-negative number per "
                                       "user"):
        _channel().entropy(weights)  # type: ignore[attr-defined]


def test_entropy_of_good_weights_is_as_before() -> None:
    ch = _channel()
    assert ch.entropy() == pytest.approx(ch.entropy(np.full(30, 1 / 30)))  # type: ignore[attr-defined]


@pytest.mark.parametrize(("field", "value", "named"), [
    ("dims", np.zeros(3, dtype=np.int64), "dims must be int64[3]"),
    ("dims", np.array([1, 1, 1], dtype=np.int64), "local must hold collapsed indices"),
    ("dims", np.ones(2, dtype=np.int64), "dims must be int64[3]"),
    ("local", None, "local must be an int16 or int32"),
    ("local", np.zeros((30, 1, 5), dtype=np.int16), "local must be an int16 or int32"),
    ("mult", np.zeros((3, 1)), "mult must be float64[3, at least"),
    ("beta", None, "beta must be float64[3, at least"),
    ("cin", np.ones((2, 2)), "cin must be float64[30, 3]"),
    ("cin_codes", np.zeros((30, 3), dtype=np.int64), "cin_codes must be [30, 3] integer"),
])
def test_a_product_channel_of_mismatched_tables_is_refused(field: str, value: object,
                                                           named: str) -> None:
    """Was built as given: the kernels indexed past the tables ("corrupted size vs.
    prev_size", the process killed) or failed with an AttributeError."""
    from topicslab.qif.errors import QIFError

    with pytest.raises(QIFError, match=re_escape(named)):
        dataclasses.replace(_channel(), **{field: value})  # type: ignore[type-var]


def re_escape(text: str) -> str:
    import re

    return re.escape(text)


def test_max_sums_of_nothing_is_nothing() -> None:
    """Was an IndexError."""
    from topicslab.qif.product_channel import max_sums

    assert max_sums([]) == []


@pytest.mark.parametrize("configs", [[(5, np.ones(30))], ["x"], None])
def test_max_sums_of_no_channel_is_a_type_error(configs: object) -> None:
    """Was an AttributeError ('int' object has no attribute 'local')."""
    from topicslab.qif.product_channel import max_sums

    with pytest.raises(TypeError, match=r"max_sums takes a list of \(ProductChannel, "
                                        r"weights\) pairs"):
        max_sums(configs)  # type: ignore[arg-type]


def test_topics_channel_of_fractional_sets_is_refused() -> None:
    """Was an IndexError ("arrays used as indices must be of integer type")."""
    from topicslab.qif.errors import QIFError
    from topicslab.qif.product_channel import topics_channel

    with pytest.raises(QIFError, match="sets must be an integer array of topic indices"):
        topics_channel(random_profiles(30, 3) + 0.5, 40, 0.2, 0.01)


# ---- the Python API: metadata and JSON ----------------------------------------------------


def _with_metadata(metadata: dict[str, object]) -> object:
    from topicslab.datamodel import TopicSets

    return TopicSets(random_profiles(3, 2), "v2", None, metadata)


@pytest.mark.parametrize("value", [10**400, 2**64, [2**70]])
def test_metadata_with_an_integer_past_64_bits_is_refused_when_written(
        tmp_path: Path, value: object) -> None:
    """Was written, and the file refused when read back ("corrupt topicslab metadata (not
    JSON)")."""
    from topicslab import io as tio

    with pytest.raises(InputError, match=r"field 'metadata': the integer .* is past 64 bits"):
        tio.write_sets(tmp_path / "s.parquet", _with_metadata({"note": value}))
    assert not list(tmp_path.iterdir())


def test_metadata_of_64_bit_integers_is_written_as_before(tmp_path: Path) -> None:
    from topicslab import io as tio

    tio.write_sets(tmp_path / "s.parquet", _with_metadata({"a": -(2**63), "b": 2**63 - 1}))
    back = tio.read_sets(tmp_path / "s.parquet").metadata
    assert back["a"] == -(2**63) and back["b"] == 2**63 - 1


def test_metadata_keys_that_read_alike_are_refused(tmp_path: Path) -> None:
    """{1: "a", "1": "b"} was written as {"1": "b"}: a value lost without a word."""
    from topicslab import io as tio

    with pytest.raises(ValueError, match="the keys 1 and '1' are both '1' in JSON"):
        tio.write_sets(tmp_path / "s.parquet", _with_metadata({1: "a", "1": "b"}))
    assert not list(tmp_path.iterdir())


def test_metadata_that_holds_itself_is_a_value_error(tmp_path: Path) -> None:
    """Was a RecursionError."""
    from topicslab import _json
    from topicslab import io as tio

    circular: dict[str, object] = {}
    circular["self"] = circular
    with pytest.raises(ValueError, match=r"holds itself \(a circular reference\)"):
        tio.write_sets(tmp_path / "s.parquet", _with_metadata(circular))
    assert not list(tmp_path.iterdir())
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="circular reference"):
        _json.dumps(loop)


@pytest.mark.parametrize(("value", "text"), [
    (10**400, "1" + ",000" * 134 + ".0%"), (1, "100.0%"), (0, "0.0%"), (np.int64(-2), "-200.0%")])
def test_a_whole_number_as_a_percentage_is_exact(value: object, text: str) -> None:
    """10**400 was an OverflowError (float() of the integer)."""
    from topicslab._numbers import format_number

    assert format_number(value, percent=True) == text
