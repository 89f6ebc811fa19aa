"""Bad input, the forty-eighth independent round: the Python API given arrays of odd shapes
and layouts (no week, no slot, no user; read-only, Fortran-order, negative strides,
memory-mapped, big-endian: those were all taken), NumPy durations, pandas and pyarrow objects
where numbers are read, subclasses of int, float and str, Fractions, generators and work
past the machine's memory or disk.

- A table of no week or of no slot: ``population.empirical_statistics`` of ``[n, 0, k]``
  sets answered NaN for every topic (a RuntimeWarning at most) and
  ``weekly_empirical_statistics`` was "ValueError: max() arg is an empty sequence";
  ``dp.pair_counts`` "zero-size array to reduction operation minimum which has no identity"
  (of ``[0, 0, k]``: "negative dimensions are not allowed"); ``dp.bound_contributions`` and
  ``dp.compute_statistics`` of sets of no slot (``[n, w, 0]``) "cannot reshape array of size
  0 into shape (0)". ``qif.distinct_profiles`` / ``population_tables`` of no user or no week,
  ``qif.cover_levels`` / ``corollary1_interval`` of an empty or malformed profile table: a
  bare ``QIFError`` naming no argument (no ``InputError``).
- A NumPy duration (``np.timedelta64(3, "D")``) is an integer to NumPy (a subclass of
  ``np.signedinteger``): every integer and number check took it, and ``int()`` of it then
  failed ("int() argument must be ... not 'datetime.timedelta'"): ``api.Mechanism(k=...)``,
  ``dp.PrivacyBudget(epsilon=...)``, ``io.read_sets(k=...)``, ``qif.uniform`` ("Cannot
  specify ',' with 's'"), ``population.Stress(interests=...)`` (a UFuncTypeError), and 230
  others; an array of durations reached the compiled kernels ("TypingError: ...
  add(timedelta64[s], int64)").
- A pandas Series or a pyarrow array given where a number, a flag or a name is read: the
  refusal quoted its repr, which spans lines (``got 0    1\\n1    2\\ndtype: int64``).
- ``population.PopulationParams`` with a table of the wrong kind (``popularity=5.0``,
  ``cotags=None``, ``engagement={1: None}``): "AttributeError: 'float' object has no
  attribute 'items'", "'NoneType' object is not iterable"; a value ``"0.5"`` was read as 0.5.
- ``io.SetsWriter(metadata=5)``: "'int' object is not iterable"; ``metadata="x"`` dict()'s
  "dictionary update sequence element #0 has length 1"; ``metadata=0.0`` taken as none.
- ``model.make_variant(cyclic=pd.NA)`` (or a Series): "boolean value of NA is ambiguous";
  ``qif.as_prior(pi, n=pd.Series(...))`` "truth value of a Series is ambiguous", and
  ``n="2"`` "the prior must be a vector of length 2" of a vector of two.
- ``qif.round_half_up(Fraction(1, 3), 2)``: "unsupported format string passed to
  Fraction.__format__", ``round_half_up(1e308, 1)`` decimal's InvalidOperation;
  ``qif.report_section(r=Fraction(1, 20))`` the same format error after the work, and
  ``report_section(sets, m=10)`` ignored m without a word, and its ``weeks`` given as a
  generator was captioned "weeks <generator object <genexpr> at 0x7f...>" in the report;
  ``qif.tables_memory(max_cells=...)`` took anything (None, text, an object);
  ``qif.tradeoff_figure(s_values=5)`` "Value after * must be an iterable", ``s_values=[2.5]``
  drew a set size of 2.5.
- ``attacks.solve_assignment``: plain ValueErrors naming no argument ("rows, cols and weights
  must be 1-D arrays of one length", "dummy needs one finite value per row"), a date among
  the weights float()'s TypeError, and ``batch_edges=np.uint64(2**64 - 1)`` "OverflowError:
  Python int too large to convert to C long".
- ``attacks.risk_curve(sets, weeks=pd.Series(...))``: "The truth value of a Series is
  ambiguous". ``validate.fidelity(attacks=5)``: "'int' object is not iterable", and attacks
  given as a generator were used up by the first check: no risk gap at all, without a word.
- ``model.sample_to_file`` past the machine: TFRecord ``shards=1`` of many users drew the
  shard whole ("MemoryError: Unable to allocate 37.3 GiB"); more shards than the names'
  five digits (by default one a chunk: 10**12 users in chunks of 10) a MemoryError naming
  the shards; ``n_users`` past int64 (``np.uint64(2**64 - 1)``) a MemoryError listing the
  chunks; and users that cannot fit on the disk were drawn and written until it was full
  (the CLI's ``sample`` refuses them up front); ``format=pd.NA`` "boolean value of NA is
  ambiguous".

- An output name that is a symbolic link, given to the Python API's writers
  (``io.write_sets``, ``write_sets_csv``, ``write_sets_tfrecord``, ``SetsWriter``,
  ``qif.figure5(path=...)``): the closing rename replaced the link itself with a regular file
  (a link to ``/dev/stdout``, run as root, became a file holding the output), where the
  CLI's outputs refuse a link.
- A name that is not UTF-8 (``"\\udcff.parquet"``, as Python decodes such bytes) given to
  the Python API: pyarrow's "UnicodeEncodeError: 'utf-8' codec can't encode character"; an
  ``os.PathLike`` whose ``__fspath__`` returns no name: "TypeError: expected
  P.__fspath__() to return str or bytes, not int".
- An output in a directory where no file can be made (``/proc/self/status``) or below a
  file (``afile/x.csv``): "FileNotFoundError: ... '/proc/self/.status.....tmp'" (a name the
  user never gave) and "FileExistsError: [Errno 17] File exists: 'afile'".

From Python, an ``InputError`` naming the argument, one line, and nothing written.
"""

from __future__ import annotations

import dataclasses
import datetime
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from refusal import random_profiles, tree

from topicslab.errors import InputError


def _sets(users: int = 30, weeks: int = 4) -> Any:
    from topicslab.datamodel import TopicSets

    return TopicSets(random_profiles(users, weeks), "v2")


def _refused(call: Any, field: str | None) -> InputError:
    with pytest.raises(InputError) as info:
        call()
    if field is not None:
        assert info.value.field == field, info.value
    assert "\n" not in str(info.value), str(info.value)
    return info.value


# ---- tables of no week, no slot or no user ---------------------------------------------------


def _empty_table_calls() -> dict[str, tuple[Any, str]]:
    from topicslab import dp, population, qif
    from topicslab.datamodel import TopicSets

    no_week = np.zeros((3, 0, 5), dtype=np.int16)
    no_slot = np.zeros((3, 2, 0), dtype=np.int16)
    nobody = np.zeros((0, 2, 5), dtype=np.int16)
    return {
        "empirical_statistics-no-week": (
            lambda: population.empirical_statistics(no_week, 469), "sets"),
        "weekly_empirical_statistics-no-week": (
            lambda: population.weekly_empirical_statistics(no_week, 469), "sets"),
        "pair_counts-no-week": (lambda: dp.pair_counts(no_week, 469), "bounded"),
        "pair_counts-no-slot": (lambda: dp.pair_counts(no_slot, 469), "bounded"),
        "pair_counts-nothing": (lambda: dp.pair_counts(np.zeros((0, 0, 5), np.int16), 469),
                                "bounded"),
        "bound_contributions-no-slot": (
            lambda: dp.bound_contributions(no_slot, 469, seed=0), "sets"),
        "compute_statistics-no-slot": (
            lambda: dp.compute_statistics(TopicSets(no_slot, "v2"), epsilon=1.0, delta=1e-6,
                                          seed=0), "sets"),
        "distinct_profiles-nobody": (lambda: qif.distinct_profiles(nobody, m=469), "sets"),
        "distinct_profiles-no-week": (lambda: qif.distinct_profiles(no_week, m=469), "sets"),
        "population_tables-no-week": (
            lambda: qif.population_tables(TopicSets(no_week, "v2")), "weeks"),
        "population_tables-nobody": (
            lambda: qif.population_tables(TopicSets(nobody, "v2")), "sets"),
        "cover_levels-nobody": (lambda: qif.cover_levels(nobody, 469), "profiles"),
        "cover_levels-no-slot": (lambda: qif.cover_levels(no_slot, 469), "profiles"),
        "cover_levels-a-topic-twice": (
            lambda: qif.cover_levels(np.ones((2, 1, 2), np.int16), 469), "profiles"),
        "corollary1_interval-no-week": (
            lambda: qif.corollary1_interval(no_week, 469, 0.1, 0.5 / 464), "profiles"),
    }


@pytest.mark.parametrize("name", list(_empty_table_calls()))
def test_a_table_of_no_week_no_slot_or_no_user_is_refused_naming_it(name: str) -> None:
    call, field = _empty_table_calls()[name]
    _refused(call, field)


# ---- NumPy durations, which NumPy counts as integers ------------------------------------------


_DAYS = np.timedelta64(3, "D")


def _duration_calls() -> dict[str, tuple[Any, str]]:
    from topicslab import api, attacks, dp, population, qif, validate
    from topicslab import io as tio
    from topicslab import model as tm
    from topicslab.datamodel import TopicSets

    seconds = np.asarray(random_profiles(10, 2)).astype("m8[s]")
    return {
        "Mechanism-k": (lambda: api.Mechanism(k=_DAYS), "k"),
        "Mechanism-p": (lambda: api.Mechanism(p=_DAYS), "p"),
        "PrivacyBudget-epsilon": (lambda: dp.PrivacyBudget(epsilon=_DAYS), "epsilon"),
        "wilson_interval": (lambda: attacks.wilson_interval(_DAYS, 10), "successes"),
        "ReidProtocol-trials": (lambda: attacks.ReidProtocol(trials=_DAYS), "trials"),
        "read_sets-k": (lambda: tio.read_sets("any.parquet", k=_DAYS), "k"),
        "uniform": (lambda: qif.uniform(_DAYS), "n"),
        "round_half_up": (lambda: qif.round_half_up(_DAYS, 1), "x"),
        "distinct_topics-weeks": (lambda: validate.distinct_topics(_sets(), weeks=_DAYS),
                                  "weeks"),
        "distinct_profiles-weeks": (lambda: qif.distinct_profiles(_sets(), weeks=_DAYS),
                                    "weeks"),
        "Stress-interests": (lambda: population.Stress(interests=_DAYS), "--interests"),
        "PaperTypes-types": (lambda: tm.PaperTypes(types=_DAYS), "types"),
        "generate-users": (lambda: population.generate(_DAYS), "n_users"),
        "profile_anonymity-array": (lambda: attacks.profile_anonymity(seconds), "sets"),
        "TopicSets-array": (lambda: TopicSets(seconds, "v2"), "sets"),
        "match_set_counts-array": (
            lambda: attacks.match_set_counts(seconds[:, 0], seconds[:2, 0]), "site1"),
    }


@pytest.mark.parametrize("name", list(_duration_calls()))
def test_a_numpy_duration_is_no_integer(name: str, work: Path) -> None:
    call, field = _duration_calls()[name]
    _refused(call, field)
    assert tree(work) == {}


# ---- objects whose repr spans lines ------------------------------------------------------------


def _several_lines() -> dict[str, Any]:
    import pandas as pd
    import pyarrow as pa

    return {"series": pd.Series([1, 2]), "pyarrow": pa.array([1, 2])}


def _quoting_calls(value: Any) -> dict[str, tuple[Any, str]]:
    from topicslab import api, attacks, disclosure, dp, qif, taxonomy
    from topicslab import io as tio
    from topicslab import model as tm

    return {
        "Mechanism-k": (lambda: api.Mechanism(k=value), "k"),
        "Mechanism-p": (lambda: api.Mechanism(p=value), "p"),
        "Mechanism-taxonomy": (lambda: api.Mechanism(taxonomy=value), "taxonomy"),
        "PrivacyBudget-accounting": (lambda: dp.PrivacyBudget(accounting=value), "accounting"),
        "ReidProtocol-setting": (lambda: attacks.ReidProtocol(setting=value), "setting"),
        "make_attack": (lambda: attacks.make_attack(value), "attack"),
        "read_sets-format": (lambda: tio.read_sets("any.parquet", format=value), "format"),
        "read_sets-strict": (lambda: tio.read_sets("any.parquet", strict=value), "strict"),
        "FullObjective-lr": (lambda: tm.FullObjective(lr=value), "lr"),
        "FullObjective-stop_at_noise": (lambda: tm.FullObjective(stop_at_noise=value),
                                        "stop_at_noise"),
        "PaperAdam-batch_loss": (lambda: tm.PaperAdam(batch_loss=value), "batch_loss"),
        "make_variant": (lambda: tm.make_variant(value), "--model"),
        "resolve_device": (lambda: tm.resolve_device(value), "device"),
        "round_half_up": (lambda: qif.round_half_up(value, 1), "x"),
        "uniform": (lambda: qif.uniform(value), "n"),
        "make_script-probe": (lambda: disclosure.make_script(["a"], value), "probe"),
        "Preprocessor-language": (lambda: disclosure.Preprocessor(language=value), "language"),
        "taxonomy.load": (lambda: taxonomy.load(value), None),
    }


# (round_half_up cut the repr to 40 characters, before a pyarrow array's first line break)
@pytest.mark.parametrize(("kind", "name"), [
    (kind, name) for name in _quoting_calls(None) for kind in ("series", "pyarrow")
    if (kind, name) != ("pyarrow", "round_half_up")])
def test_a_value_whose_repr_spans_lines_is_quoted_on_one_line(kind: str, name: str) -> None:
    from topicslab.errors import TopicsLabError

    call, field = _quoting_calls(_several_lines()[kind])[name]
    with pytest.raises(TopicsLabError) as info:
        call()
    assert "\n" not in str(info.value), str(info.value)
    if field is not None:
        assert getattr(info.value, "field", None) == field, info.value


# ---- population parameters, SetsWriter metadata ----------------------------------------------


@pytest.mark.parametrize(("change", "field"), [
    ({"popularity": 5.0}, "popularity"),
    ({"explore_popularity": None}, "explore_popularity"),
    ({"popularity": {1: "0.5"}}, "popularity.1"),
    ({"engagement": {1: None}}, "engagement.1"),
    ({"cotags": None}, "cotags"),
    ({"affinities": 5.0}, "affinities"),
], ids=["popularity-number", "explore-None", "value-text", "value-None", "cotags-None",
        "affinities-number"])
def test_population_parameters_with_a_table_of_the_wrong_kind_are_refused(
        change: dict[str, Any], field: str) -> None:
    from topicslab import population

    params = dataclasses.replace(population.load_reference("v2"), **change)
    _refused(lambda: population.generate(10, 1, seed=0, params=params), field)


@pytest.mark.parametrize("metadata", [5, "x", 0.0, ()], ids=["int", "text", "zero", "tuple"])
def test_sets_writer_metadata_must_be_a_dict(metadata: Any, work: Path) -> None:
    from topicslab import io as tio

    _refused(lambda: tio.SetsWriter("p.parquet", "v2", 5, 4, metadata), "metadata")
    assert tree(work) == {}


# ---- flags and counts read for their truth before they were checked ----------------------------


def test_make_variant_cyclic_and_as_prior_n_are_checked_before_they_are_used() -> None:
    import pandas as pd

    from topicslab import model as tm
    from topicslab import qif

    for cyclic in (pd.NA, pd.Series([True])):
        _refused(lambda c=cyclic: tm.make_variant("persistent", cyclic=c), "cyclic")
    for n in (pd.Series([2]), "2", 2.5):
        _refused(lambda n=n: qif.as_prior([0.5, 0.5], n=n), "n")
    assert tm.make_variant("paper", types=5, cyclic=np.True_).cyclic
    assert qif.as_prior([0.5, 0.5], n=np.int64(2)).shape == (2,)


# ---- QIF ---------------------------------------------------------------------------------------


def test_round_half_up_takes_any_real_number() -> None:
    from topicslab import qif

    assert qif.round_half_up(Fraction(1, 3), 2) == 0.33
    assert qif.round_half_up(1e308, 1) == 1e308
    assert qif.round_half_up(-1e300, 2) == -1e300
    assert qif.round_half_up(66.415, 2) == 66.42  # (as before)
    _refused(lambda: qif.round_half_up(10**400, 1), "x")


def test_report_section_reads_r_checked_and_refuses_an_m_it_would_ignore() -> None:
    from topicslab import qif

    sets = _sets()
    same = qif.report_section(sets, r=Fraction(1, 20), epochs=(1,), figures=False)
    assert same["r"] == 0.05 and isinstance(same["r"], float)
    for m in (10, object()):
        _refused(lambda m=m: qif.report_section(sets, m=m, epochs=(1,), figures=False), "m")


def test_report_section_captions_the_weeks_it_read() -> None:
    from topicslab import qif

    sets = _sets()
    listed = qif.report_section(sets, epochs=(1,), figures=False, weeks=[0, 1])
    for weeks in ((w for w in [0, 1]), np.array([0, 1])):
        given = qif.report_section(sets, epochs=(1,), figures=False, weeks=weeks)
        assert given["html"] == listed["html"]
    assert "weeks [0, 1] as one profile" in listed["html"]


@pytest.mark.parametrize("max_cells", [None, "5", object(), 0],
                         ids=["None", "text", "object", "zero"])
def test_tables_memory_checks_max_cells(max_cells: Any) -> None:
    from topicslab import qif

    _refused(lambda: qif.tables_memory(100, 469, 2, 5, max_cells=max_cells), "max_cells")


@pytest.mark.parametrize("s_values", [5, [2.5], ["3"]], ids=["int", "fraction", "text"])
def test_tradeoff_figure_takes_a_list_of_set_sizes(s_values: Any) -> None:
    from topicslab import qif

    _refused(lambda: qif.tradeoff_figure(50, s_values=s_values, r_points=3, n_max=3),
             "s_values")


# ---- attacks -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("change", "field"), [
    ({"rows": [0]}, "weights"),
    ({"weights": [1.0]}, "weights"),
    ({"weights": [datetime.datetime(2024, 1, 1), 1.0]}, "weights"),
    ({"weights": [np.nan, 1.0]}, "weights"),
    ({"rows": [0, 5]}, "rows"),
    ({"cols": [0, 5]}, "cols"),
    ({"dummy": [1.0]}, "dummy"),
    ({"dummy": [datetime.datetime(2024, 1, 1), 1.0]}, "dummy"),
    ({"batch_edges": np.uint64(2**64 - 1)}, "batch_edges"),
], ids=["rows-length", "weights-length", "weights-date", "weights-nan", "rows-range",
        "cols-range", "dummy-length", "dummy-date", "batch_edges-uint64"])
def test_solve_assignment_names_the_argument(change: dict[str, Any], field: str) -> None:
    from topicslab import attacks

    args = {"rows": [0, 1], "cols": [0, 1], "weights": [1.0, 1.0], "dummy": None,
            "batch_edges": 10, **change}
    _refused(lambda: attacks.solve_assignment(
        2, 2, args["rows"], args["cols"], args["weights"], dummy=args["dummy"],
        batch_edges=args["batch_edges"]), field)
    assert np.array_equal(attacks.solve_assignment(2, 2, [0, 1], [0, 1], [1.0, 1.0])[0],
                          [0, 1])


def test_risk_curve_weeks_as_a_pandas_series() -> None:
    import pandas as pd

    from topicslab import attacks

    _refused(lambda: attacks.risk_curve(_sets(), weeks=pd.Series([], dtype=int)), "weeks")


def test_fidelity_attacks_are_a_sequence_and_a_generator_is_read_once() -> None:
    from topicslab import validate

    sets = _sets()
    _refused(lambda: validate.fidelity(sets, sets, attacks=5, weeks=[1], trials=1), "attacks")
    options = {"weeks": [1], "trials": 1, "targets": 5, "seed": 0}
    listed = validate.fidelity(sets, sets, attacks=["hamming"], **options)
    generated = validate.fidelity(sets, sets, attacks=(a for a in ["hamming"]), **options)
    assert [g.attack for g in generated.gaps] == [g.attack for g in listed.gaps] == ["hamming"]


# ---- sampling past the machine -----------------------------------------------------------------


def _model() -> Any:
    from topicslab import taxonomy as tx
    from topicslab.model import TypeMixture

    tax = tx.load("v2")
    rng = np.random.default_rng(0)
    return TypeMixture(rng.normal(size=(2, 1, 5, tax.size)).astype(np.float32), tax,
                       {"weeks": 1})


@pytest.mark.parametrize(("options", "field"), [
    ({"n_users": 2**64 - 1}, "users"),
    ({"n_users": np.uint64(2**64 - 1)}, "users"),
    ({"n_users": 100_000, "format": "tfrecord", "shards": 1, "memory": 10**6}, "shards"),
    ({"n_users": 200_000, "format": "tfrecord", "chunk_users": 1}, "chunk_users"),
    ({"n_users": 100_000, "disk": 1000}, "users"),
    ({"n_users": 10, "format": "NA"}, "format"),
], ids=["past-int64", "uint64", "one-shard", "shard-names", "disk", "format-NA"])
def test_sample_to_file_refuses_work_past_the_machine_up_front(
        options: dict[str, Any], field: str, work: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    import pandas as pd

    from topicslab import _resources
    from topicslab import model as tm

    options = dict(options)
    if "memory" in options:
        monkeypatch.setattr(_resources, "available_memory", lambda m=options.pop("memory"): m)
    if "disk" in options:
        monkeypatch.setattr(_resources, "available_disk", lambda p, d=options.pop("disk"): d)
    name = "s.tfrecord" if options.get("format") == "tfrecord" else "s.parquet"
    if options.get("format") == "NA":
        options["format"] = pd.NA
    _refused(lambda: tm.sample_to_file(_model(), name, seed=0, progress=False, **options),
             field)
    assert tree(work) == {}


# ---- output names: links, names that are not UTF-8, directories where no file can be made ----


def _writers() -> dict[str, Any]:
    from topicslab import io as tio
    from topicslab import qif

    sets = _sets(10, 2)
    return {
        "write_sets": lambda p: tio.write_sets(p + ".parquet", sets),
        "write_sets-csv": lambda p: tio.write_sets(p + ".csv", sets),
        "write_sets_csv": lambda p: tio.write_sets_csv(p + ".csv", sets),
        "write_sets_tfrecord": lambda p: tio.write_sets_tfrecord(p + ".tfrecord", sets),
        "SetsWriter": lambda p: tio.SetsWriter(p + ".parquet", "v2", 5, 2).close(),
        "figure5": lambda p: qif.figure5(n_max=3, path=p + ".png"),
    }


@pytest.mark.parametrize("name", list(_writers()))
def test_a_writer_refuses_a_link_where_it_writes_a_file(name: str, work: Path) -> None:
    import os

    target = {"write_sets": ".parquet", "SetsWriter": ".parquet", "figure5": ".png",
              "write_sets_tfrecord": ".tfrecord"}.get(name, ".csv")
    (work / "real").write_text("kept")
    os.symlink("real", work / f"out{target}")
    before = tree(work)
    err = _refused(lambda: _writers()[name]("out"), None)
    assert "symbolic link" in err.message
    assert tree(work) == before and os.path.islink(work / f"out{target}")


@pytest.mark.parametrize("name", list(_writers()))
def test_a_writer_refuses_a_name_that_is_not_utf8(name: str, work: Path) -> None:
    err = _refused(lambda: _writers()[name]("\udcffout"), "path")
    assert "not valid UTF-8" in err.message and err.file is not None and "\\xff" in err.file
    assert tree(work) == {}


class _NoName:
    def __fspath__(self) -> Any:
        return 5


def test_a_path_like_that_gives_no_name_is_refused(work: Path) -> None:
    from topicslab import io as tio

    for call in (lambda: tio.write_sets(_NoName(), _sets(10, 2)),  # type: ignore[arg-type]
                 lambda: tio.read_sets(_NoName())):  # type: ignore[arg-type]
        err = _refused(call, "path")
        assert "expected a file or directory name" in err.message
    assert tree(work) == {}


@pytest.mark.parametrize("name", ["write_sets_csv", "write_sets_tfrecord", "figure5"])
def test_an_output_where_no_file_can_be_made_is_refused(name: str, work: Path) -> None:
    (work / "afile").write_text("kept")
    before = tree(work)
    err = _refused(lambda: _writers()[name]("afile/sub/out"), None)
    assert "afile is a file" in err.message
    err = _refused(lambda: _writers()[name]("/proc/self/status"), None)
    assert "is not writable" in err.message
    assert tree(work) == before
