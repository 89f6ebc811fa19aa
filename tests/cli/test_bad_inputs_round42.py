"""Bad input, the forty-second independent round: names a terminal cannot show, valid but
extreme populations, and the public Python API's helpers no round had tried.

- A file name holding a control character or a Unicode line break, given as an input that
  does not exist (or any refused input): the error line carried it as it came. An escape
  sequence reached the terminal (``a\\x1b[2Jb.parquet`` cleared the screen under the
  line), a tab was shown as spaces and a vertical tab, form feed, bell or backspace as
  nothing (the line named ``ab.parquet``, another file), ``\\x85``, ``\\x1c``..``\\x1e``,
  ``\\u2028`` and ``\\u2029`` broke it in two (Python's ``splitlines``, and log readers),
  and a right-to-left override (``\\u202e``) showed the rest of the line in reverse. Only
  ``\\n`` and ``\\r`` were escaped.
- The same characters in an output name (``population --out $'p\\x1b[31m.parquet'``,
  ``stats --out``, ``convert`` TARGET, ``reid --json``, ``qif --plot``, ...): the file was
  written without a word, and the command's summary printed the escape sequence to the
  terminal, where a line break in an output name is refused.
- ``attacks.optimal_matching_accuracy`` of a matrix of a few thousand users: the refusal
  computed the exact number of steps (m^n n! n, an integer of tens of thousands of digits)
  and failed to write it ("ValueError: Exceeds the limit (4300 digits) for integer string
  conversion"); ``max_work`` was not checked.
- ``io.detect_taxonomy`` cast what it was given: 1.5 read as topic 1, NaN as an arbitrary
  id (a RuntimeWarning), text and None NumPy's ValueError / TypeError.
- ``model.n_terms(0, 469)`` counted -219,961 terms, ``n_terms(1.5, 469)`` 275,303.0 and a
  negative ``n_pairs`` was taken; ``model.model_terms`` of statistics of another shape was
  NumPy's IndexError ("too many indices for array").
- ``qif.generalisation_channel`` of no users was NumPy's reshape ValueError, of text an
  IndexError, and NaN or fractional profiles were profiles of their own.
- ``disclosure.preprocess`` / ``Preprocessor`` of None, a number or bytes were a TypeError
  or an AttributeError (``tokenize`` refuses them), ``Preprocessor(min_length=1.5)`` was
  taken and ``"2"`` a TypeError; ``disclosure.parse_script(None)`` an AttributeError.
- ``attacks.trial_api_seed(-1, 0)`` was NumPy's ValueError, ``1.5`` a TypeError and ``"1"``
  a seed of its own; ``attacks.split_sites`` of no ``SiteTraces`` and ``dp.ledger_tables``
  of no ``PrivacyLedger`` AttributeErrors, ``dp.load_ledger(None)`` a TypeError;
  ``attacks.make_attack("hamming", bogus=1)`` the factory's TypeError; ``attacks.
  subset_scores`` raised plain ValueErrors; ``qif.internal_choice`` / ``external_choice``
  with ``r="0.5"`` a TypeError.

- ``attacks.profile_anonymity`` of the library's own ``TopicSets`` (which ``measure_risk`` and
  ``reid_bounds`` take): "field 'sets': sets must be an integer array, got dtype object".
- The Python API's readers and writers given a path that is no name -- bytes, an open file
  (``read_sets(open("pop.parquet", "rb"))``), a ``BytesIO``, a file descriptor, ``None``: Python's
  TypeError deep inside ("a bytes-like object is required, not 'str'", "expected str, bytes
  or os.PathLike object, not BufferedReader"); a NUL character in an output name was
  "ValueError: embedded null byte" (``write_sets``, ``save_statistics``, ``convert_sets``).

- A name that reads as rich's markup: a directory whose name ends in ``[`` (``o[``), and so an
  output ``o[/]x.parquet``, or an input so named for ``qif --sets``: the command did its work,
  wrote its output and then failed printing its summary ("error: MarkupError: closing tag
  '[/]' at position 24 has nothing to close", exit code 1) -- ``population``, ``observe``,
  ``stats``, ``convert``, ``fit``, ``sample``, ``attack-train``; a name holding ``[bold]`` was
  shown without it (``qif --sets 'p[bold]x.parquet'``: "px.parquet", in bold).
- Text from a file read as markup: ``stats --explain`` of a privacy ledger whose free text
  (``neighbouring_relation``, a mechanism's ``query``, ``noise.source``, ``created``, the
  audit's fingerprint, ...; another tool's ledger, or one edited by hand) holds ``[/]``:
  "error: MarkupError: closing tag '[/]' at position 1 has nothing to close", exit code 1,
  and an escape sequence there reached the terminal; ``disclosure --script`` of a script
  whose probe or keywords hold ``[/]``: the same MarkupError.
- ``stats`` of an input of one week, ``--weeks`` not given: "field '--weeks': weeks must be
  distinct values in 0..0, got [0, 1]: the input has 1 weeks", a value the user never typed
  (the default), and not what to do.

The same contract as ``test_bad_inputs.py``: exit code 2, one line ``error: ...`` naming the
offending file, row or field, no traceback, and nothing written; from Python, an
``InputError`` naming the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from refusal import (
    check_refused,
    fit_small_model,
    invoke,
    population_and_stats,
    random_profiles,
    refusal_test,
    small_population,
)

# ---- names a terminal cannot show --------------------------------------------------------

#: (id, the character, how the error line must show it)
CONTROL = [
    ("escape-sequence", "\x1b[2J", "\\x1b[2J"),
    ("tab", "\t", "\\t"),
    ("vertical-tab", "\x0b", "\\x0b"),
    ("form-feed", "\x0c", "\\x0c"),
    ("bell", "\x07", "\\x07"),
    ("backspace", "\x08", "\\x08"),
    ("next-line", "\x85", "\\x85"),
    ("file-separator", "\x1c", "\\x1c"),
    ("line-separator", "\u2028", "\\u2028"),
    ("paragraph-separator", "\u2029", "\\u2029"),
    ("right-to-left-override", "\u202e", "\\u202e"),
    ("delete", "\x7f", "\\x7f"),
]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 users (v2, 4 weeks) as ``pop.parquet`` (and of one week, ``pop1w.parquet``); a
    visits log whose second URL's host holds
    an escape sequence (``visits-esc.csv``) and one without (``visits.csv``); a domain table
    (``domains.csv``) and one whose second domain holds an escape sequence
    (``domains-esc.csv``)."""
    from topicslab import io as tio
    from topicslab.datamodel import TopicSets

    d = small_population(tmp_path_factory.mktemp("round42"))
    tio.write_sets(d / "pop1w.parquet", TopicSets(random_profiles(300, 1), "v2",
                                                  np.arange(300, dtype=np.int64)))
    head = "user_id,timestamp,url\n1,2024-01-01T10:00:00,https://example.com/\n"
    (d / "visits.csv").write_text(head + "2,2024-01-08T10:00:00,https://news.com/\n",
                                  encoding="utf-8")
    (d / "visits-esc.csv").write_text(head + "2,2024-01-08T10:00:00,"
                                      "https://news\x1b]0;title\x07.com/x\n", encoding="utf-8")
    (d / "visits-host-esc.csv").write_text("user_id,timestamp,host\n1,2024-01-01T10:00:00,"
                                           "exa\x1b[2Jmple.com\n", encoding="utf-8")
    (d / "domains.csv").write_text("domain,topics\nexample.com,1\nnews.com,243\n",
                                   encoding="utf-8")
    (d / "domains-esc.csv").write_text("domain,topics\nexample.com,1\nnews\x1b[31m.com,243\n",
                                       encoding="utf-8")
    return d


@pytest.mark.parametrize(("char", "shown"), [c[1:] for c in CONTROL],
                         ids=[c[0] for c in CONTROL])
@pytest.mark.parametrize("command", [
    ["stats", "--sets", "a{c}b.parquet", "--out", "st"],
    ["convert", "a{c}b.parquet", "o.csv"],
    ["fit", "--stats", "a{c}b", "--out", "m"],
    ["population", "--params", "a{c}b.json", "--out", "p.parquet"],
], ids=["stats-sets", "convert-source", "fit-stats", "population-params"])
def test_a_control_character_in_an_input_name_is_shown_escaped(
        work: Path, command: list[str], char: str, shown: str) -> None:
    """The line named the file with the character as it came: an escape sequence reached
    the terminal, a tab became spaces, a form feed or bell nothing, ``\\u2028`` a second
    line."""
    res = invoke([a.format(c=char) for a in command])
    line = check_refused(res.output, res.exit_code, f"a{shown}b")
    assert line.isprintable(), ascii(line)
    assert list(work.iterdir()) == []


def _output_cases() -> list[tuple[str, list[str], str]]:
    cases = []
    for ident, char, shown in CONTROL:
        cases.append((f"population-out-{ident}",
                      ["population", "--users", "10", "--weeks", "2", "--out",
                       f"{{out}}{char}.parquet"],
                      "field '--out': the name holds the control character "
                      + shown.removesuffix("[2J")))
    return [
        *cases,
        ("stats-out", ["stats", "--sets", "{in}/pop.parquet", "--out", "{out}\x1b[31m"],
         "field '--out': the name holds the control character \\x1b"),
        ("convert-target", ["convert", "{in}/pop.parquet", "{out}\u2028.csv"],
         "field 'TARGET': the name holds the control character \\u2028"),
        ("reid-json", ["reid", "--sets", "{in}/pop.parquet", "--targets", "5", "--trials", "1",
                       "--no-progress", "--json", "{out}\t.json"],
         "field '--json': the name holds the control character \\t"),
        ("qif-plot", ["qif", "--plot", "{out}\u202e.png"],
         "field '--plot': the name holds the control character \\u202e"),
        ("observe-out", ["observe", "--sets", "{in}/pop.parquet", "--out", "{out}\x0c.parquet"],
         "field '--out': the name holds the control character \\x0c"),
        ("disclosure-figures", ["disclosure", "-q", "--figures", "{out}\x07"],
         "field '--figures': the name holds the control character \\x07"),
        # file contents: a host or a domain holding an escape sequence is no host or domain
        # (it was counted as a domain, and the summary printed the sequence)
        ("ingest-url-host-escape", ["ingest", "--visits", "{in}/visits-esc.csv", "--domains",
                                    "{in}/domains.csv", "--out", "{out}.parquet"],
         "visits-esc.csv, row 2, field 'url': no host name in 'https://news\\x1b]0;title"
         "\\x07.com/x'"),
        ("ingest-host-escape", ["ingest", "--visits", "{in}/visits-host-esc.csv", "--domains",
                                "{in}/domains.csv", "--out", "{out}.parquet"],
         "visits-host-esc.csv, row 1, field 'host': no host name in 'exa\\x1b[2Jmple.com'"),
        ("ingest-domain-escape", ["ingest", "--visits", "{in}/visits.csv", "--domains",
                                  "{in}/domains-esc.csv", "--out", "{out}.parquet"],
         "domains-esc.csv, row 2, field 'domain': not a domain name: 'news\\x1b[31m.com'"),
        # an input of one week, --weeks not given: "got [0, 1]", a value nobody typed
        ("stats-one-week-default-weeks", ["stats", "--sets", "{in}/pop1w.parquet", "--out",
                                          "{out}"],
         "the input has 1 week; --weeks is 0,1 when not given (the week pair of q_across): "
         "give --weeks 0"),
    ]


test_a_name_or_value_a_terminal_cannot_show_is_refused = refusal_test(_output_cases())


def test_printable_keeps_what_a_terminal_shows() -> None:
    """Non-ASCII text that a terminal shows (the messages' arrows and Greek letters, a
    name in another script) is kept as it is."""
    from topicslab._paths import printable

    text = "ε = ln 3 → 1.1, ≥ 2, données_週.parquet"
    assert printable(text) == text
    assert printable("a\x1b[2J\t\u2028\udcffb") == "a\\x1b[2J\\t\\u2028\\udcffb"


# ---- the Python API ----------------------------------------------------------------------


def _raises(call: Any, field: str, *args: Any, **kwargs: Any) -> str:
    from topicslab.errors import InputError

    with pytest.raises(InputError) as exc:
        call(*args, **kwargs)
    assert f"field {field!r}" in str(exc.value), str(exc.value)
    return str(exc.value)


def test_the_exact_matching_optimum_of_a_large_matrix_is_refused_quickly() -> None:
    """The refusal's own message failed: "Exceeds the limit (4300 digits) for integer string
    conversion" (a ValueError)."""
    from topicslab.attacks import optimal_matching_accuracy

    message = _raises(optimal_matching_accuracy, "P", np.eye(3000))
    assert "about 10^19565 steps" in message
    _raises(optimal_matching_accuracy, "P", np.full((200_000, 2), 0.5))
    _raises(optimal_matching_accuracy, "max_work", np.eye(2), max_work="x")
    _raises(optimal_matching_accuracy, "max_work", np.eye(2), max_work=0)
    assert optimal_matching_accuracy(np.eye(3)) == pytest.approx(1.0)


@pytest.mark.parametrize("ids", [[1.5], [np.nan, 1.0], "abc", None], ids=["fraction", "nan",
                                                                        "text", "none"])
def test_detect_taxonomy_refuses_what_is_no_topic_id(ids: Any) -> None:
    """1.5 was read as topic 1, NaN cast to an arbitrary id; text and None were NumPy's
    errors."""
    from topicslab.io import detect_taxonomy

    _raises(detect_taxonomy, "topic_ids", ids)
    # whole numbers as floats, and no ids at all, are read as before
    assert detect_taxonomy(np.array([1.0, 629.0])).version == "v2"
    assert (detect_taxonomy(np.array([1.0, 349.0])).version
            == detect_taxonomy([1, 349]).version)
    assert detect_taxonomy([]).version == "v2"


@pytest.mark.parametrize(("args", "field"), [
    ((0, 469), "r"), ((-1, 469), "r"), ((1.5, 469), "r"), (("2", 469), "r"),
    ((2, 0), "m"), ((2, 469, -1), "n_pairs"),
])
def test_n_terms_refuses_a_count_of_no_terms(args: tuple[Any, ...], field: str) -> None:
    """r = 0 counted -219,961 terms, 1.5 a fraction of a term."""
    from topicslab.model import n_terms

    _raises(n_terms, field, *args)
    assert n_terms(4, 469) == 1_100_743


def test_model_terms_refuses_statistics_of_another_shape() -> None:
    """NumPy's IndexError: too many indices for array."""
    from topicslab.model import model_terms

    _raises(model_terms, "q_within", np.ones(5), np.ones((4, 4)), np.ones((5, 5)))
    _raises(model_terms, "q_within", np.ones((2, 5)), np.ones((2, 4, 4)), np.ones((1, 5, 5)))
    assert model_terms(np.ones((2, 3)), np.ones((2, 3, 3)), np.ones((1, 3, 3))).shape == (21,)


@pytest.mark.parametrize("profiles", [np.zeros((0, 5), dtype=np.int64), "x",
                                      np.array([[np.nan, 1.0]]), np.array([[0.5, 1.0]])],
                         ids=["no-users", "text", "nan", "fraction"])
def test_the_generalisation_channel_refuses_what_is_no_profile(profiles: Any) -> None:
    from topicslab.qif import generalisation_channel

    _raises(generalisation_channel, "profiles", profiles)


@pytest.mark.parametrize("text", [None, 5, b"advert text"], ids=["none", "number", "bytes"])
def test_preprocess_refuses_what_is_no_text(text: Any) -> None:
    """``tokenize`` refused these; ``preprocess`` was a TypeError or an AttributeError."""
    from topicslab.disclosure import preprocess

    _raises(preprocess, "text", text)
    assert preprocess(["treatments", "of"]) == ["treatment"]


@pytest.mark.parametrize("value", [1.5, "2", True])
def test_the_preprocessor_refuses_a_length_that_is_no_count(value: Any) -> None:
    from topicslab.disclosure import Preprocessor

    _raises(Preprocessor, "min_length", min_length=value)


def test_parse_script_refuses_what_is_no_text() -> None:
    from topicslab.disclosure import parse_script

    _raises(parse_script, "text", None)
    _raises(parse_script, "text", b"! probe: x")


@pytest.mark.parametrize(("args", "field"), [((-1, 0), "seed"), ((1.5, 0), "seed"),
                                             (("1", 0), "seed"), ((0, -2), "trial")])
def test_the_trial_seed_refuses_what_is_no_seed(args: tuple[Any, ...], field: str) -> None:
    from topicslab.attacks import trial_api_seed

    _raises(trial_api_seed, field, *args)


def test_the_attack_helpers_refuse_objects_of_the_wrong_kind() -> None:
    from topicslab import attacks, dp, qif

    _raises(attacks.split_sites, "traces", None)
    _raises(attacks.split_sites, "traces", np.zeros((2, 2)))
    _raises(attacks.make_attack, "options", "hamming", bogus=1)
    _raises(attacks.subset_scores, "gains", "x")
    _raises(attacks.subset_scores, "gains", np.zeros(3))
    _raises(dp.ledger_tables, "ledger", None)
    _raises(dp.load_ledger, "path", None)
    _raises(qif.external_choice, "r", np.eye(2), np.eye(2), "0.5")
    _raises(qif.internal_choice, "r", np.eye(2), np.eye(2), "0.5")
    with pytest.raises(ValueError):  # (subset_scores' errors stay ValueErrors)
        attacks.subset_scores(np.zeros(3))


# ---- the Python API's readers and writers given a path that is no name -------------------


def _not_names(tmp: Path) -> list[tuple[str, Any]]:
    import io

    opened = (tmp / "pop.parquet").open("rb")
    return [("bytes", b"pop.parquet"), ("open-file", opened), ("bytesio", io.BytesIO(b"x")),
            ("descriptor", opened.fileno()), ("none", None), ("list", ["pop.parquet"])]


def test_the_readers_refuse_a_path_that_is_no_name(tmp_path: Path) -> None:
    """Each was Python's TypeError, from deep in the reader."""
    from topicslab import dp, model
    from topicslab import io as tio

    small_population(tmp_path)
    names = _not_names(tmp_path)
    for ident, path in names:
        for name, read, field in [("read_sets", tio.read_sets, "path"),
                                  ("iter_sets", lambda p: list(tio.iter_sets(p)), "path"),
                                  ("read_traces", tio.read_traces, "path"),
                                  ("detect_format", tio.detect_format, "path"),
                                  ("read_domain_table", tio.read_domain_table, "path"),
                                  ("iter_visits", lambda p: list(tio.iter_visits(p)), "path"),
                                  ("load_statistics", dp.load_statistics, "directory"),
                                  ("load_model", model.load_model, "directory"),
                                  ("convert_sets", lambda p: tio.convert_sets(
                                      p, tmp_path / "o.csv"), "source")]:
            message = _raises(read, field, path)
            assert "expected a file or directory name" in message, (ident, name, message)
            if ident == "open-file":
                assert "give the file's name (f.name)" in message
    names[1][1].close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pop.parquet"]


def test_the_writers_refuse_a_path_that_is_no_name(tmp_path: Path) -> None:
    from topicslab import dp
    from topicslab import io as tio

    sets = tio.read_sets(small_population(tmp_path) / "pop.parquet")
    stats = dp.compute_statistics(sets, epsilon=1e3, delta=1e-6, seed=0)
    names = _not_names(tmp_path)
    for ident, path in [*names, ("int", 5)]:
        if ident == "descriptor":
            continue  # (the descriptor above, as an int)
        for name, write, field in [
                ("write_sets", lambda p: tio.write_sets(p, sets), "path"),
                ("save_statistics", lambda p: dp.save_statistics(p, stats), "directory"),
                ("convert_sets", lambda p: tio.convert_sets(tmp_path / "pop.parquet", p),
                 "target")]:
            message = _raises(write, field, path)
            assert "expected a file or directory name" in message, (ident, name, message)
    names[1][1].close()
    for name, write, field in [
            ("write_sets", lambda p: tio.write_sets(p, sets), "path"),
            ("save_statistics", lambda p: dp.save_statistics(p, stats), "directory"),
            ("convert_sets", lambda p: tio.convert_sets(tmp_path / "pop.parquet", p),
             "target")]:
        message = _raises(write, field, str(tmp_path / "o\x00.parquet"))
        assert "the name holds a NUL character" in message and "o\\x00.parquet" in message, (
            name, message)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pop.parquet"]


# ---- names that read as rich's markup ----------------------------------------------------

MARKUP = [
    ("population", ["population", "--users", "10", "--weeks", "2", "--out", "o[/]p.parquet"],
     "o[/]p.parquet"),
    ("observe", ["observe", "--sets", "pop.parquet", "--out", "o[/]t.parquet"],
     "o[/]t.parquet"),
    ("stats", ["stats", "--sets", "pop.parquet", "--out", "o[/]st"], "o[/]st"),
    ("convert", ["convert", "pop.parquet", "o[/]c.csv"], "o[/]c.csv"),
    ("qif-sets", ["qif", "--sets", "p[bold]x.parquet"], "p[bold]x.parquet: week 0"),
    ("fit", ["fit", "--stats", "stats", "--out", "o[/]m", "--types", "2", "--modes", "1",
             "--steps", "1", "--no-progress"], "o[/]m"),
    ("sample", ["sample", "--model", "model", "--users", "5", "--seed", "0", "--out",
                "o[/]s.parquet"], "o[/]s.parquet"),
    ("attack-train", ["attack-train", "--sets", "pop.parquet", "--out", "o[/]a", "--epochs",
                      "1"], "o[/]a"),
    ("bold", ["convert", "pop.parquet", "o[/][bold]c.csv"], "o[/][bold]c.csv"),
]


@pytest.mark.parametrize(("args", "shown"), [c[1:] for c in MARKUP], ids=[c[0] for c in MARKUP])
def test_a_name_that_reads_as_markup_is_printed_as_it_is(work: Path, args: list[str],
                                                         shown: str) -> None:
    """The work was done and the output written, then the summary's title or "wrote" line
    failed: "error: MarkupError: closing tag '[/]' ... has nothing to close", exit code 1."""
    population_and_stats(work)
    if args[0] == "sample":
        fit_small_model(invoke, work)
    (work / "o[").mkdir()
    if args[0] == "qif":  # (an input's base name is shown: markup, but no '/')
        (work / "p[bold]x.parquet").write_bytes((work / "pop.parquet").read_bytes())
    res = invoke(args)
    assert res.exit_code == 0, res.output
    assert shown in res.output, res.output
    assert "MarkupError" not in res.output


@pytest.mark.parametrize("key", ["neighbouring_relation", "post_processing", "created"])
def test_a_ledger_s_text_is_shown_as_it_is(work: Path, key: str) -> None:
    """"error: MarkupError: closing tag '[/]' at position 1 has nothing to close", exit 1;
    an escape sequence reached the terminal."""
    import json

    population_and_stats(work)
    ledger = work / "stats" / "privacy_ledger.json"
    record = json.loads(ledger.read_text(encoding="utf-8"))
    record[key] = "edited [/]by hand[bold] \x1b[2J"
    record["noise"]["source"] = "another [/] tool"
    ledger.write_text(json.dumps(record), encoding="utf-8")
    res = invoke(["stats", "--explain", str(work / "stats")])
    assert res.exit_code == 0, res.output
    flat = " ".join(res.output.split())
    assert "MarkupError" not in flat
    assert "edited [/]by hand[bold] \\x1b[2J" in flat, res.output
    assert "\x1b" not in res.output


def test_a_script_s_text_is_shown_as_it_is(work: Path) -> None:
    (work / "s.txt").write_text("! keywords: london [/]england uk\n! probe: help [/]and advice\n"
                                "help [/]and advice\n! wait 7\nweather [/] forecast\n",
                                encoding="utf-8")
    res = invoke(["disclosure", "--script", "s.txt"])
    assert res.exit_code == 0, res.output
    assert "help [/]and advice" in res.output
    assert "'[/]england'" in res.output


def test_profile_anonymity_takes_topic_sets() -> None:
    """"sets must be an integer array, got dtype object" for the library's own type."""
    from topicslab.attacks import profile_anonymity
    from topicslab.datamodel import TopicSets

    profiles = random_profiles(50, 4)
    anon = profile_anonymity(TopicSets(profiles, "v2", np.arange(50, dtype=np.int64)))
    assert anon == profile_anonymity(profiles)
    assert anon.users == 50


@pytest.mark.parametrize(("call", "field"), [
    # a fractional population had a probability of its own
    (lambda q: q.p_correct(1.5, 5, 0.05), "n_users"),
    # NaN or negative users gave a memory estimate of NaN or below zero
    (lambda q: q.tables_memory(float("nan"), 469, 3, 5), "n_users"),
    (lambda q: q.tables_memory(-10, 469, 3, 5), "n_users"),
    (lambda q: q.tables_memory(1000, 469, 0, 5), "n_epochs"),
    # past a float: OverflowError
    (lambda q: q.tables_memory(10, 10**400, 3, 5), "m"),
    (lambda q: q.p_correct(10**400, 5, 0.05), "n_users"),
    # None: Python's TypeError
    (lambda q: q.choice_labels(None, [1]), "y1"),
    (lambda q: q.choice_labels([1], 7), "y2"),
], ids=["p-correct-fractional", "tables-memory-nan", "tables-memory-negative",
        "tables-memory-no-epochs", "tables-memory-past-a-float", "p-correct-past-a-float",
        "choice-labels-none", "choice-labels-number"])
def test_the_qif_helpers_left_from_the_round_refuse_what_is_no_count(call: Any,
                                                                      field: str) -> None:
    from topicslab import qif
    from topicslab.errors import InputError

    with pytest.raises(InputError) as err:
        call(qif)
    assert err.value.field == field


# ---- round 41's long option values ---------------------------------------------------------

def test_a_population_of_more_users_than_64_bits_names_users(work: Path) -> None:
    """``--users`` of 300 digits: "field 'first_user': first_user must be in 0..-999...", a
    range below zero for an option nobody gave, and the whole value."""
    res = invoke(["population", "--users", "9" * 300, "--out", "p.parquet"])
    line = check_refused(res.output, res.exit_code,
                         "field '--users': --users must be in 1..9223372036854775807, got "
                         "999999999999999999999999999999...9999999999 (300 characters)")
    assert "first_user" not in line
    assert not list(work.iterdir())


def test_a_long_value_in_the_error_line_is_cut_to_its_ends(inputs: Path, work: Path) -> None:
    """``--weeks 0,1,...,19999``: a line of 129 KB quoting every week (one line, but no
    terminal shows it); the value is cut to its ends and its length, the rest of the line
    kept whole."""
    weeks = ",".join(str(w) for w in range(20_000))
    res = invoke(["stats", "--sets", str(inputs / "pop.parquet"), "--weeks", weeks, "--out",
                  "s"])
    line = check_refused(res.output, res.exit_code, "pop.parquet, field '--weeks': weeks must "
                         "be distinct values in 0..3, got [0, 1, 2")
    assert len(line) < 400, len(line)
    assert "19998, 19999] (128,890 characters): the input has 4 weeks" in line


def test_a_long_run_that_is_no_value_is_left_whole() -> None:
    """Only runs mostly of digits are cut: dashes or spaces are text (and a line of 129K
    dashes took the first pattern 64 s to scan, backtracking)."""
    from topicslab.cli._app import _shortened_values

    dashes = "a " + "-" * 129_000 + " b"
    assert _shortened_values(dashes) == dashes
    # a number and a gap of spaces is no long value (it was "5 ... 5 (1 characters)")
    gap = "got 5" + " " * 250 + "in b.parquet"
    assert _shortened_values(gap) == gap
    # a list of short values is: 20,000 zeros were a line of 60,065 characters
    value = "[" + ", ".join(["0"] * 20_000) + "]"
    assert _shortened_values(f"got {value}: the input") == (
        f"got {value[:40]} ... {value[-20:]} (60,000 characters): the input")
    digits = "got " + "7" * 300 + " in b.parquet"
    assert _shortened_values(digits) == ("got " + "7" * 40 + " ... " + "7" * 20
                                         + " (300 characters) in b.parquet")


def test_an_integer_refused_in_python_quotes_a_long_value_by_its_ends() -> None:
    from topicslab._checks import integer
    from topicslab.errors import InputError

    with pytest.raises(InputError, match=r"got 1000000000.*0000000000 \(4,001 characters\)$"):
        integer(10**4000, "n", at_most=10)
    # past Python's 4,300 digits str() refuses: the refusal failed with that ValueError
    with pytest.raises(InputError, match=r"got an integer of about 5,001 digits$"):
        integer(10**5000, "n", at_most=10)
    with pytest.raises(InputError, match=r"got a negative integer of about 5,001 digits$"):
        integer(-10**5000, "n", at_least=0)
    with pytest.raises(InputError, match=r"got 'xxxx.*xxx' \(5,002 characters\)$"):
        integer("x" * 5000, "n")
    with pytest.raises(InputError, match=r"must be <= 10, got 11$"):  # short: whole
        integer(11, "n", at_most=10)
