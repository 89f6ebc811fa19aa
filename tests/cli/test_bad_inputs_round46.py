"""Bad input, the forty-sixth independent round: the same path as input and output, the
standard streams and the locale, option values and file names that no terminal or page
shows as typed, a run directory edited by hand, and the public Python API given the wrong
kinds of values (bool, NaN, NumPy scalars, huge integers, generators, bytes).

- Results sent to a full device (``topicslab convert a.parquet b.parquet > /dev/full``):
  "error: no space left on the device; free some space or send the output elsewhere",
  beside the complete ``b.parquet`` the command had written; the line named neither the
  standard output nor the file kept.
- A C locale with Python's UTF-8 mode off (``LC_ALL=C PYTHONUTF8=0``, or
  ``PYTHONIOENCODING=ascii:surrogateescape``): the up-front check of the terminal's encoding
  looked at strict streams only, so ``convert`` wrote its output and then failed printing
  its summary ("the output cannot be shown in the terminal's encoding (ascii)", exit 2 after
  the work).
- An option value holding a byte that is not UTF-8 (``--epsilon $'\\xff'``, ``--attack
  $'ham\\xff'``, ``qif $'--\\xff'``) was shown as Python's surrogate, "cannot read epsilon
  '\\udcff'", a character the user never typed (file names show the byte, ``\\xff``); an option
  that takes a number (``qif --m $'\\xff'``) said "Input should be a valid string, unable to
  parse raw data as a unicode string".
- ``run --sets $'p\\x1b[31m.parquet'``: report.html held the escape sequence raw (an HTML
  parse error, and the sequence itself to a terminal showing the file); ``html.escape``
  leaves control characters as they are.
- ``stats --epsilon '1 0'`` (or ``'1e 3'``, ``'ln 1 0'``): the spaces were squeezed out
  before reading the number, so a budget of 10 (1000, ln 10) was released without a word;
  those of ``ln 3`` and ``ln (3)`` still go.
- A pipe where a run writes a file (``OUT/synth.parquet`` of an earlier run replaced by a
  FIFO): the re-run's cache read it for its fingerprint and waited for a writer for ever.

- ``qif.multi_epoch_capacity(m, s, r, np.int64(3))``, ``parameter_row(..., epochs=np.int64(2))``
  and ``parameter_table``: "TypeError: 'numpy.int64' object is not iterable" (a NumPy integer,
  as arrays give them); ``k=[3]`` was taken as 3, ``[1, 2]`` "too many values to unpack", and
  the field named was 'epochs', not 'k'.
- ``qif.r_for_capacity(target=True)`` was a capacity of 1, text "'<=' not supported",
  ``Decimal('NaN')`` decimal's InvalidOperation, and NaN "capacity nan is not reachable"
  naming no field; ``qif.iba_tight_lower_bound`` took m = NaN or inf (a bound of 1 - r) and
  r = True, and refused with "need m >= 1 and r in [0, 1]", naming no field;
  ``qif.round_half_up(True, 1)`` was 1.0 and ``"1.5"`` "must be real number, not str".
- The QIF channel and prior checks named no argument: ``qif.parallel(c1, c2)``, ``cascade``,
  ``kron``, ``internal_choice`` said "a channel must be a non-empty 2-d matrix" of either
  (a ``QIFError``, no ``ValueError``), and ``prior_vulnerability(5)`` "the prior must be a
  vector of length None".
- ``disclosure.first_violation([])``: NumPy's "attempt to get argmax of an empty sequence";
  ``disclosure.make_script(5, ...)``: "'int' object is not iterable", and keywords given as a
  generator "needs at least one keyword" (the check used it up); ``n_queries=2**70`` drew
  queries until the memory ran out.
- Huge integers: ``qif.distinct_profiles(sets, m=2**70)`` numba's "TypingError: ... Int value
  is too large"; ``dp.default_split(2**70)`` and ``dp.plan_queries(2**70, ...)`` "OverflowError:
  cannot fit 'int' into an index-sized integer"; ``model.week_map(2**70, 2)`` "OverflowError:
  Python int too large to convert to C long", ``week_map(4, 2**70)`` "Maximum allowed size
  exceeded". ``qif.distinct_profiles(sets, weeks=b'\\x01')`` read the bytes as weeks.
- The readers of each format checked none of the options ``read_sets`` checks:
  ``io.read_sets_tfrecord(path, k=-1)`` was NumPy's "negative dimensions are not allowed",
  ``k=2**70`` "Maximum allowed dimension exceeded", ``read_sets_csv(k=True)`` "an integer is
  required", a path of True "expected str, bytes or os.PathLike object, not bool", and
  ``strict`` anything, by its truth value; ``io.iter_sets_tfrecord(batch_size=0)`` (or -1,
  NaN, True) read batches of one record without a word; ``io.write_sets_tfrecord(shards=
  2**70)`` named shards for ever, ``shards="2"`` or NaN were TypeErrors of a comparison.
- ``attacks.match_set_counts`` of a number for ``site1`` or ``queries``: NumPy's "IndexError:
  too many indices for array: array is 0-dimensional"; of a big-endian array (``>i2``):
  numba's "TypingError: non-precise type pyobject"; ``query_chunk="2"``, NaN or 1.5 TypeErrors
  of a comparison, True one query a scan. ``attacks.solve_assignment(n_rows=NaN)`` was NumPy's
  "expected a sequence of integers", ``"2"`` a UFuncTypeError, ``None`` a comparison's
  TypeError, ``2**70`` "Maximum allowed dimension exceeded"; ``dp.bound_contributions(sets,
  m=None)`` "'>' not supported between instances of 'int' and 'NoneType'".

The same contract as ``test_bad_inputs.py``: exit code 2, one line ``error: ...`` naming the
offending file, row or field, no traceback, and nothing written; from Python, an
``InputError`` (a ``ValueError``) naming the argument.
"""

from __future__ import annotations

import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from refusal import check_refused, invoke, invoke_refused, random_profiles, small_population, tree

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for name in ("TOPICSLAB_DEBUG", "PYTHONIOENCODING", "PYTHONUTF8", "LC_ALL", "LANG"):
        env.pop(name, None)
    env.update(extra)
    return env


@pytest.fixture
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("r46-inputs")
    small_population(directory)
    return directory


# ---- the standard output on a full device --------------------------------------------------


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
@pytest.mark.parametrize(("args", "kept"), [
    (["convert", "{in}/pop.parquet", "c.parquet"], "kept the complete c.parquet"),
    (["qif", "--m", "10"], "nothing written"),
], ids=["convert", "qif"])
def test_a_full_standard_output_is_named_with_what_was_kept(
        args: list[str], kept: str, inputs: Path, work: Path) -> None:
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "topicslab",
                               *[a.format(**{"in": inputs}) for a in args]],
                              stdout=full, stderr=subprocess.PIPE, text=True, env=_env(),
                              check=False, cwd=work, timeout=120)
    line = check_refused(proc.stderr, proc.returncode,
                         "the standard output: no space left on the device")
    assert kept in line


# ---- the locale ------------------------------------------------------------------------------


@pytest.mark.parametrize("env", [{"LC_ALL": "C", "PYTHONUTF8": "0"},
                                 {"PYTHONIOENCODING": "ascii:surrogateescape"}],
                         ids=["c-locale", "surrogateescape"])
def test_an_ascii_terminal_of_any_error_handler_is_refused_before_the_work(
        env: dict[str, str], inputs: Path, work: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "topicslab", "convert",
                           str(inputs / "pop.parquet"), "c.parquet"], capture_output=True,
                          text=True, env=_env(**env), check=False, cwd=work, timeout=120)
    check_refused(proc.stderr, proc.returncode, "cannot be shown in the terminal's encoding")
    assert not (work / "c.parquet").exists(), "the output was written before the refusal"


# ---- values and names shown as typed ---------------------------------------------------------


@pytest.mark.parametrize(("args", "shown"), [
    (["qif", "--epochs", "1\udcff"], "'1\\xff'"),
    (["disclosure", "--epsilon", "\udcff"], "'\\xff'"),
    (["qif", "--\udcff"], "--\\xff"),
    (["qif", "--m", "\udcff"], "'--m': '\\xff' is not UTF-8 text"),
    (["qif", "--r=\udcff"], "'--r': '\\xff' is not UTF-8 text"),
], ids=["epochs", "epsilon", "option-name", "number", "number-equals"])
def test_a_value_that_is_not_utf8_is_shown_as_its_byte(args: list[str], shown: str,
                                                      work: Path) -> None:
    before = tree(work)
    res = invoke(args)
    line = check_refused(res.output, res.exit_code, shown)
    assert "udc" not in line and "valid string" not in line
    assert tree(work) == before


@pytest.mark.parametrize("epsilon", ["1 0", "1e 3", "ln 1 0", "1 .5"])
def test_an_epsilon_with_a_space_inside_its_number_is_refused(epsilon: str, inputs: Path,
                                                              work: Path) -> None:
    invoke_refused(invoke, ["stats", "--sets", "{in}/pop.parquet", "--out", "{out}",
                            "--epsilon", epsilon, "--seed", "0"], inputs, work,
                   f"field '--epsilon': cannot read epsilon {epsilon!r}")


def test_the_spaces_of_ln_are_still_read() -> None:
    from topicslab.cli._app import parse_epsilon

    assert parse_epsilon(" ln (3) ") == parse_epsilon("LN 3") == parse_epsilon("ln3")


def test_the_report_shows_control_characters_escaped() -> None:
    from topicslab.report.html import paragraph, render, table

    name = "p<b>\x1b[31m\u202e\x07.parquet"
    page = render(f"title {name}", name, (True, name), []) + table(name, [name], [[name]])
    page += paragraph(name)
    assert not any(c in page for c in ("\x1b", "\u202e", "\x07", "<b>")), page
    assert page.count("p&lt;b&gt;\\x1b[31m\\u202e\\x07.parquet") == 8


def test_a_pipe_where_a_run_writes_a_file_is_refused(inputs: Path, work: Path) -> None:
    """A re-run in an earlier run's directory whose synth.parquet is a pipe waited for ever."""
    out = work / "out"
    out.mkdir()
    (out / "stages.json").write_text("{}")
    os.mkfifo(out / "synth.parquet")
    invoke_refused(invoke, ["run", "--preset", "smoke", "--sets", "{in}/pop.parquet", "--out",
                            "{out}", "-q"], inputs, work, "synth.parquet, field '--out': is a pipe")


# ---- the Python API --------------------------------------------------------------------------


def test_qif_takes_numpy_integers_as_numbers_of_epochs() -> None:
    from topicslab import qif

    three = qif.multi_epoch_capacity(469, 5, 0.05, 3)
    assert qif.multi_epoch_capacity(469, 5, 0.05, np.int64(3)) == three
    assert qif.multi_epoch_max_case_capacity(469, 5, 0.05, np.int32(2)) == pytest.approx(
        qif.multi_epoch_max_case_capacity(469, 5, 0.05, 2))
    assert qif.parameter_row(469, 5, 0.05, np.int64(2))["epochs"] == 2
    assert [row["epochs"] for row in qif.parameter_table(469, 5, 0.05, np.int64(2))] == [2]


_QIF_REFUSALS: list[tuple[str, Any, str]] = [
    ("multi-epoch-list", lambda q: q.multi_epoch_capacity(469, 5, 0.05, [3]), "'k'"),
    ("multi-epoch-float", lambda q: q.multi_epoch_capacity(469, 5, 0.05, 2.5), "'k'"),
    ("max-case-none", lambda q: q.multi_epoch_max_case_capacity(469, 5, 0.05, None), "'k'"),
    ("row-float", lambda q: q.parameter_row(469, 5, 0.05, 1.5), "'epochs'"),
    ("target-true", lambda q: q.r_for_capacity(True, 469, 5), "'target'"),
    ("target-text", lambda q: q.r_for_capacity("50", 469, 5), "'target'"),
    ("target-nan", lambda q: q.r_for_capacity(float("nan"), 469, 5), "'target'"),
    ("target-decimal", lambda q: q.r_for_capacity(Decimal("NaN"), 469, 5), "'target'"),
    ("target-high", lambda q: q.r_for_capacity(1000.0, 469, 5), "'target'"),
    ("iba-m-nan", lambda q: q.iba_tight_lower_bound(float("nan"), 5, 0.05), "'m'"),
    ("iba-m-inf", lambda q: q.iba_tight_lower_bound(float("inf"), 5, 0.05), "'m'"),
    ("iba-m-zero", lambda q: q.iba_tight_lower_bound(0, 5, 0.05), "'m'"),
    ("iba-r-true", lambda q: q.iba_tight_lower_bound(469, 5, True), "'r'"),
    ("iba-r-decimal", lambda q: q.iba_tight_lower_bound(469, 5, Decimal("0.1")), "'r'"),
    ("round-true", lambda q: q.round_half_up(True, 1), "'x'"),
    ("round-text", lambda q: q.round_half_up("1.5", 1), "'x'"),
    ("parallel-c2", lambda q: q.parallel(np.eye(2), 5), "'c2'"),
    ("parallel-c1", lambda q: q.parallel([[0.5, 0.6]], np.eye(2)), "'c1'"),
    ("cascade-d", lambda q: q.cascade(np.eye(2), [[0.5, 0.6], [1.0, 0.0]]), "'d'"),
    ("kron-b", lambda q: q.kron(np.eye(2), "x"), "'b'"),
    ("choice-c2", lambda q: q.internal_choice(np.eye(2), [[-1.0, 2.0]], 0.5), "'c2'"),
    ("prior-scalar", lambda q: q.prior_vulnerability(5), "'pi': the prior must be a vector, "),
    ("uniform-zero", lambda q: q.uniform(0), "'n'"),
    ("profiles-m-huge", lambda q: q.distinct_profiles(
        np.zeros((3, 1, 5), np.int16), m=2**70), "'m'"),
    ("profiles-weeks-bytes", lambda q: q.distinct_profiles(
        np.zeros((3, 2, 5), np.int16), m=469, weeks=b"\x01"), "'weeks'"),
]


@pytest.mark.parametrize(("name", "call", "field"), _QIF_REFUSALS,
                         ids=[c[0] for c in _QIF_REFUSALS])
def test_qif_refuses_wrong_kinds_naming_the_argument(name: str, call: Any, field: str) -> None:
    from topicslab import qif

    with pytest.raises(qif.QIFParameterError, match=f"field {field}") as caught:
        call(qif)
    assert isinstance(caught.value, ValueError)


_API_REFUSALS: list[tuple[str, Any, str]] = [
    ("first-violation-empty", lambda: __import__("topicslab.disclosure").disclosure
     .first_violation([]), "'ln_m'"),
    ("first-violation-no-epoch", lambda: __import__("topicslab.disclosure").disclosure
     .first_violation(np.zeros((3, 0))), "'ln_m'"),
    ("script-number", lambda: __import__("topicslab.disclosure").disclosure
     .make_script(5, "probe"), "'keywords'"),
    ("script-huge", lambda: __import__("topicslab.disclosure").disclosure
     .make_script(["a"], "probe", n_queries=2**70), "'n_queries'"),
    ("split-huge", lambda: __import__("topicslab.dp").dp.default_split(2**70), "'weeks'"),
    ("plan-huge", lambda: __import__("topicslab.dp").dp.plan_queries(
        2**70, 5, 469, epsilon=1.0, delta=1e-6), "'n_weeks'"),
    ("week-map-fitted", lambda: __import__("topicslab.model").model.week_map(2**70, 2),
     "'fitted_weeks'"),
    ("week-map-weeks", lambda: __import__("topicslab.model").model.week_map(4, 2**70),
     "'weeks'"),
]


@pytest.mark.parametrize(("name", "call", "field"), _API_REFUSALS,
                         ids=[c[0] for c in _API_REFUSALS])
def test_the_api_refuses_wrong_kinds_naming_the_argument(name: str, call: Any,
                                                         field: str) -> None:
    from topicslab.errors import InputError

    with pytest.raises(InputError, match=f"field {field}"):
        call()


def test_make_script_takes_keywords_of_a_generator() -> None:
    from topicslab import disclosure

    script = disclosure.make_script((w for w in ["lonely", "sad"]), "probe", n_queries=5)
    assert len(script.steps) >= 3


def test_a_population_for_the_api_tests_is_valid() -> None:
    """(the arrays above are a population's shape: the refusals are of the argument named)"""
    from topicslab import qif

    assert len(qif.distinct_profiles(random_profiles(5, 2), m=469).counts) >= 1


_READER_REFUSALS: list[tuple[str, Any, str]] = [
    ("tfrecord-k-negative", lambda io, d: io.read_sets_tfrecord(d / "p.tfrecord", k=-1), "'k'"),
    ("tfrecord-k-huge", lambda io, d: io.read_sets_tfrecord(d / "p.tfrecord", k=2**70), "'k'"),
    ("tfrecord-path-bool", lambda io, d: io.read_sets_tfrecord(True), "'path'"),
    ("tfrecord-strict-text", lambda io, d: io.read_sets_tfrecord(d / "p.tfrecord",
                                                                 strict="no"), "'strict'"),
    ("csv-k-true", lambda io, d: io.read_sets_csv(d / "p.csv", k=True), "'k'"),
    ("csv-strict-none", lambda io, d: io.read_sets_csv(d / "p.csv", strict=None), "'strict'"),
    ("long-k-float", lambda io, d: io.read_sets_long(d / "p.csv", k=2.5), "'k'"),
    ("profiles-k-zero", lambda io, d: io.read_sets_profiles(d / "p.csv", k=0), "'k'"),
    ("iter-batch-zero", lambda io, d: list(io.iter_sets_tfrecord(d / "p.tfrecord",
                                                                 batch_size=0)), "'batch_size'"),
    ("iter-batch-nan", lambda io, d: list(io.iter_sets_tfrecord(
        d / "p.tfrecord", batch_size=float("nan"))), "'batch_size'"),
    ("iter-batch-true", lambda io, d: list(io.iter_sets_tfrecord(d / "p.tfrecord",
                                                                 batch_size=True)), "'batch_size'"),
    ("write-shards-huge", lambda io, d: io.write_sets_tfrecord(
        d / "o.tfrecord", io.read_sets(d / "p.tfrecord"), shards=2**70), "'shards'"),
    ("write-shards-text", lambda io, d: io.write_sets_tfrecord(
        d / "o.tfrecord", io.read_sets(d / "p.tfrecord"), shards="2"), "'shards'"),
    ("write-shards-zero", lambda io, d: io.write_sets_tfrecord(
        d / "o.tfrecord", io.read_sets(d / "p.tfrecord"), shards=0), "'shards'"),
]


@pytest.mark.parametrize(("name", "call", "field"), _READER_REFUSALS,
                         ids=[c[0] for c in _READER_REFUSALS])
def test_each_format_s_reader_checks_its_options(name: str, call: Any, field: str,
                                                 tmp_path: Path) -> None:
    from topicslab import io
    from topicslab.datamodel import TopicSets
    from topicslab.errors import InputError

    sets = TopicSets(random_profiles(20, 2), "v2", np.arange(20, dtype=np.int64))
    io.write_sets(tmp_path / "p.tfrecord", sets)
    io.write_sets(tmp_path / "p.csv", sets)
    before = tree(tmp_path)
    with pytest.raises(InputError, match=f"field {field}"):
        call(io, tmp_path)
    assert tree(tmp_path) == before


def test_each_format_s_reader_takes_numpy_integers() -> None:
    """(the checks moved from ``read_sets`` keep taking what it took)"""
    import tempfile

    from topicslab import io
    from topicslab.datamodel import TopicSets

    sets = TopicSets(random_profiles(20, 2), "v2", np.arange(20, dtype=np.int64))
    with tempfile.TemporaryDirectory() as d:
        io.write_sets(Path(d) / "p.tfrecord", sets)
        back = io.read_sets_tfrecord(Path(d) / "p.tfrecord", k=np.int64(5), strict=np.bool_(True))
        parts = list(io.iter_sets_tfrecord(Path(d) / "p.tfrecord", batch_size=np.int32(7)))
    assert back.n_users == 20 and [p.n_users for p in parts] == [7, 7, 6]


def _site() -> Any:
    return np.ascontiguousarray(random_profiles(20, 2)[:, :, 0])


_ATTACK_REFUSALS: list[tuple[str, Any, str]] = [
    ("counts-site1-number", lambda a: a.match_set_counts(5, _site()), "site1 must be a 2-D"),
    ("counts-queries-none", lambda a: a.match_set_counts(_site(), None), "queries must be a 2-D"),
    ("counts-chunk-text", lambda a: a.match_set_counts(_site(), _site(), query_chunk="2"),
     "field 'query_chunk'"),
    ("counts-chunk-true", lambda a: a.match_set_counts(_site(), _site(), query_chunk=True),
     "field 'query_chunk'"),
    ("counts-chunk-zero", lambda a: a.match_set_counts(_site(), _site(), query_chunk=0),
     "field 'query_chunk'"),
    ("assign-rows-nan", lambda a: a.solve_assignment(float("nan"), 2, [0], [0], [1.0]),
     "field 'n_rows'"),
    ("assign-cols-text", lambda a: a.solve_assignment(2, "2", [0], [0], [1.0]), "field 'n_cols'"),
    ("assign-rows-none", lambda a: a.solve_assignment(None, 2, [0], [0], [1.0]),
     "field 'n_rows'"),
    ("assign-rows-huge", lambda a: a.solve_assignment(2**70, 2, [0], [0], [1.0]),
     "field 'n_rows'"),
    ("bound-m-none", lambda a: __import__("topicslab.dp").dp.bound_contributions(
        random_profiles(5, 2), None, seed=0), "field 'm'"),
    ("bound-m-text", lambda a: __import__("topicslab.dp").dp.bound_contributions(
        random_profiles(5, 2), "469", seed=0), "field 'm'"),
]


@pytest.mark.parametrize(("name", "call", "named"), _ATTACK_REFUSALS,
                         ids=[c[0] for c in _ATTACK_REFUSALS])
def test_the_attack_kernels_refuse_wrong_kinds_naming_the_argument(name: str, call: Any,
                                                                   named: str) -> None:
    from topicslab import attacks

    with pytest.raises(ValueError, match=named):
        call(attacks)


def test_match_set_counts_reads_big_endian_traces() -> None:
    from topicslab import attacks

    site = _site().astype(np.int16)
    expected = attacks.match_set_counts(site, site[:5])
    big = site.astype(">i2")
    assert (attacks.match_set_counts(big, big[:5]) == expected).all()
    assert (attacks.match_set_counts(site, site[:5], query_chunk=np.int64(2)) == expected).all()
