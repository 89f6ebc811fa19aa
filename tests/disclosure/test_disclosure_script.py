"""The paper's query-script format: parse, write, generate, round trip."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topicslab.disclosure import (
    Query,
    Script,
    Wait,
    make_script,
    paper_keywords,
    parse_script,
    read_script,
    write_script,
)
from topicslab.errors import InputError

# Table 2 of the paper, verbatim (note the double space in two queries)
TABLE2 = """! keywords: london england uk
! probe: help and advice
help and advice
! wait 7
weather forecast for  london
! wait 5
find hotels in london city
! wait 3
help and advice
! wait 7
cheap hotels in london
! wait 10
hotels in regents park cheap
! wait 7
marriott courtyard regents park
! wait 4
help and advice
! wait 7
things to do london next week
! wait 5
regents park hotels
! wait 7
get cheap london show tickets
! wait 7
shows on london now
! wait 5
tickets  london shows
! wait 7
help and advice
"""


def test_parse_paper_example() -> None:
    s = parse_script(TABLE2)
    assert s.keywords == ("london", "england", "uk")
    assert s.probe == "help and advice"
    assert len(s.queries) == 14
    assert s.probe_positions == [0, 3, 7, 13]
    assert s.queries[1] == Query("weather forecast for  london")
    assert s.queries_between_probes == pytest.approx((2 + 3 + 5) / 3)
    assert s.total_wait == 7 + 5 + 3 + 7 + 10 + 7 + 4 + 7 + 5 + 7 + 7 + 7 + 5
    assert s.to_text() == TABLE2  # canonical text round trip
    assert parse_script(s.to_text()) == s
    assert s.is_probe("Help  and ADVICE")
    assert s.to_dict()["probes"] == 4


def test_tolerant_parsing() -> None:
    text = "!probe:help\n\n  help  \n!WAIT 3\n!  topic: gambling\n"
    with pytest.raises(InputError, match="row 5"):
        parse_script(text)  # header after the first query
    s = parse_script("!probe:help\n! topic: gambling\n\n  help  \n!WAIT 3\r\nq1\r\n")
    assert s.headers == (("probe", "help"), ("topic", "gambling"))
    assert s.steps == (Query("help"), Wait(3), Query("q1"))
    assert s.keywords == ()


@pytest.mark.parametrize(("text", "where"), [
    ("help\n", "probe"),
    ("! probe: help\n! wait x\n", "row 2"),
    ("! probe: help\n! wait -1\n", "row 2"),
    ("! probe: help\n! bogus directive\n", "row 2"),
    ("! probe: a\n! probe: b\n", "row 2"),
    ("! probe:   \nq\n", "probe"),
])
def test_bad_scripts(text: str, where: str) -> None:
    with pytest.raises(InputError, match=where):
        parse_script(text, file="s.txt")


def test_read_write(tmp_path) -> None:
    path = tmp_path / "london.txt"
    write_script(path, parse_script(TABLE2))
    assert path.read_text(encoding="utf-8") == TABLE2
    assert read_script(path) == parse_script(TABLE2)
    with pytest.raises(InputError, match=r"nope\.txt"):
        read_script(tmp_path / "nope.txt")
    with pytest.raises(InputError):
        Script((("probe", "p"),), (Wait(-2),))
    with pytest.raises(InputError):
        Script((("probe", "p"),), (Query("! not a query"),))


def test_make_script_follows_section_5_2() -> None:
    kw = paper_keywords()
    assert kw["probes"]["non_medical"] == "help and advice"
    words = kw["categories"]["gambling"]
    s = make_script(words, "help and advice", n_queries=35, seed=4)
    assert s == make_script(words, "help and advice", n_queries=35, seed=4)
    assert s != make_script(words, "help and advice", n_queries=35, seed=5)
    assert 25 <= len(s.queries) <= 35
    pos = s.probe_positions
    assert pos[0] == 0 and pos[-1] == len(s.queries) - 1
    gaps = [b - a - 1 for a, b in itertools.pairwise(pos)]
    assert all(1 <= g <= 5 for g in gaps)
    waits = [x.seconds for x in s.steps if isinstance(x, Wait)]
    assert len(waits) == len(s.queries) - 1 and all(1 <= w <= 10 for w in waits)
    for q in s.queries:
        if not s.is_probe(q):
            assert 1 <= len(q.text.split()) <= 3 and set(q.text.split()) <= set(words)
    assert parse_script(s.to_text()) == s
    with pytest.raises(InputError):
        make_script([], "p")
    with pytest.raises(InputError):
        make_script(["two words"], "p")
    with pytest.raises(InputError):
        make_script(["a"], "p", probe_gap=(0, 3))


words = st.text(alphabet="abcdefgh", min_size=1, max_size=6)
queries = st.lists(words, min_size=1, max_size=4).map(" ".join)


@settings(max_examples=50, deadline=None)
@given(probe=queries, kws=st.lists(words, max_size=5),
       steps=st.lists(st.one_of(queries.map(Query), st.integers(0, 99).map(Wait)),
                      max_size=12),
       extra=st.dictionaries(st.sampled_from(["topic", "engine", "user"]), queries,
                             max_size=2))
def test_round_trip(probe, kws, steps, extra) -> None:
    headers = (("keywords", " ".join(kws)), ("probe", probe), *extra.items())
    s = Script(headers, tuple(steps))
    assert parse_script(s.to_text()) == s
