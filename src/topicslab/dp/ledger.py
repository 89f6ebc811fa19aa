"""The privacy ledger (``privacy_ledger.json``): an exact record of what a release spent.

It lists each Gaussian mechanism (query, Δ2, σ, its own (ε_i, δ_i)), the composed guarantees
computed by ``dp_accounting`` (``topicslab.dp.accounting``), the guarantee claimed and why, the
neighbouring relation, the noise source, the package version and an ``audit`` block.

The ``audit`` block (input fingerprint, bounding counts) is derived directly from the private
input and is NOT differentially private: keep it for internal verification and drop it
(``PrivacyLedger.public()``) before publishing the ledger.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.table import Table

from topicslab._atomic import write_text_atomic
from topicslab._checks import value_shown
from topicslab._json import (
    DuplicateKeyError,
    IntegerTooLargeError,
    bounded_int,
    dumps,
    loads,
    read_document,
    unique_keys,
)
from topicslab._numbers import format_number
from topicslab.dp.params import ACCOUNTINGS, BOUND_MODES, consecutive
from topicslab.errors import FileFieldError, InputError

SCHEMA = "topicslab.privacy_ledger/1"
FILENAME = "privacy_ledger.json"


@dataclass
class PrivacyLedger:
    """See the module docstring; every field is plain JSON data."""

    target: dict[str, Any]
    accounting: str
    split: list[float]
    neighbouring_relation: str
    contribution_bounding: dict[str, Any]
    mechanisms: list[dict[str, Any]]
    composition: dict[str, Any]
    claimed: dict[str, Any]
    noise: dict[str, Any]
    post_processing: str
    package: dict[str, str]
    created: str
    noise_vs_paper: list[dict[str, Any]] | None = None
    audit: dict[str, Any] | None = None
    schema: str = SCHEMA
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def public(self) -> PrivacyLedger:
        """A copy without the non-private ``audit`` block."""
        d = self.to_dict()
        d["audit"] = None
        return PrivacyLedger(**d)

    def to_json(self) -> str:
        return dumps(self.to_dict(), indent=2) + "\n"

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, file: str | None = None) -> PrivacyLedger:
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise FileFieldError(f"not a {SCHEMA} ledger", file=file, field="schema")
        names = set(cls.__dataclass_fields__)
        missing = sorted(n for n in names if n not in data
                         and n not in ("noise_vs_paper", "audit", "extra", "schema"))
        if missing:
            raise FileFieldError("missing ledger fields", file=file, field=missing[0])
        for name, kind in _FIELD_TYPES.items():
            value = data.get(name)
            if value is None and name in ("noise_vs_paper", "audit", "extra"):
                continue
            if not isinstance(value, kind):
                raise FileFieldError(f"expected a JSON {_JSON_NAMES[kind]}, got {value!r:.60}; "
                                     "restore the ledger (or rerun topicslab stats)", file=file,
                                     field=name)
        for what, item_keys in (("mechanisms", _MECHANISM_KEYS),
                                ("noise_vs_paper", ("name", "sigma_ratio"))):
            for i, item in enumerate(data.get(what) or [], start=1):
                if not isinstance(item, dict) or any(k not in item for k in item_keys):
                    raise FileFieldError(f"entry {i} must be an object with "
                                         f"{', '.join(item_keys)}; restore the ledger (or rerun "
                                         "topicslab stats)", file=file, field=what)
        for i, item in enumerate(data["mechanisms"], start=1):
            problem = _mechanism_problem(item)
            if problem:
                raise FileFieldError(f"entry {i}: {problem}; restore the ledger (or rerun "
                                     "topicslab stats)", file=file, field="mechanisms")
        for what in ("claimed", "target"):
            if any(k not in data[what] for k in ("epsilon", "delta")):
                raise FileFieldError("must give epsilon and delta; restore the ledger (or rerun "
                                     "topicslab stats)", file=file, field=what)
        for name, problem in _value_problems(data):
            raise FileFieldError(f"{problem}; restore the ledger (or rerun topicslab stats)",
                                 file=file, field=name)
        return cls(**{k: v for k, v in data.items() if k in names})

    def save(self, directory: str | Path) -> Path:
        from topicslab._paths import path_name

        # (True or None was pathlib's TypeError, and the name of a file "FileExistsError:
        # [Errno 17] File exists")
        d = Path(path_name(directory, "directory"))
        if d.exists() and not d.is_dir():
            raise InputError("is a file, and the ledger is written into a directory; give the "
                             "statistics directory", file=str(d), field="directory")
        path = d / FILENAME
        write_text_atomic(path, self.to_json())
        return path


_FIELD_TYPES: dict[str, type | tuple[type, ...]] = {
    "target": dict, "accounting": str, "split": list, "neighbouring_relation": str,
    "contribution_bounding": dict, "mechanisms": list, "composition": dict, "claimed": dict,
    "noise": dict, "post_processing": str, "package": dict, "created": str,
    "noise_vs_paper": list, "audit": dict, "extra": dict}
_JSON_NAMES: dict[type | tuple[type, ...], str] = {dict: "object", list: "list", str: "string"}
_MECHANISM_KEYS = ("name", "query", "dims", "sensitivity", "sigma", "epsilon", "delta", "share")


def _finite(v: Any) -> bool:
    return not isinstance(v, bool) and isinstance(v, int | float) and math.isfinite(v)


def _value_problems(data: dict[str, Any]) -> list[tuple[str, str]]:
    """(field, what is wrong) of the ledger's own values, which ``stats --explain`` prints and
    the fit reads: an edited ``contribution_bounding.weeks`` (text, ``[]``, ``[0, 2]``,
    ``[1, 0]``) was fitted as the release's consecutive weeks, and an ``accounting``,
    ``over_long``, target or split out of its range was printed as the release's."""
    problems: list[tuple[str, str]] = []
    bounding, mechs = data["contribution_bounding"], data["mechanisms"]
    within = [m for m in mechs if m["name"].startswith("within")]
    if "weeks" in bounding:
        weeks = bounding["weeks"]
        if (not isinstance(weeks, list) or not weeks
                or not all(isinstance(w, int) and not isinstance(w, bool) and w >= 0
                           for w in weeks)):
            problems.append(("contribution_bounding.weeks", "must be a non-empty list of "
                             f"weeks (integers >= 0), got {weeks!r:.60}"))
        elif not consecutive(weeks):
            problems.append(("contribution_bounding.weeks", "a release's weeks are "
                             f"consecutive and increasing, got {weeks!r:.60}"))
        elif len(within) != len(weeks) or any(
                # (type: [true] equals [1] in Python)
                [type(x) for x in m.get("weeks", [w])] != [int] or m.get("weeks", [w]) != [w]
                for m, w in zip(within, weeks, strict=False)):
            problems.append(("contribution_bounding.weeks", f"lists weeks {weeks!r:.60}, "
                             f"but the ledger's {len(within)} within-week mechanisms count "
                             "other weeks"))
    k = bounding.get("k", 2)
    if isinstance(k, bool) or not isinstance(k, int) or k < 2:
        problems.append(("contribution_bounding.k", f"must be an integer >= 2, got {k!r:.40}"))
    if bounding.get("over_long", "reject") not in BOUND_MODES:
        problems.append(("contribution_bounding.over_long", "must be 'reject' or "
                         f"'truncate', got {bounding['over_long']!r:.40}"))
    if data["accounting"] not in ACCOUNTINGS:
        problems.append(("accounting", f"must be 'paper' or 'tight', got "
                         f"{data['accounting']!r:.40}"))
    for what in ("target", "claimed"):  # (a claimed ε of "abc" or NaN was printed as the claim)
        eps, delta = data[what]["epsilon"], data[what]["delta"]
        if not _finite(eps) or eps <= 0:
            problems.append((what, f"epsilon must be a finite number > 0, got {eps!r:.40}"))
        elif not _finite(delta) or not 0 < delta < 1:
            problems.append((what, f"delta must be a number in (0, 1), got {delta!r:.40}"))
    problems += _shown_problems(data)
    split = data["split"]
    if not all(_finite(x) and x >= 0 for x in split):
        problems.append(("split", f"must list the mechanisms' shares (numbers >= 0), got "
                         f"{split!r:.60}"))
    return problems


def _shown_problems(data: dict[str, Any]) -> list[tuple[str, str]]:
    """(field, what is wrong) of the values only ``stats --explain`` reads: a composed view
    that is no object, a method, basis or warning that is no text, or a σ ratio that is no
    number ended its tables in an ``AttributeError``, rich's ``NotRenderableError`` or a
    format's ``ValueError`` (exit code 1)."""
    problems: list[tuple[str, str]] = []
    for name, view in data["composition"].items():
        if not isinstance(view, dict):
            problems.append((f"composition.{name}", f"must be an object, got {view!r:.40}"))
        elif any(view.get(key) is not None and not (_finite(view[key]) and view[key] >= 0)
                 for key in ("epsilon", "delta")):
            # (shown as the composed guarantee: true as "True", text as it came)
            problems.append((f"composition.{name}", "epsilon and delta must be finite numbers "
                             f">= 0 (or null), got {view.get('epsilon')!r:.30} and "
                             f"{view.get('delta')!r:.30}"))
        elif not isinstance(view.get("method", ""), str):
            problems.append((f"composition.{name}.method",
                             f"must be text, got {view['method']!r:.40}"))
    for key in ("basis", "warning"):
        if not isinstance(data["claimed"].get(key, ""), str):
            problems.append((f"claimed.{key}", f"must be text, got {data['claimed'][key]!r:.40}"))
    for i, row in enumerate(data.get("noise_vs_paper") or [], start=1):
        if not isinstance(row["name"], str) or not _finite(row["sigma_ratio"]):
            problems.append(("noise_vs_paper", f"entry {i} must give a name (text) and a "
                             f"sigma_ratio (a finite number), got {row!r:.60}"))
    return problems


def _mechanism_problem(mech: dict[str, Any]) -> str:
    """What is wrong with one mechanism's values ("" if nothing). Readers take its name to
    tell the queries apart and its σ as the noise the fit stops at: a σ given as text was a
    ValueError (exit 1), a negative or NaN one was used as it came, and a name that is not
    text dropped the query from the noise floor without a word."""
    for key in ("name", "query"):
        if not isinstance(mech[key], str):
            return f"{key} must be text, got {mech[key]!r:.40}"
    dims = mech["dims"]
    if isinstance(dims, bool) or not isinstance(dims, int) or dims < 1:
        return f"dims must be a positive integer, got {value_shown(dims, 40)}"
    for key, positive in (("sensitivity", True), ("sigma", True), ("sigma_sampled", True),
                          ("epsilon", False), ("delta", False), ("share", False)):
        if key not in mech:  # (sigma_sampled: absent from older ledgers)
            continue
        v = mech[key]
        if (isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v)
                or v < 0 or (positive and v == 0)):
            return (f"{mech['name']}'s {key} must be a finite number "
                    f"{'> 0' if positive else '>= 0'}, got {v!r:.40}")
    return ""


def load_ledger(path: str | Path) -> PrivacyLedger:
    """Read ``privacy_ledger.json`` (a file or the directory holding it)."""
    from topicslab._paths import path_name

    p = Path(path_name(path, "path"))  # (None was Path's TypeError)
    if not p.exists():  # (was "no privacy ledger here"; a dangling link is named as one)
        from topicslab.io._common import missing

        raise InputError(missing(str(p)), file=str(p))
    if p.is_dir():
        p = p / FILENAME
    elif p.exists() and not p.name.lower().endswith(".json"):
        raise InputError("is not a statistics directory (nor its privacy_ledger.json)",
                         file=str(p))
    if p.is_dir():
        raise InputError("is a directory, not the ledger file; restore the ledger (or rerun "
                         "topicslab stats)", file=str(p))
    from topicslab._paths import run_record

    if (record := run_record(p)) is not None:
        raise InputError(f"is {record}, not a privacy ledger: give the run's DP release, "
                         f"{p.parent / 'stats'}", file=str(p))
    try:
        data = loads(read_document(p, "privacy ledger"), parse_int=bounded_int,
                          object_pairs_hook=unique_keys)
    except FileNotFoundError:
        release = p.parent / "stats" / FILENAME
        if p.name == FILENAME and release.is_file():
            # a run's output directory (was "no privacy ledger here")
            raise InputError(f"no privacy ledger here: this directory holds a run's output, "
                             f"whose DP release is {p.parent / 'stats'}; give that directory",
                             file=str(p.parent)) from None
        raise InputError("no privacy ledger here", file=str(p)) from None
    except DuplicateKeyError as exc:  # a second "accounting" replaced the first silently
        raise FileFieldError(f"{exc.key!r} is given twice in one object; restore the ledger (or "
                             "rerun topicslab stats)", file=str(p), field=exc.key) from None
    except (json.JSONDecodeError, UnicodeDecodeError, IntegerTooLargeError) as exc:
        raise InputError(f"invalid JSON: {exc}", file=str(p)) from None
    except OSError as exc:
        raise InputError(f"cannot read the file ({exc.strerror or exc})", file=str(p)) from None
    return PrivacyLedger.from_dict(data, file=str(p))


#: the ledger's numbers are shown to 6 significant digits (σ and δ need them)
_DIGITS = 6


def _eps_delta(d: dict[str, Any]) -> str:
    return (f"ε = {format_number(d['epsilon'], digits=_DIGITS)}, "
            f"δ = {format_number(d['delta'], digits=_DIGITS)}")


def _plain(*values: Any) -> list[Any]:
    """Table cells shown as they are: a ledger's text (edited by hand, or another tool's) was
    read as rich's markup ("x[/]y": "MarkupError: closing tag '[/]' has nothing to close",
    exit code 1; "[bold]" dropped) and its control characters reached the terminal."""
    from rich.text import Text

    from topicslab._paths import printable

    return [Text(printable(v)) if isinstance(v, str) else v for v in values]


def ledger_tables(ledger: PrivacyLedger) -> list[Table]:
    """Rich tables: mechanisms, composition, and the record's other facts."""
    if not isinstance(ledger, PrivacyLedger):  # (an AttributeError: no 'accounting')
        raise InputError(f"ledger_tables takes a PrivacyLedger, got {type(ledger).__name__}",
                         field="ledger")
    mech = Table(title=f"Gaussian mechanisms ({ledger.accounting} accounting)")
    for col in ("mechanism", "query", "dims", "Δ2", "σ", "σ sampled", "ε_i", "δ_i", "share"):
        mech.add_column(col, justify="left" if col in ("mechanism", "query") else "right")
    for mq in ledger.mechanisms:
        mech.add_row(*_plain(mq["name"], mq["query"], format_number(mq["dims"]),
                             *(format_number(mq.get(key), digits=_DIGITS) for key in
                               ("sensitivity", "sigma", "sigma_sampled", "epsilon", "delta",
                                "share"))))
    comp = Table(title="composed guarantee (dp_accounting)")
    for col in ("view", "ε", "δ", "method"):
        comp.add_column(col)
    for name, c in ledger.composition.items():
        comp.add_row(*_plain(name, *(format_number(c.get(key), digits=_DIGITS)
                                     for key in ("epsilon", "delta")), c.get("method", "")))
    facts = Table(title="privacy ledger", show_header=False)
    rows = [("claimed", _eps_delta(ledger.claimed)), ("basis", ledger.claimed.get("basis", ""))]
    if "warning" in ledger.claimed:
        rows.append(("warning", ledger.claimed["warning"]))
    rows += [("target", _eps_delta(ledger.target)),
             ("neighbouring", ledger.neighbouring_relation),
             ("bounding", dumps(ledger.contribution_bounding)),
             ("noise", dumps(ledger.noise)),
             ("post-processing", ledger.post_processing)]
    if ledger.noise_vs_paper:
        rows.append(("noise vs paper split", ", ".join(
            f"{r['name']}: σ ×{r['sigma_ratio']:.3f}" for r in ledger.noise_vs_paper)))
    rows += [("package", f"{ledger.package.get('name')} {ledger.package.get('version')}"),
             ("created", ledger.created)]
    if ledger.audit:
        rows.append(("input fingerprint", str(ledger.audit.get("input_fingerprint"))))
    for row in rows:
        facts.add_row(*_plain(*row))
    return [mech, comp, facts]
