"""Query scripts in the paper's format (Table 2, §5.2): parse, write and generate.

A script is a text file, one item per line::

    ! keywords: london england uk
    ! probe: help and advice
    help and advice
    ! wait 7
    weather forecast for  london

* ``! key: value`` header lines come first; ``probe`` is required, ``keywords`` is a
  white-space separated list; other keys are kept verbatim, in order.
* ``! wait N`` pauses N seconds (a non-negative integer).
* Every other non-blank line is a query, kept verbatim (inner spacing included); a query equal
  to the probe (ignoring case and repeated white space) is a probe query.

``parse_script(script.to_text()) == script`` for every script, and ``parse_script(text)
.to_text() == text`` for a canonical text (headers first, no blank lines, ``\\n`` line ends and a
final newline).

Generation follows §5.2: queries are groups of 1-3 keywords drawn uniformly with replacement, a
probe is issued first, then after every 1-5 queries and last; a random 1-10 s pause separates
consecutive queries.

Public names:
    Script, Query, Wait
    parse_script(text, file=None), read_script(path), write_script(path, script)
    make_script(keywords, probe, n_queries=..., seed=...)
    paper_keywords()          Table 5.1 keywords and the §5.3 probe queries
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from topicslab._atomic import write_text_atomic
from topicslab._checks import integer, is_collection, value_shown
from topicslab._json import WideTextError, read_document, wide_text_advice
from topicslab.errors import InputError

_HEADER = re.compile(r"^!\s*([A-Za-z][\w-]*)\s*:\s?(.*)$")
_KEY = re.compile(r"[A-Za-z][\w-]*")
_WAIT = re.compile(r"^!\s*wait(?:\s+(.*))?$", re.IGNORECASE)


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


@dataclass(frozen=True)
class Query:
    """One query line (verbatim text)."""

    text: str


@dataclass(frozen=True)
class Wait:
    """A pause of ``seconds`` before the next query."""

    seconds: int


Step = Query | Wait


@dataclass(frozen=True)
class Script:
    """A query script: headers (``probe`` required) and steps."""

    headers: tuple[tuple[str, str], ...]
    steps: tuple[Step, ...]

    def __post_init__(self) -> None:
        keys = [k for k, _ in self.headers]
        for key, value in self.headers:
            # written as "! key: value" lines, a line break in a value or a key the reader
            # does not take read back as another script (an extra query), or not at all
            if not isinstance(key, str) or not _KEY.fullmatch(key):
                raise InputError(f"a header key is a word of letters, digits, '_' or '-' "
                                 f"(starting with a letter), got {key!r}", field="headers")
            if not isinstance(value, str) or len(value.splitlines()) > 1:
                raise InputError(f"header {key!r} must be one line of text, got {value!r}",
                                 field=key)
        if len(set(keys)) != len(keys):
            raise InputError("duplicate script header", field=keys[-1])
        if "probe" not in keys or not _norm(dict(self.headers)["probe"]):
            raise InputError("a script needs a non-empty '! probe: ...' header",
                             field="probe")
        for step in self.steps:
            if isinstance(step, Wait) and (not isinstance(step.seconds, int)
                                           or isinstance(step.seconds, bool)
                                           or step.seconds < 0):
                raise InputError(f"wait must be a non-negative integer, got {step.seconds!r}",
                                 field="wait")
            if isinstance(step, Query) and (len(step.text.splitlines()) > 1
                                            or not step.text.strip()
                                            or step.text.lstrip().startswith("!")):
                raise InputError(f"bad query text {step.text!r}", field="query")

    @property
    def probe(self) -> str:
        return dict(self.headers)["probe"]

    @property
    def keywords(self) -> tuple[str, ...]:
        return tuple(dict(self.headers).get("keywords", "").split())

    def is_probe(self, query: Query | str) -> bool:
        text = query.text if isinstance(query, Query) else query
        return _norm(text) == _norm(self.probe)

    @property
    def queries(self) -> list[Query]:
        return [s for s in self.steps if isinstance(s, Query)]

    @property
    def probe_positions(self) -> list[int]:
        """Indices (among the queries) of the probe queries."""
        return [i for i, q in enumerate(self.queries) if self.is_probe(q)]

    @property
    def queries_between_probes(self) -> float | None:
        """Mean number of user queries between consecutive probes (for the adaptation estimate)."""
        pos = self.probe_positions
        if len(pos) < 2:
            return None
        return float(np.mean(np.diff(pos) - 1))

    @property
    def total_wait(self) -> int:
        return sum(s.seconds for s in self.steps if isinstance(s, Wait))

    def to_text(self) -> str:
        lines = [f"! {k}: {v}" for k, v in self.headers]
        for s in self.steps:
            lines.append(f"! wait {s.seconds}" if isinstance(s, Wait) else s.text)
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict[str, Any]:
        return {"headers": dict(self.headers), "probe": self.probe,
                "keywords": list(self.keywords), "queries": len(self.queries),
                "probes": len(self.probe_positions),
                "queries_between_probes": self.queries_between_probes,
                "total_wait": self.total_wait}


def parse_script(text: str, *, file: str | None = None) -> Script:
    """Parse a script (see the module docstring); errors name the file, row and field."""
    if not isinstance(text, str):  # (None or bytes was an AttributeError: no splitlines)
        raise InputError(f"a script must be text (a string), got {type(text).__name__}",
                         file=file, field="text")
    headers: list[tuple[str, str]] = []
    steps: list[Step] = []
    for row, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        if not line.strip():
            continue
        stripped = line.lstrip()
        if stripped.startswith("!"):
            wait = _WAIT.match(stripped)
            if wait:
                arg = (wait.group(1) or "").strip()
                # ASCII digits, as every reader of files takes (r"\d" took '３', full width)
                if not re.fullmatch(r"[0-9]+", arg):
                    raise InputError(f"'! wait' needs a non-negative integer number of "
                                     f"seconds, got {arg!r}", file=file, row=row,
                                     field="wait")
                steps.append(Wait(int(arg)))
                continue
            head = _HEADER.match(stripped)
            if not head:
                raise InputError(f"unknown directive {stripped!r} (expected '! key: value' "
                                 "or '! wait N')", file=file, row=row)
            key, value = head.group(1).lower(), head.group(2).strip()
            if steps:
                raise InputError(f"header {key!r} after the first query", file=file, row=row,
                                 field=key)
            if any(k == key for k, _ in headers):
                raise InputError(f"duplicate header {key!r}", file=file, row=row, field=key)
            headers.append((key, value))
            continue
        steps.append(Query(line.strip()))
    try:
        return Script(tuple(headers), tuple(steps))
    except InputError as exc:
        raise exc.located(file=file) from None


def read_script(path: str | Path) -> Script:
    """Read a script file (UTF-8)."""
    from topicslab._paths import path_name

    p = Path(path_name(path))  # (None or bytes was pathlib's TypeError)
    if not p.exists():  # (was "cannot read script: [Errno 2] No such file or directory: ...")
        from topicslab.io._common import missing

        raise InputError(missing(str(p)), file=str(p))
    if p.is_dir():  # (was "cannot read script: [Errno 21] Is a directory: '.'")
        raise InputError("is a directory, not a query script; give the script's file",
                         file=str(p))
    try:
        text = read_document(p)  # a byte-order mark is not part of the header
    except WideTextError as exc:
        raise InputError(wide_text_advice(exc.encoding), file=str(p)) from None
    except UnicodeDecodeError as exc:
        # (was the codec's "'utf-8' codec can't decode byte 0x80 in position 7: ...")
        raise InputError(f"is not a text file in UTF-8 (byte 0x{exc.object[exc.start]:02x} at "
                         f"offset {exc.start:,}), so not a query script; give the script's "
                         "file (one query a line, after its headers)", file=str(p)) from None
    except OSError as exc:
        raise InputError(f"cannot read script: {exc}", file=str(p)) from None
    return parse_script(text, file=str(p))


def write_script(path: str | Path, script: Script) -> None:
    """Write a script atomically."""
    write_text_atomic(path, script.to_text())


#: the most queries ``make_script`` writes into a script
MAX_QUERIES = 1_000_000


def make_script(
    keywords: Sequence[str],
    probe: str,
    *,
    n_queries: int = 30,
    seed: int = 0,
    group: tuple[int, int] = (1, 3),
    probe_gap: tuple[int, int] = (1, 5),
    wait: tuple[int, int] = (1, 10),
    extra_headers: Sequence[tuple[str, str]] = (),
) -> Script:
    """A script of about ``n_queries`` queries (probes included), as in §5.2.

    Queries are ``group``-sized draws (uniform, with replacement) from ``keywords``; a probe
    starts the script, follows every ``probe_gap`` queries (uniform in the inclusive range) and
    ends it; consecutive queries are separated by a uniform ``wait`` (seconds, inclusive).
    """
    # (a text was taken letter by letter: "loneliness" made the keywords l, o, n, e, ...;
    # a number failed on .strip)
    # (a number was "'int' object is not iterable", and a generator, used up by the check,
    # "needs at least one keyword")
    # (a 0-d array was "TypeError: iteration over a 0-d array")
    words = list(keywords) if is_collection(keywords) else None
    if isinstance(keywords, str) or words is None or not all(isinstance(k, str) for k in words):
        raise InputError(f"keywords must be a list of words, got {value_shown(keywords, 60)}",
                         field="keywords")
    if not isinstance(probe, str):
        raise InputError(f"probe must be text, got {value_shown(probe, 60)}", field="probe")
    kws = [k for k in words if k.strip()]
    if not kws:
        raise InputError("make_script needs at least one keyword", field="keywords")
    if any(len(k.split()) != 1 for k in kws):
        raise InputError("keywords must be single words", field="keywords")
    ranges: dict[str, tuple[int, int]] = {}
    for name, pair in (("group", group), ("probe_gap", probe_gap), ("wait", wait)):
        # (a number, text or a tuple of another length was Python's "cannot unpack
        # non-iterable bool object" / "not enough values to unpack")
        given: Any = pair
        items = list(given) if is_collection(given) else None
        if items is None or len(items) != 2:
            raise InputError(f"{name} must be a (low, high) pair of integers, got "
                             f"{pair!r:.60}", field=name)
        # (a fraction was drawn from as the integers around it, and seed=-1 or 1.5 was
        # NumPy's ValueError or TypeError)
        lo, hi = (integer(x, name) for x in items)
        if not 0 <= lo <= hi or (name != "wait" and lo < 1):
            raise InputError(f"{name} must be an increasing range of positive integers, "
                             f"got {(lo, hi)}", field=name)
        ranges[name] = (lo, hi)
    group, probe_gap, wait = ranges["group"], ranges["probe_gap"], ranges["wait"]
    # (2**70 queries were drawn one by one until the memory ran out)
    n_queries = integer(n_queries, "n_queries", at_least=2, at_most=MAX_QUERIES,
                        why="a script is typed query by query (the paper's hold about 30)")
    rng = np.random.default_rng(integer(seed, "seed", at_least=0))
    texts = [probe]
    while len(texts) < n_queries - 1:
        gap = int(rng.integers(probe_gap[0], probe_gap[1] + 1))
        for _ in range(min(gap, n_queries - 1 - len(texts))):
            size = int(rng.integers(group[0], group[1] + 1))
            words = [kws[i] for i in rng.integers(0, len(kws), size)]
            texts.append(" ".join(words))
        texts.append(probe)
    if _norm(texts[-1]) != _norm(probe):
        texts.append(probe)
    steps: list[Step] = []
    for i, t in enumerate(texts):
        if i:
            steps.append(Wait(int(rng.integers(wait[0], wait[1] + 1))))
        steps.append(Query(t))
    extra: Any = extra_headers
    pairs = list(extra) if is_collection(extra) else None
    if pairs is None or not all(isinstance(h, tuple | list) and len(h) == 2
                                and all(isinstance(x, str) for x in h) for h in pairs):
        # (True was "Value after * must be an iterable", text "not enough values to unpack")
        raise InputError(f"extra_headers must be (name, value) pairs of text, got "
                         f"{value_shown(extra_headers, 60)}", field="extra_headers")
    headers = (("keywords", " ".join(kws)), ("probe", probe), *map(tuple, pairs))
    return Script(tuple(headers), tuple(steps))


@functools.cache
def _paper_data() -> dict[str, Any]:
    src = resources.files("topicslab.disclosure").joinpath("data/paper_keywords.json")
    data: dict[str, Any] = json.loads(src.read_text(encoding="utf-8"))
    return data


def paper_keywords() -> dict[str, Any]:
    """The paper's Table 5.1 keywords per category and its two probe queries (§5.3)."""
    data = _paper_data()
    return {"categories": {k: list(v) for k, v in data["categories"].items()},
            "probes": dict(data["probes"])}


__all__ = ["Query", "Script", "Wait", "make_script", "paper_keywords", "parse_script",
           "read_script", "write_script"]
