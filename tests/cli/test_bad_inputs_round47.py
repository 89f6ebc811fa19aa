"""Bad input, the forty-seventh independent round: every public function of the Python API
swept with each argument replaced by a wrong kind of value (bool, NaN, huge and negative
integers, text, bytes, None, lists, dicts, empty, 0-d, float16, bool and object arrays), odd
but valid Parquet and text tables, output names, list options and hand-edited ledgers.

- The per-format writers (``io.write_sets_csv``, ``_long``, ``_profiles``, ``_parquet``,
  ``_tfrecord``), ``io.SetsWriter``, ``model.sample_to_file``,
  ``model.import_release_parameters``, ``disclosure.read_script`` and
  ``dp.stream_statistics`` given a path that is no name (True, None, 5, a ``BytesIO``, a
  list): Python's "TypeError: expected str, bytes or os.PathLike object, not bool", for bytes
  "a bytes-like object is required, not 'str'", and ``write_sets_tfrecord`` of a name holding
  NUL "ValueError: embedded null byte" -- where ``write_sets`` and every reader say which
  argument is wrong.
- ``taxonomy=["v2"]`` (or a dict, or an array) to any function that takes a taxonomy
  (``taxonomy.load``/``resolve``, ``api.top_k``, ``population.initial_params``,
  ``io.SetsWriter``, ...): the cache's "TypeError: unhashable type: 'list'".
- ``qif.report_section(epochs=3)``: "'int' object is not iterable" (the class round 46 fixed
  in ``parameter_table``); ``report_section(True)`` "'bool' object has no attribute
  'taxonomy'".
- ``dp.plan_queries(..., overlap_lags=2**70)``: "OverflowError: Python int too large to convert
  to C ssize_t"; ``dp.ContributionBound(overlap_lags=2**70)`` was taken.
- ``attacks.measure_risk_traces(..., matching=True)`` (or ``"assignment"``): "AttributeError:
  'bool' object has no attribute 'matching'".
- ``model.PersistentTypes(init_mode_stay="0.5")`` (or None): "'<' not supported between
  instances of 'float' and 'str'".
- ``attacks.ReidProtocol(targets=np.array([...]))``: NumPy's "The truth value of an array with
  more than one element is ambiguous".
- ``attacks.MatchSetCounter`` / ``match_set_counts`` refused a number, a 1-d array or text
  categories with a plain ``ValueError`` (no ``InputError``, no field).
- ``disclosure.make_script(group=True)`` (or ``"x"``, ``(1,)``; ``probe_gap``, ``wait``):
  "cannot unpack non-iterable bool object" / "not enough values to unpack";
  ``extra_headers=True`` "Value after * must be an iterable".
- ``disclosure.Preprocessor(stop_words="the")``: the stop words t, h and e, without a word;
  ``stop_words=True`` "'bool' object is not iterable", ``language=True`` an AttributeError,
  ``exceptions="ab"`` dict()'s "dictionary update sequence element #0 has length 1".
- A choice given as an array or a list (``io.read_sets(format=np.array([...]))``,
  ``write_sets``, ``read_traces``, ``model.FullObjective(single_weight=...)``,
  ``PaperAdam(batch_loss=...)``, ``model.make_variant``, ``io.write_sets_tfrecord(user_ids=
  ...)``): NumPy's "The truth value of an array ... is ambiguous";
  ``attacks.make_attack(["hamming"])`` "unhashable type: 'list'".
- A NumPy 0-d array where a list is taken (``dp.PrivacyBudget(split=np.array(0.5))``,
  ``compute_statistics``/``plan_queries(split=...)``, ``disclosure.DisclosureDesign(rhos=
  ...)``, ``make_script(keywords=...)``, ``Preprocessor(stop_words=...)``, ``preprocess``):
  "TypeError: iteration over a 0-d array" (``isinstance(x, Iterable)`` is true of one).
- ``disclosure.Preprocessor(lowercase="no")`` was taken as true, by its truth value, and
  ``tokenize(lowercase=np.array([True]))`` NumPy's "truth value ... ambiguous".
- ``TopicSets.validate(allow_empty=...)`` handed its flag to a compiled kernel unchecked:
  ``"no"``, NaN or -1 were taken as true, 2**70 was "OverflowError: int too big to convert",
  None or an object numba's "TypingError: non-precise type pyobject", and an array of text
  compiled the kernel anew (minutes).
- ``Taxonomy.ancestors(-1)`` / ``bucket_name(-1)`` answered for the last topic (NumPy's index
  from the end), ``children(True)`` / ``children("x")`` / ``children(1.5)`` were ``[]`` or
  topic 1's, and 1.5, text, None or 1000 NumPy's IndexError or TypeError;
  ``Taxonomy.is_known(True)`` was true (topic 1), text int()'s ValueError, None its TypeError,
  2**70 "Python int too large to convert to C long"; ``label([1])`` "only 0-dimensional
  arrays can be converted to Python scalars".
- ``TypeMixture.q_across(week_pairs=3)`` / ``statistics(week_pairs="x")``: "'int' object is not
  iterable", "not enough values to unpack"; a fractional week (``[(0, 1.7)]``) was read as
  week 1.
- ``PrivacyLedger.save(FILE)``: "FileExistsError: [Errno 17] File exists", and ``save(None)``
  pathlib's TypeError; ``io.DomainTable.from_mapping(None)`` (or a list) "AttributeError:
  'NoneType' object has no attribute 'items'", a 0-d array of topics "iteration over a 0-d
  array".
- Work that would exhaust the memory, begun: ``model.sample(model, 10**10, seed=0)`` (in
  memory; ``sample_to_file`` streams) was "MemoryError: Unable to allocate 373. GiB" (and,
  with no memory limit, the kernel's OOM killer); ``dp.discrete_gaussian(10**11, ...)`` the
  same; ``disclosure.simulate_personas`` of a million personas, or of
  ``PersonaModel(visits_per_epoch=1e7)`` (every visit is simulated), ran until the memory
  ran out; ``disclosure.topics_experiment(mc_samples=10**9)`` (which the CLI's
  ``--mc-samples`` checks) and ``population.generate_chunks(10**9, chunk_users=10**9)``
  (which ``population --chunk-users`` checks) "MemoryError: Unable to allocate 7.45 GiB".
  ``PersonaModel(visits_per_epoch=1e308)`` was NumPy's "lam value too large" and
  ``activity_sigma=1e200`` "OverflowError: Numerical result out of range".
- Complex numbers where real ones are read: ``attacks.full_information_bound([[0.5+3j, 0.5]])``
  (and the other bounds of an explicit matrix), ``qif.as_channel``, ``prior_vulnerability``,
  ``posterior_vulnerability``, ``attacks.asymmetric_weights``, ``AsymmetricAttack(
  popularity=...)``, ``disclosure.first_violation``, ``log_ratio`` and ``model.model_terms``
  kept the real part (``np.asarray(..., dtype=np.float64)``, a ComplexWarning at most) and
  answered for another matrix; ``qif.report_section(figures=np.array([...]))`` NumPy's "truth
  value of an array is ambiguous".
- A CSV, TSV, long or profile table (gzipped too) of its header alone with no line break after
  it (``echo -n``, or a program that writes no row): "cannot parse (Could not skip initial 1
  rows from CSV file, either file is too short or header is larger than block size)", pyarrow's
  words, where the same header with its line break is "holds no users".
- ``stats --sets`` of no users (``--engine local``): "field 'data': the topic sets hold no
  users", the Python argument of ``compute_statistics``, where the stream engine and every
  other command name ``--sets``.
- ``stats --out ' '``: "error: '', field '--out': an output directory name is needed", a name
  the user did not type (``population --out ' '`` shows ``' '``).

The same contract as ``test_bad_inputs.py``: exit code 2, one line ``error: ...`` naming the
offending file, row or field, no traceback, and nothing written; from Python, an
``InputError`` naming the argument.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from refusal import invoke, invoke_refused, random_profiles, small_population, tree

from topicslab.errors import InputError


@pytest.fixture
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("r47-inputs")
    small_population(directory)
    return directory


def _sets(users: int = 20) -> Any:
    from topicslab.datamodel import TopicSets

    return TopicSets(random_profiles(users, 4), "v2", np.arange(users, dtype=np.int64))


def _refused(call: Any, field: str) -> InputError:
    with pytest.raises(InputError) as info:
        call()
    assert info.value.field == field, info.value
    return info.value


# ---- paths that are no names -----------------------------------------------------------------


def _writers() -> dict[str, Any]:
    from topicslab import disclosure, dp
    from topicslab import io as tio
    from topicslab import model as tm

    sets = _sets()
    return {
        "write_sets_csv": lambda p: tio.write_sets_csv(p, sets),
        "write_sets_long": lambda p: tio.write_sets_long(p, sets),
        "write_sets_profiles": lambda p: tio.write_sets_profiles(p, sets),
        "write_sets_parquet": lambda p: tio.write_sets_parquet(p, sets),
        "write_sets_tfrecord": lambda p: tio.write_sets_tfrecord(p, sets),
        "SetsWriter": lambda p: tio.SetsWriter(p, "v2", 5, 4),
        "import_release_parameters": lambda p: tm.import_release_parameters(p),
        "read_script": lambda p: disclosure.read_script(p),
        "stream_statistics": lambda p: dp.stream_statistics(p, epsilon=1.0, delta=1e-6),
    }


_NAMES = ["write_sets_csv", "write_sets_long", "write_sets_profiles", "write_sets_parquet",
          "write_sets_tfrecord", "SetsWriter", "import_release_parameters", "read_script",
          "stream_statistics"]
_PATHS = {"True": True, "None": None, "int": 5, "bytes": b"p.csv", "BytesIO": io.BytesIO(),
          "list": ["p.csv"]}


# (bytes given to the Parquet writers were refused already)
@pytest.mark.parametrize(("name", "path"), [
    pytest.param(n, v, id=f"{k}-{n}") for n in _NAMES for k, v in _PATHS.items()
    if not (k == "bytes" and n in ("write_sets_parquet", "SetsWriter"))])
def test_a_path_that_is_no_name_is_refused_naming_the_argument(
        name: str, path: Any, work: Path) -> None:
    before = tree(work)
    err = _refused(lambda: _writers()[name](path), "path")
    assert "expected a file or directory name" in err.message
    assert tree(work) == before


def test_a_nul_in_a_tfrecord_name_is_refused(work: Path) -> None:
    from topicslab import io as tio

    err = _refused(lambda: tio.write_sets_tfrecord("p\x00.tfrecord", _sets()), "path")
    assert "NUL" in err.message
    assert tree(work) == {}


# ---- the taxonomy as something that cannot be hashed -----------------------------------------


@pytest.mark.parametrize("taxonomy", [["v2"], {}, np.array(["v2"])], ids=["list", "dict", "array"])
def test_a_taxonomy_that_cannot_be_hashed_is_an_unknown_taxonomy(taxonomy: Any) -> None:
    from topicslab import api, population
    from topicslab import io as tio
    from topicslab import taxonomy as tx
    from topicslab.errors import UnknownTopicError

    for call in (lambda: tx.load(taxonomy), lambda: tx.resolve(taxonomy),
                 lambda: api.top_k(np.ones((2, 469)), taxonomy=taxonomy),
                 lambda: population.initial_params(taxonomy),
                 lambda: tio.SetsWriter("p.parquet", taxonomy, 5, 4)):
        with pytest.raises(UnknownTopicError, match="unknown taxonomy version"):
            call()
    assert tx.load("v2") is tx.resolve("v2")  # (still loaded once)


# ---- QIF, DP and the attacks' parameters -----------------------------------------------------


def test_the_qif_report_section_takes_one_number_of_epochs() -> None:
    from topicslab import qif
    from topicslab.qif import QIFError

    one = qif.report_section(epochs=3, figures=False)
    assert [row["epochs"] for row in one["parameters"]] == [3]
    with pytest.raises(QIFError) as info:
        qif.report_section(epochs=2.5, figures=False)
    assert getattr(info.value, "field", None) == "epochs"
    with pytest.raises(QIFError) as info:
        qif.report_section(True, figures=False)  # type: ignore[arg-type]
    assert getattr(info.value, "field", None) == "sets"


def test_a_huge_number_of_overlap_lags_is_refused() -> None:
    from topicslab import dp

    _refused(lambda: dp.plan_queries(2, 5, 469, epsilon=1.0, delta=1e-6, overlap_lags=2**70),
             "overlap_lags")
    _refused(lambda: dp.ContributionBound(overlap_lags=2**70), "overlap_lags")
    assert dp.ContributionBound(overlap_lags=3).overlap_lags == 3


@pytest.mark.parametrize("matching", [True, "assignment", 1])
def test_matching_options_of_another_kind_are_refused(matching: Any) -> None:
    from topicslab import api
    from topicslab import attacks as atk

    sets = _sets(30)
    traces = api.observe(sets.sets, 2, seed=0)
    from topicslab.datamodel import SiteTraces

    st = SiteTraces(traces, sets.taxonomy, np.arange(30, dtype=np.int64))
    err = _refused(lambda: atk.measure_risk_traces(st, targets=5, matching=matching,
                                                   progress=False),
                   "matching")
    assert "MatchingOptions" in err.message


@pytest.mark.parametrize("value", ["0.5", None, np.array([0.5, 0.5])],
                         ids=["text", "None", "array"])
def test_persistent_types_stays_that_are_no_numbers_are_refused(value: Any) -> None:
    from topicslab import model as tm

    _refused(lambda: tm.PersistentTypes(init_mode_stay=value), "init_mode_stay")
    _refused(lambda: tm.PersistentTypes(init_slot_stay=value), "init_slot_stay")


def test_an_array_of_targets_is_refused() -> None:
    from topicslab import attacks as atk

    _refused(lambda: atk.ReidProtocol(targets=np.array([1, 2, 3])), "targets")
    assert atk.ReidProtocol(targets=np.int64(5)).targets == 5
    assert atk.ReidProtocol(targets="all").targets == "all"


@pytest.mark.parametrize(("site1", "field"), [
    (5, "site1"), (np.arange(3), "site1"), (np.array([["a", "b"]]), "site1"),
    (np.array([[-2, 1]]), "site1")], ids=["number", "1-d", "text", "below-minus-one"])
def test_match_set_traces_of_the_wrong_shape_or_kind_are_input_errors(site1: Any,
                                                                      field: str) -> None:
    from topicslab import attacks as atk

    queries = np.zeros((2, 2), dtype=np.int64)
    err = _refused(lambda: atk.match_set_counts(site1, queries), field)
    assert isinstance(err, ValueError)  # (still the ValueError it was)


# ---- the disclosure's scripts and text filter ------------------------------------------------


@pytest.mark.parametrize(("keywords", "field"), [
    ({"group": True}, "group"), ({"group": "x"}, "group"), ({"group": (1,)}, "group"),
    ({"wait": (1, 2, 3)}, "wait"), ({"probe_gap": np.array(3)}, "probe_gap"),
    ({"extra_headers": True}, "extra_headers"), ({"extra_headers": "ab"}, "extra_headers")],
    ids=["group-bool", "group-text", "group-one", "wait-three", "gap-0d", "headers-bool",
         "headers-text"])
def test_make_script_ranges_and_headers_of_the_wrong_kind_are_refused(
        keywords: dict[str, Any], field: str) -> None:
    from topicslab import disclosure

    _refused(lambda: disclosure.make_script(["a", "b"], "probe", **keywords), field)


def test_make_script_still_takes_lists_and_arrays_as_ranges() -> None:
    from topicslab import disclosure

    plain = disclosure.make_script(["a", "b"], "probe")
    lists = disclosure.make_script(["a", "b"], "probe", group=[1, 3], wait=np.array([1, 10]),
                                   extra_headers=[["x", "y"]])
    assert lists.steps == plain.steps
    assert lists.headers[-1] == ("x", "y")


@pytest.mark.parametrize(("keywords", "field"), [
    ({"stop_words": "the"}, "stop_words"), ({"stop_words": True}, "stop_words"),
    ({"stop_words": b"the"}, "stop_words"), ({"stop_words": [1]}, "stop_words"),
    ({"language": True}, "language"), ({"exceptions": "ab"}, "exceptions"),
    ({"exceptions": {"a": 1}}, "exceptions")],
    ids=["text", "bool", "bytes", "numbers", "language-bool", "exceptions-text",
         "exceptions-number"])
def test_preprocessor_fields_of_the_wrong_kind_are_refused(keywords: dict[str, Any],
                                                           field: str) -> None:
    from topicslab import disclosure

    _refused(lambda: disclosure.Preprocessor(**keywords), field)
    assert disclosure.Preprocessor(stop_words={"The"})("the cats") == ["cat"]


# ---- the CLI ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "text", "args"), [
    ("h.csv", "user_id,epoch_0_topics", []),
    ("h.tsv", "user_id\tepoch_0_topics", []),
    ("l.csv", "user_id,week,topic_id", ["--from", "long"]),
    ("t.csv", "user_id,week,t1,t2", ["--from", "profiles"]),
], ids=["csv", "tsv", "long", "profiles"])
def test_a_header_without_a_line_break_is_a_table_of_no_rows(
        name: str, text: str, args: list[str], inputs: Path, work: Path) -> None:
    (inputs / name).write_text(text)
    invoke_refused(invoke, ["convert", *args, f"{{in}}/{name}", "c.parquet"], inputs, work,
                   "holds no users")


@pytest.mark.parametrize(("option", "text", "named"), [
    ("--visits", "user_id,timestamp,url", "the log holds no visits"),
    ("--domains", "domain,topics", "the domain table lists no domains")],
    ids=["visits", "domains"])
def test_ingest_of_a_header_without_a_line_break_says_what_it_lacks(
        option: str, text: str, named: str, inputs: Path, work: Path) -> None:
    (inputs / "visits.csv").write_text("user_id,timestamp,url\n"
                                       "1,2024-01-01T00:00:00Z,https://a.com\n")
    (inputs / "domains.csv").write_text("domain,topics\na.com,1\n")
    (inputs / "h.csv").write_text(text)
    files = {"--visits": "{in}/visits.csv", "--domains": "{in}/domains.csv", option: "{in}/h.csv"}
    invoke_refused(invoke, ["ingest", "--visits", files["--visits"], "--domains",
                            files["--domains"], "--out", "p.parquet", "-q"], inputs, work,
                   named)


def test_a_gzipped_header_without_a_line_break_is_a_table_of_no_rows(inputs: Path,
                                                                     work: Path) -> None:
    import gzip

    (inputs / "h.csv.gz").write_bytes(gzip.compress(b"user_id,epoch_0_topics"))
    invoke_refused(invoke, ["convert", "{in}/h.csv.gz", "c.parquet"], inputs, work,
                   "holds no users")


def test_stats_of_no_users_names_the_option(inputs: Path, work: Path) -> None:
    (inputs / "h.csv").write_text("user_id,epoch_0_topics,epoch_1_topics\n")
    invoke_refused(invoke, ["stats", "--sets", "{in}/h.csv", "--out", "{out}"], inputs, work,
                   "field '--sets': the topic sets hold no users")


def test_an_output_directory_of_spaces_is_shown_as_typed(inputs: Path, work: Path) -> None:
    invoke_refused(invoke, ["stats", "--sets", "{in}/pop.parquet", "--out", "  "], inputs, work,
                   "'  ', field '--out': an output directory name is needed")


# ---- choices given as arrays, lists given as 0-d arrays --------------------------------------


def _choices() -> dict[str, tuple[Any, str]]:
    from topicslab import attacks as atk
    from topicslab import io as tio
    from topicslab import model as tm

    arr = np.array(["a", "b"])
    sets = _sets()
    return {
        "read_sets": (lambda: tio.read_sets("p.parquet", format=arr), "format"),
        "write_sets": (lambda: tio.write_sets("p.parquet", sets, format=arr), "format"),
        "read_traces": (lambda: tio.read_traces("t.parquet", format=arr), "format"),
        "single_weight": (lambda: tm.FullObjective(single_weight=arr), "single_weight"),
        "batch_loss": (lambda: tm.PaperAdam(batch_loss=arr), "batch_loss"),
        "make_variant": (lambda: tm.make_variant(arr), "--model"),  # type: ignore[arg-type]
        "user_ids": (lambda: tio.write_sets_tfrecord("p.tfrecord", sets, user_ids=arr),
                     "user_ids"),
        "make_attack": (lambda: atk.make_attack(["hamming"]), "attack"),  # type: ignore[arg-type]
    }


@pytest.mark.parametrize("name", ["read_sets", "write_sets", "read_traces", "single_weight",
                                  "batch_loss", "make_variant", "user_ids", "make_attack"])
def test_a_choice_given_as_an_array_or_a_list_is_refused(name: str, work: Path) -> None:
    call, field = _choices()[name]
    if name == "read_traces":
        from topicslab import api
        from topicslab import io as tio
        from topicslab.datamodel import SiteTraces

        sets = _sets()
        tio.write_traces("t.parquet", SiteTraces(api.observe(sets.sets, 2, seed=0),
                                                 sets.taxonomy, sets.user_ids))
    if name == "read_sets":
        from topicslab import io as tio

        tio.write_sets("p.parquet", _sets())
    before = tree(work)
    _refused(call, field)
    assert tree(work) == before


@pytest.mark.parametrize("name", ["split", "plan_queries", "compute_statistics", "rhos",
                                  "keywords", "stop_words", "preprocess"])
def test_a_zero_dimensional_array_where_a_list_is_taken_is_refused(name: str) -> None:
    from topicslab import disclosure, dp

    zero = np.array(0.5)
    calls = {
        "split": (lambda: dp.PrivacyBudget(split=zero), "split"),
        "plan_queries": (lambda: dp.plan_queries(2, 5, 469, epsilon=1.0, delta=1e-6,
                                                 split=zero), "split"),
        "compute_statistics": (lambda: dp.compute_statistics(_sets(), epsilon=1.0,
                                                             delta=1e-6, split=zero), "split"),
        "rhos": (lambda: disclosure.DisclosureDesign(rhos=zero), "rho"),  # type: ignore[arg-type]
        "keywords": (lambda: disclosure.make_script(np.array("ab"), "p"), "keywords"),
        "stop_words": (lambda: disclosure.Preprocessor(stop_words=np.array("x")),
                       "stop_words"),
        "preprocess": (lambda: disclosure.preprocess(np.array("a b")), "text"),
    }
    call, field = calls[name]
    _refused(call, field)


def test_lowercase_that_is_no_flag_is_refused() -> None:
    from topicslab import disclosure

    _refused(lambda: disclosure.Preprocessor(lowercase="no"), "lowercase")  # type: ignore[arg-type]
    _refused(lambda: disclosure.tokenize("A b", lowercase=np.array([True])), "lowercase")
    assert disclosure.tokenize("A b", lowercase=False) == ["A", "b"]


# ---- methods of the data objects -------------------------------------------------------------


@pytest.mark.parametrize("value", ["no", float("nan"), -1, 2**70, None, np.array(["x"])],
                         ids=["text", "nan", "minus-one", "huge", "None", "text-array"])
def test_validate_takes_allow_empty_as_a_flag(value: Any) -> None:
    sets = _sets()
    _refused(lambda: sets.validate(allow_empty=value), "allow_empty")
    sets.validate(allow_empty=np.bool_(False))


@pytest.mark.parametrize("method", ["ancestors", "children", "bucket_name"])
@pytest.mark.parametrize("dense", [-1, True, 1.5, "x", None, 469],
                         ids=["minus-one", "True", "fraction", "text", "None", "past-the-end"])
def test_taxonomy_methods_check_their_dense_index(method: str, dense: Any) -> None:
    from topicslab import taxonomy as tx

    tax = tx.load("v2")
    _refused(lambda: getattr(tax, method)(dense), "dense")
    assert tax.ancestors(np.int64(5)) == tax.ancestors(5)


def test_is_known_and_label_check_the_ids_they_are_given() -> None:
    from topicslab import taxonomy as tx

    tax = tx.load("v2")
    for bad in (True, "x", None, np.array([True, False])):
        _refused(lambda bad=bad: tax.is_known(bad), "topic_ids")
    assert tax.is_known([1, 2**70]).tolist() == [True, False]
    assert not tax.is_known(2**70)
    _refused(lambda: tax.label([1]), "topic_id")
    assert tax.label(1) == "/Arts & Entertainment"


def test_model_week_pairs_are_checked() -> None:
    from topicslab import model as tm
    from topicslab import taxonomy as tx

    paper = tm.TypeMixture(np.zeros((2, 4, 5, 469), np.float32), tx.load("v2"))
    _refused(lambda: paper.q_across([(0, 1.7)]), "week_pairs")
    _refused(lambda: paper.q_across(3), "week_pairs")  # type: ignore[arg-type]
    _refused(lambda: paper.statistics("x"), "week_pairs")  # type: ignore[arg-type]
    _refused(lambda: paper.q_across([(0, 1, 2)]), "week_pairs")  # type: ignore[list-item]
    assert paper.q_across([(0, 3)]).shape == (1, 469, 469)


def test_ledger_save_and_domain_mappings_of_the_wrong_kind_are_refused(inputs: Path,
                                                                       work: Path) -> None:
    from topicslab import dp
    from topicslab import io as tio

    ledger = dp.compute_statistics(_sets(), epsilon=1.0, delta=1e-6, seed=0).ledger
    assert ledger is not None
    (work / "f").write_text("x")
    before = tree(work)
    _refused(lambda: ledger.save(work / "f"), "directory")
    _refused(lambda: ledger.save(None), "directory")  # type: ignore[arg-type]
    assert tree(work) == before
    _refused(lambda: tio.DomainTable.from_mapping(None), "mapping")  # type: ignore[arg-type]
    _refused(lambda: tio.DomainTable.from_mapping({"a.com": np.array(1)}), "a.com")


# ---- work that would exhaust the memory ------------------------------------------------------


def test_in_memory_draws_past_the_memory_are_refused_up_front() -> None:
    from topicslab import disclosure, dp
    from topicslab import model as tm
    from topicslab import taxonomy as tx

    model = tm.TypeMixture(np.zeros((2, 4, 5, 469), np.float32), tx.load("v2"))
    err = _refused(lambda: tm.sample(model, 10**13, seed=0), "n_users")
    assert "memory" in err.message and "sample_to_file" in err.message
    assert tm.sample(model, 3, seed=0).n_users == 3
    _refused(lambda: dp.discrete_gaussian(10**14, 1.0, dp.RandomWords(0)), "n")
    from topicslab import population

    _refused(lambda: next(population.generate_chunks(10**13, 2, chunk_users=10**13)),
             "chunk_users")
    _refused(lambda: disclosure.topics_experiment(personas=5, mc_samples=10**13),
             "mc_samples")
    _refused(lambda: disclosure.simulate_personas(
        np.zeros(10**7, dtype=np.int64), 0.1, categories=disclosure.default_categories(),
        model=disclosure.PersonaModel(visits_per_epoch=1e6)), "labels")


@pytest.mark.parametrize("keywords", [{"visits_per_epoch": 1e308}, {"visits_per_epoch": 1e7},
                                      {"activity_sigma": 1e200}],
                         ids=["visits-1e308", "visits-1e7", "sigma"])
def test_persona_models_past_what_can_be_simulated_are_refused(keywords: dict[str, Any]
                                                              ) -> None:
    from topicslab import disclosure

    _refused(lambda: disclosure.PersonaModel(**keywords), "model")


# ---- complex numbers where real ones are read ------------------------------------------------


@pytest.mark.parametrize("name", ["full_information_bound", "matching_bound", "as_channel",
                                  "prior_vulnerability", "posterior_vulnerability",
                                  "asymmetric_weights", "popularity", "first_violation",
                                  "log_ratio", "model_terms"])
def test_complex_numbers_are_refused_not_cut_to_their_real_part(name: str) -> None:
    import warnings

    from topicslab import attacks, disclosure, qif
    from topicslab import model as tm

    c = np.array([[0.5 + 3j, 0.5]])
    calls = {
        "full_information_bound": (lambda: attacks.full_information_bound(c), "P"),
        "matching_bound": (lambda: attacks.matching_bound(c), "P"),
        "as_channel": (lambda: qif.as_channel(c), "c"),
        "prior_vulnerability": (lambda: qif.prior_vulnerability(c[0]), "pi"),
        "posterior_vulnerability": (lambda: qif.posterior_vulnerability([1.0], c), "c"),
        "asymmetric_weights": (lambda: attacks.asymmetric_weights(np.full(3, 0.3 + 1j), 0.5,
                                                                  0.1, 2), "p"),
        "popularity": (lambda: attacks.AsymmetricAttack(popularity=np.full(469, 0.01 + 1j)),
                       "popularity"),
        "first_violation": (lambda: disclosure.first_violation(np.array([[1 + 1j]])), "ln_m"),
        "log_ratio": (lambda: disclosure.log_ratio(np.zeros((2, 1, 1), complex), [0.5, 0.5]),
                      "loglik"),
        "model_terms": (lambda: tm.model_terms(np.zeros((1, 3), complex), np.zeros((1, 3, 3)),
                                               np.zeros((0, 3, 3))), "q_single"),
    }
    call, field = calls[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (NumPy's ComplexWarning was the only word)
        err = _refused(call, field)
    assert "complex" in err.message


def test_the_qif_report_section_takes_figures_as_a_flag() -> None:
    from topicslab import qif
    from topicslab.qif import QIFError

    with pytest.raises(QIFError) as info:
        qif.report_section(figures=np.array([True, False]))  # type: ignore[arg-type]
    assert getattr(info.value, "field", None) == "figures"
