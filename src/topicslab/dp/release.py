"""Read and write DP statistics in the public release's schema (docs/design.md §Files).

Current schema (written by ``save_statistics``):

* ``q_within.json``: records ``topic_1_id, topic_1_label, topic_2_id, topic_2_label,
  frequency`` — one per unordered pair (``topic_1_id < topic_2_id``), frequencies sum to C(k,2);
* ``q_across.json``: records ``week_1_topic_id, week_1_topic_label, week_2_topic_id,
  week_2_topic_label, frequency`` — ordered pairs, sum k²;
* ``taxonomy.json``: records ``topic_id, topic_label`` (``topics_id`` is also accepted);
* ``q_overlap.json`` (this package's addition, releases with the persistence statistic):
  records ``lag, overlap, frequency`` = Pr(|S_J ∩ S_{J+lag}| = overlap), every overlap 0..k of
  every lag 1..L listed once, each lag's frequencies summing to 1;
* ``q_single.json`` (this package's addition): records ``topic_id, topic_label, frequency``.
  q_single is derived from the *unclipped* noisy q_within (``postprocess``), which the release
  files do not hold, so it is stored; without the file (the public release) it is derived
  from the clipped q_within by the Dick et al. §4.1 identity;
* ``privacy_ledger.json`` when the statistics carry a ledger.

The older schema ``qwithin.json`` (``topic1, topic2, frequency``) / ``qacross.json``
(``topic_week1, topic_week2, frequency``) names topics by label; it is read, and written with
``schema="legacy"``. Within-week pairs are unordered: either order is accepted; a pair given in
both orders must carry the same frequency. Pairs absent from a file have frequency 0.

Bad files raise ``InputError`` naming the file, the record and the field.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Literal

import numpy as np

from topicslab._atomic import atomic_dir, write_text_atomic
from topicslab._checks import integer
from topicslab._json import DuplicateKeyError, loads, read_document, unique_keys
from topicslab._paths import set_lock
from topicslab.dp.ledger import FILENAME as LEDGER_FILE
from topicslab.dp.ledger import PrivacyLedger, load_ledger
from topicslab.dp.postprocess import single_from_within
from topicslab.dp.statistics import DPStatistics
from topicslab.errors import FileFieldError, InputError, ParameterError
from topicslab.taxonomy import Taxonomy, load, resolve

Schema = Literal["current", "legacy"]

WITHIN, ACROSS, TAXONOMY = "q_within.json", "q_across.json", "taxonomy.json"
SINGLE = "q_single.json"
OVERLAP = "q_overlap.json"
LEGACY_WITHIN, LEGACY_ACROSS = "qwithin.json", "qacross.json"


def _records(items: list[dict[str, Any]]) -> str:
    # one json.dumps call for the whole list: ~10x faster than one call per record
    return json.dumps(items, allow_nan=False, ensure_ascii=False) + "\n"


def _pair_records(first: tuple[str, ...], second: tuple[str, ...], ids: list[int],
                  labels: list[str], i: np.ndarray, j: np.ndarray, frequency: np.ndarray) -> str:
    """``_records`` of the pair records ``{first fields of topic i, second fields of topic
    j, "frequency": f}``, byte for byte (tested), written from each topic's fields encoded
    once: building and encoding 330K dicts took 0.8 s of the release's 1.1 s to write. A
    field named ``..._id`` holds the topic's id, any other its label."""
    values = np.asarray(frequency, dtype=np.float64)
    if not np.isfinite(values).all():  # (json's own error for allow_nan=False)
        raise ValueError("Out of range float values are not JSON compliant")

    def fields(names: tuple[str, ...], t: int) -> str:
        return ", ".join(f"{json.dumps(name)}: " + json.dumps(
            ids[t] if name.endswith("_id") else labels[t], ensure_ascii=False)
            for name in names)

    heads = ["{" + fields(first, t) + ", " for t in range(len(ids))]
    tails = [fields(second, t) + ', "frequency": ' for t in range(len(ids))]
    body = ", ".join([heads[a] + tails[b] + repr(f) + "}" for a, b, f in
                      zip(i.tolist(), j.tolist(), values.tolist(), strict=True)])
    return "[" + body + "]\n"


#: every file a release directory may hold: a new write removes those it does not rewrite
RELEASE_FILES = (WITHIN, ACROSS, TAXONOMY, SINGLE, OVERLAP, LEGACY_WITHIN, LEGACY_ACROSS,
                 LEDGER_FILE)


def save_statistics(directory: str | Path, stats: DPStatistics, *,
                    schema: Schema = "current") -> Path:
    """Write ``stats`` as a release directory; returns the directory.

    All or nothing: the files are written into a temporary sibling directory that becomes
    ``directory`` once complete (see ``atomic_dir``); in an existing directory the release
    files of an older write that this one lacks (the other schema's, an old ledger) are
    removed, so the directory never mixes two releases. Other files there are kept.
    """
    if not isinstance(stats, DPStatistics):  # (a TopicSets failed on a missing attribute)
        raise TypeError(f"save_statistics takes DPStatistics, got {type(stats).__name__}")
    from topicslab._paths import refuse_mixing

    refuse_mixing(directory, "stats", "directory")
    with atomic_dir(directory, owned=RELEASE_FILES) as tmp:
        _write_release_files(tmp, stats, schema)
    return Path(directory)


def _write_release_files(d: Path, stats: DPStatistics, schema: Schema) -> None:
    tax = stats.taxonomy
    ids = [int(x) for x in tax.ids]
    labels = list(tax.labels)
    m = tax.size
    iu, ju = np.triu_indices(m, 1)
    qw = stats.q_within[iu, ju]
    qa = stats.q_across.ravel()
    ai, aj = np.divmod(np.arange(m * m), m)
    if schema == "current":
        within = _pair_records(("topic_1_id", "topic_1_label"), ("topic_2_id", "topic_2_label"),
                               ids, labels, iu, ju, qw)
        across = _pair_records(("week_1_topic_id", "week_1_topic_label"),
                               ("week_2_topic_id", "week_2_topic_label"), ids, labels, ai, aj, qa)
        names = (WITHIN, ACROSS)
    elif schema == "legacy":
        within = _pair_records(("topic1",), ("topic2",), ids, labels, iu, ju, qw)
        across = _pair_records(("topic_week1",), ("topic_week2",), ids, labels, ai, aj, qa)
        names = (LEGACY_WITHIN, LEGACY_ACROSS)
    else:
        # (a ValueError: a ParameterError still is one, and names the field)
        raise ParameterError(f"schema must be 'current' or 'legacy', got {schema!r}",
                             field="schema")
    if schema == "current":
        write_text_atomic(d / SINGLE, _records(
            [{"topic_id": ids[i], "topic_label": labels[i], "frequency": float(f)}
             for i, f in enumerate(stats.q_single.tolist())]))
    if stats.q_overlap is not None:
        write_text_atomic(d / OVERLAP, _records(
            [{"lag": lag + 1, "overlap": j, "frequency": float(f)}
             for lag, row in enumerate(stats.q_overlap.tolist()) for j, f in enumerate(row)]))
    write_text_atomic(d / names[0], within)
    write_text_atomic(d / names[1], across)
    write_text_atomic(d / TAXONOMY, _records(
        [{"topic_id": i, "topic_label": lab} for i, lab in zip(ids, labels, strict=True)]))
    if stats.ledger is not None:
        stats.ledger.save(d)


def _read_list(path: Path) -> list[Any]:
    if path.is_dir():
        raise InputError("is a directory, not a JSON file; restore the release file",
                         file=str(path))
    objects = 0

    def record(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        # records hold no objects, so they are decoded in order: the count is the row
        nonlocal objects
        objects += 1
        return unique_keys(pairs)

    try:
        data = loads(read_document(path), object_pairs_hook=record)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"invalid JSON: {exc}", file=str(path)) from None
    except DuplicateKeyError as exc:  # {"frequency": 0.1, "frequency": 0.9} kept 0.9 silently
        raise FileFieldError(f"{exc.key!r} is given twice in one record; give each field once",
                             file=str(path), row=objects, field=exc.key) from None
    except OSError as exc:
        raise InputError(f"cannot read the file ({exc.strerror or exc})",
                         file=str(path)) from None
    if isinstance(data, dict):
        # tolerate {"records": [...]}-style wrappers and pandas "records" orient only
        lists = [key for key, v in data.items() if isinstance(v, list)]
        if len(lists) > 1:  # the first was read, the others dropped without a word
            raise InputError(f"an object of {len(lists)} lists ({', '.join(map(repr, lists))}): "
                             "give the records as one JSON list", file=str(path))
        data = data[lists[0]] if lists else data
    if not isinstance(data, list):
        raise InputError("expected a JSON list of records", file=str(path))
    return data


def _field(rec: Any, names: tuple[str, ...], path: Path, row: int) -> Any:
    if not isinstance(rec, dict):
        raise InputError("record is not an object", file=str(path), row=row)
    for n in names:
        if n in rec:
            return rec[n]
    raise InputError("missing field", file=str(path), row=row, field=names[0])


def _frequency(rec: Any, path: Path, row: int) -> float:
    v = _field(rec, ("frequency",), path, row)
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise InputError(f"frequency must be a number, got {v!r}", file=str(path), row=row,
                         field="frequency")
    if isinstance(v, int) and not 0 <= v <= 1:  # (10**400: an OverflowError out of float)
        raise InputError(f"frequency {v} is not a probability in [0, 1]", file=str(path),
                         row=row, field="frequency")
    f = float(v)
    if math.isnan(f) or math.isinf(f):
        raise InputError(f"frequency is {f}", file=str(path), row=row, field="frequency")
    if f < 0 or f > 1:
        raise InputError(f"frequency {f} is not a probability in [0, 1]", file=str(path),
                         row=row, field="frequency")
    return f


class _Resolver:
    """Topic references (ids or labels) -> dense indices of one taxonomy."""

    def __init__(self, tax: Taxonomy) -> None:
        self.tax = tax
        self.by_label = {lab: i for i, lab in enumerate(tax.labels)}
        self.by_id = {int(t): i for i, t in enumerate(tax.ids)}

    def by_id_checked(self, tid: Any, label: Any, path: Path, row: int, field: str) -> int:
        if isinstance(tid, bool) or not isinstance(tid, int):
            raise InputError(f"topic id must be an integer, got {tid!r}", file=str(path),
                             row=row, field=field)
        if tid not in self.by_id:
            raise InputError(f"unknown topic id {tid} (taxonomy {self.tax.version})",
                             file=str(path), row=row, field=field)
        i = self.by_id[tid]
        if label is not None and label != self.tax.labels[i]:
            raise InputError(f"topic {tid} is labelled {label!r} but taxonomy "
                             f"{self.tax.version} says {self.tax.labels[i]!r} (wrong taxonomy?)",
                             file=str(path), row=row, field=field.replace("_id", "_label"))
        return i

    def indices(self, ids: np.ndarray) -> np.ndarray:
        """Dense indices of topic ids (``-1`` for ids not in the taxonomy)."""
        known = np.asarray(self.tax.ids, dtype=np.int64)
        order = np.argsort(known, kind="stable")
        pos = np.clip(np.searchsorted(known[order], ids), 0, known.size - 1)
        hit = known[order][pos] == ids
        return np.where(hit, order[pos], -1)

    def by_label_checked(self, label: Any, path: Path, row: int, field: str) -> int:
        if not isinstance(label, str) or label not in self.by_label:
            raise InputError(f"unknown topic label {label!r} (taxonomy {self.tax.version})",
                             file=str(path), row=row, field=field)
        return self.by_label[label]


def _taxonomy_from_file(path: Path, expected: Taxonomy | None) -> Taxonomy:
    rows = _read_list(path)
    pairs = []
    for r, rec in enumerate(rows, start=1):
        tid = _field(rec, ("topic_id", "topics_id"), path, r)
        lab = _field(rec, ("topic_label",), path, r)
        if isinstance(tid, bool) or not isinstance(tid, int):
            raise InputError(f"topic id must be an integer, got {tid!r}", file=str(path),
                             row=r, field="topic_id")
        pairs.append((tid, lab))
    candidates = [expected] if expected is not None else [load(v) for v in ("v2", "v1")]
    for tax in candidates:
        res = _Resolver(tax)
        if len(pairs) == tax.size and all(res.by_id.get(t) is not None
                                          and tax.labels[res.by_id[t]] == lab
                                          for t, lab in pairs):
            return tax
    want = expected.version if expected is not None else "v1 or v2"
    for r, (t, lab) in enumerate(pairs, start=1):
        ok = any(_Resolver(tx).by_id.get(t) is not None
                 and tx.labels[_Resolver(tx).by_id[t]] == lab for tx in candidates)
        if not ok:
            raise InputError(f"topic {t} {lab!r} does not match taxonomy {want}",
                             file=str(path), row=r, field="topic_id")
    raise InputError(f"taxonomy has {len(pairs)} topics, expected {want}", file=str(path))


def _taxonomy_from_labels(labels: set[str]) -> Taxonomy:
    """The taxonomy holding every label, else the one holding the most: a label it lacks is
    then named by file, record and field when the records are read (a typo in
    ``qacross.json`` was reported against ``qwithin.json``, with no record)."""
    taxonomies = [load(v) for v in ("v2", "v1")]
    return max(taxonomies, key=lambda tax: len(labels & set(tax.labels)))


def _records_fast(rows: list[Any], res: _Resolver, id_keys: tuple[str, ...],
                  label_keys: tuple[str, ...]) -> tuple[list[np.ndarray], np.ndarray] | None:
    """Topic indices (one array per key) and frequencies of well-formed records, in bulk.

    ``None`` as soon as anything is unusual (a missing field, a non-integer id, an unknown
    topic, a label that disagrees, a frequency outside [0, 1]): the record-by-record reader then
    finds the first fault and names its row and field. A release holds ~330K records; reading
    them one call per field took ~2 s of every run (measured), this ~0.2 s.
    """
    try:
        if not {*map(type, rows)} <= {dict}:
            return None
        columns = [[rec[key] for rec in rows] for key in id_keys]
        freq_list = [rec["frequency"] for rec in rows]
    except KeyError:
        return None
    # set(map(type, ...)) runs at C speed; ``bool`` is not ``int`` here, as in the slow path
    if any(not {*map(type, col)} <= {int} for col in columns):
        return None
    if not {*map(type, freq_list)} <= {int, float}:
        return None
    try:
        indices = [res.indices(np.array(col, dtype=np.int64)) for col in columns]
    except OverflowError:
        return None
    if any(bool((idx < 0).any()) for idx in indices):
        return None
    labels = res.tax.labels
    for key, idx in zip(label_keys, indices, strict=True):
        given = [rec.get(key) for rec in rows]
        expected = list(map(labels.__getitem__, idx.tolist()))
        if given != expected and any(g is not None and g != e
                                     for g, e in zip(given, expected, strict=True)):
            return None
    try:
        freq = np.array(freq_list, dtype=float)
    except OverflowError:  # an int past a float's range: the record reader names its row
        return None
    if not (np.isfinite(freq).all() and (freq >= 0).all() and (freq <= 1).all()):
        return None
    return indices, freq


def _distinct_cells(flat: np.ndarray) -> bool:
    return int(np.unique(flat).size) == int(flat.size)


def _put(mat: np.ndarray, seen: np.ndarray, i: int, j: int, f: float, path: Path,
         row: int) -> None:
    if seen[i, j] and not math.isclose(mat[i, j], f, rel_tol=1e-12, abs_tol=1e-15):
        raise InputError(f"pair given twice with different frequencies ({mat[i, j]} vs {f})",
                         file=str(path), row=row, field="frequency")
    mat[i, j] = f
    seen[i, j] = True


def _ledger_k(ledger: PrivacyLedger, file: str, m: int) -> int:
    bounding = ledger.contribution_bounding
    k = bounding.get("k") if isinstance(bounding, dict) else None
    if isinstance(k, bool) or not isinstance(k, int) or not 2 <= k <= m:
        raise InputError(f"k must be an integer in 2..{m}, got {k!r}; restore the ledger "
                         "(or rerun topicslab stats)", file=file, field="contribution_bounding.k")
    return k


def _check_ledger_taxonomy(ledger: PrivacyLedger, tax: Taxonomy, file: str,
                           directory: str) -> None:
    """The ledger's pair queries must count the pairs of the statistics' taxonomy: a within-week
    query releases one count per unordered pair of topics, an across-week one per ordered
    pair. A ledger copied from a release of the other taxonomy (its σ and its n are that
    release's, and the fit stops at their noise floor) was read as this release's."""
    m = tax.size
    for mech in ledger.mechanisms:
        name = mech.get("name") if isinstance(mech, dict) else None
        if not isinstance(name, str) or not name.startswith(("within", "across")):
            continue
        want = m * (m - 1) // 2 if name.startswith("within") else m * m
        dims = mech.get("dims")
        if isinstance(dims, int) and dims != want:  # (its type is load_ledger's to check)
            other = next((t for t in (load(v) for v in ("v2", "v1"))
                          if dims == (t.size * (t.size - 1) // 2 if name.startswith("within")
                                      else t.size * t.size)), None)
            whose = (f"the pairs of taxonomy {other.version} ({other.size} topics)"
                     if other is not None else "another number of topic pairs")
            raise InputError(f"mechanism {name} released {dims:,} counts, "
                             f"{whose}, but the statistics in {directory} use taxonomy "
                             f"{tax.version} ({m} topics: {want:,} pairs): the ledger is "
                             "another release's; restore this release's ledger (or rerun "
                             "topicslab stats)", file=file, field="mechanisms")


def _check_ledger_k(ledger: PrivacyLedger, k: int, total: float, n: float, m: int,
                    file: str) -> None:
    """A top-k set holds C(k, 2) pairs, so the within-week pair frequencies sum to at most
    C(k, 2) (less with padding): a sum past that by more than the noise can add contradicts
    the ledger's k. Each pair's discrete Gaussian noise (sigma users) adds at most the mean
    of its positive part once counts are clipped at 0, plus four deviations of the sum: only
    statistics with little noise can show the contradiction."""
    sigmas = [float(mech.get("sigma", 0.0)) for mech in ledger.mechanisms
              if isinstance(mech, dict) and str(mech.get("name", "")).startswith("within")
              and isinstance(mech.get("sigma"), int | float)]
    if not sigmas or not (math.isfinite(n) and n > 0):
        return  # the noise is not known: nothing can be told apart from it
    sigma = max(sigmas)
    if not math.isfinite(sigma) or sigma < 0:
        return
    if sigma > 50:  # the continuous Gaussian's: sigma / sqrt(2 pi)
        positive_part = sigma / math.sqrt(2 * math.pi)
    else:
        j = np.arange(-int(10 * sigma) - 10, int(10 * sigma) + 11, dtype=np.float64)
        weight = np.exp(-(j**2) / (2 * sigma**2)) if sigma > 0 else (j == 0) * 1.0
        positive_part = float((np.maximum(j, 0) * weight).sum() / weight.sum())
    pairs = m * (m - 1) / 2
    margin = (pairs * positive_part + 4.0 * math.sqrt(pairs) * sigma) / n
    if total > k * (k - 1) / 2 + margin:
        raise InputError(f"k = {k} contradicts the statistics: their within-week pair "
                         f"frequencies sum to {total:.3g}, more than the {k * (k - 1) // 2} "
                         f"pairs a top-{k} set holds; restore the ledger (or rerun topicslab "
                         "stats)", file=file, field="contribution_bounding.k")


def _read_overlap(path: Path, k: int) -> np.ndarray:
    """``q_overlap[L, k+1]`` from ``q_overlap.json`` (module docstring), every fault named by
    row and field."""
    rows = _read_list(path)
    if not rows:
        raise InputError("no records: the statistics are incomplete; restore the file (or "
                         "rerun topicslab stats)", file=str(path))
    cells: dict[tuple[int, int], float] = {}
    for r, rec in enumerate(rows, start=1):
        ints = []
        for name, lo, hi in (("lag", 1, 1024), ("overlap", 0, k)):
            v = _field(rec, (name,), path, r)
            if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
                raise InputError(f"{name} must be an integer in {lo}..{hi}, got {v!r}",
                                 file=str(path), row=r, field=name)
            ints.append(v)
        key = (ints[0], ints[1])
        if key in cells:
            raise InputError(f"lag {key[0]}, overlap {key[1]} listed twice", file=str(path),
                             row=r, field="overlap")
        cells[key] = _frequency(rec, path, r)
    lags = max(lag for lag, _ in cells)
    out = np.zeros((lags, k + 1))
    for (lag, j), f in cells.items():
        out[lag - 1, j] = f
    if len(cells) != out.size:
        raise InputError(f"lists {len(cells)} of the {out.size} cells of lags 1..{lags} × "
                         f"overlaps 0..{k}: the statistic is incomplete; restore the file (or "
                         "rerun topicslab stats)", file=str(path))
    bad = np.flatnonzero(np.abs(out.sum(axis=1) - 1) > 1e-6)
    if bad.size:
        raise InputError(f"the frequencies of lag {int(bad[0]) + 1} sum to "
                         f"{out[bad[0]].sum():.6g}, not 1", file=str(path), field="frequency")
    return out


def _ledger_n(ledger: PrivacyLedger, file: str) -> float:
    extra = ledger.extra if isinstance(ledger.extra, dict) else {}
    n = extra.get("n_estimate", float("nan"))
    if n is None:
        return float("nan")
    if isinstance(n, bool) or not isinstance(n, int | float):
        raise InputError(f"n_estimate must be a number, got {n!r}; restore the ledger "
                         "(or rerun topicslab stats)", file=file, field="extra.n_estimate")
    if not math.isfinite(float(n)) or n < 1:
        # (0 or -5 dropped the ledger's noise without a word: no noise floor for the fit, no
        # sigma for validate; 1e-300 made the floor inf; the release never estimates less
        # than one user, postprocess.to_probabilities)
        raise InputError(f"n_estimate must be a number >= 1 (the release's estimate of its "
                         f"users, never below 1), got {n!r}; restore the ledger (or rerun "
                         "topicslab stats)", file=file, field="extra.n_estimate")
    return float(n)


#: the noise of one released frequency that the fit's noise floor and validate's shares can
#: square and sum over a release's terms in float64 (a σ of 1e300 made the floor NaN, one of
#: 1e-300 made it 0, read as "no noise known": both left the fit with no floor, silently)
_TERM_SIGMA = (1e-150, 1e150)


def _check_term_sigmas(stats: DPStatistics, ledger: PrivacyLedger, file: str) -> None:
    """The ledger's σ over its n_estimate, per released frequency, within ``_TERM_SIGMA``."""
    sigmas = stats.noise_sigmas()
    lo, hi = _TERM_SIGMA
    released = [str(mech.get("name", "")) for mech in ledger.mechanisms
                if isinstance(mech, dict)]
    for name, value in (sigmas or {}).items():
        if math.isnan(value) and not any(m.startswith(name) for m in released):
            continue  # (no such frequencies released: a release of one week has no across)
        if not lo <= value <= hi:  # (NaN too)
            shown = [f"{mech.get('name')} {mech.get('sigma_sampled', mech.get('sigma'))!r:.20}"
                     for mech in ledger.mechanisms if isinstance(mech, dict)][:2]
            raise InputError(f"the mechanisms' sigma ({', '.join(shown)}, ...) over n_estimate "
                             f"{stats.n_estimate:.6g} put a noise of {value:.3g} on each "
                             f"{name} frequency, outside {lo:g}..{hi:g} (no release's noise "
                             "is; it cannot be computed with); restore the ledger (or rerun "
                             "topicslab stats)", file=file, field="mechanisms")


def load_statistics(directory: str | Path, *, taxonomy: Taxonomy | str | None = None,
                    k: int | None = None) -> DPStatistics:
    """Read a release directory (current or legacy schema) into ``DPStatistics``.

    ``taxonomy`` (optional) is the taxonomy the statistics must use; otherwise it comes from
    ``taxonomy.json`` (or, without one, from the labels). ``k`` defaults to the ledger's or to
    the k with C(k,2) closest to Σ q_within.
    """
    from topicslab._paths import path_name

    d = Path(path_name(directory, "directory"))
    # read while no writer moves a release in: a read while ``stats --out`` replaced the
    # files took q_within.json of one release beside q_across.json of another
    with set_lock(d, shared=True):
        return _load_statistics(d, taxonomy, k)


def _load_statistics(d: Path, taxonomy: Taxonomy | str | None, k: int | None,
                     ) -> DPStatistics:
    expected = resolve(taxonomy) if taxonomy is not None else None
    if (d / WITHIN).exists():
        w_path, a_path, legacy = d / WITHIN, d / ACROSS, False
    elif (d / LEGACY_WITHIN).exists():
        w_path, a_path, legacy = d / LEGACY_WITHIN, d / LEGACY_ACROSS, True
    elif d.is_dir() and (d / "stages.json").is_file() and (d / "stats" / WITHIN).is_file():
        # a run's output directory (as load_ledger says it for stats --explain)
        raise InputError(f"is a directory holding a run's output (topicslab run), whose DP "
                         f"release is {d / 'stats'}; give that directory", file=str(d))
    elif d.is_dir():
        raise InputError(f"no {WITHIN} or {LEGACY_WITHIN} in this directory; give the "
                         "directory of DP statistics that topicslab stats writes",
                         file=str(d))
    else:
        # a file, or no such path, was reported as a directory without the release's files
        # (fit/validate --stats pop.parquet, or a mistyped name)
        from topicslab.io._common import missing

        why = "is a file" if d.exists() else (
            missing(str(d)) if d.is_symlink() else "does not exist")
        raise InputError(why + "; give the directory of DP statistics that topicslab stats "
                         "writes", file=str(d))
    if not a_path.exists():
        raise InputError("file missing", file=str(a_path))
    w_rows, a_rows = _read_list(w_path), _read_list(a_path)
    if (d / TAXONOMY).exists():
        tax = _taxonomy_from_file(d / TAXONOMY, expected)
    elif expected is not None:
        tax = expected
    elif legacy:
        labels = {str(r.get(f)) for rows, fs in ((w_rows, ("topic1", "topic2")),
                                                 (a_rows, ("topic_week1", "topic_week2")))
                  for r in rows if isinstance(r, dict) for f in fs}
        tax = _taxonomy_from_labels(labels)
    else:
        raise InputError("file missing: a statistics directory holds taxonomy.json beside "
                         f"{WITHIN}; restore it (or rerun topicslab stats)",
                         file=str(d / TAXONOMY))
    res = _Resolver(tax)
    m = tax.size
    qw = np.zeros((m, m))
    qa = np.zeros((m, m))
    seen_w = np.zeros((m, m), dtype=bool)
    seen_a = np.zeros((m, m), dtype=bool)
    fast_w = None if legacy else _records_fast(w_rows, res, ("topic_1_id", "topic_2_id"),
                                                ("topic_1_label", "topic_2_label"))
    if fast_w is not None:
        (i1, i2), fw = fast_w
        lo, hi = np.minimum(i1, i2), np.maximum(i1, i2)
        if bool((lo == hi).any()) or not _distinct_cells(lo * m + hi):
            fast_w = None  # a pair of one topic, or a pair listed twice: found below
        else:
            qw[lo, hi] = fw
            seen_w[lo, hi] = True
    for r, rec in enumerate(w_rows if fast_w is None else [], start=1):
        if legacy:
            i = res.by_label_checked(_field(rec, ("topic1",), w_path, r), w_path, r, "topic1")
            j = res.by_label_checked(_field(rec, ("topic2",), w_path, r), w_path, r, "topic2")
        else:
            i = res.by_id_checked(_field(rec, ("topic_1_id",), w_path, r),
                                  rec.get("topic_1_label"), w_path, r, "topic_1_id")
            j = res.by_id_checked(_field(rec, ("topic_2_id",), w_path, r),
                                  rec.get("topic_2_label"), w_path, r, "topic_2_id")
        f = _frequency(rec, w_path, r)
        if i == j:
            raise InputError("a within-week pair needs two different topics", file=str(w_path),
                             row=r, field="topic_2_id" if not legacy else "topic2")
        a, b = min(i, j), max(i, j)
        _put(qw, seen_w, a, b, f, w_path, r)
    fast_a = None if legacy else _records_fast(
        a_rows, res, ("week_1_topic_id", "week_2_topic_id"),
        ("week_1_topic_label", "week_2_topic_label"))
    if fast_a is not None:
        (i1, i2), fa = fast_a
        if not _distinct_cells(i1 * m + i2):
            fast_a = None
        else:
            qa[i1, i2] = fa
            seen_a[i1, i2] = True
    for r, rec in enumerate(a_rows if fast_a is None else [], start=1):
        if legacy:
            i = res.by_label_checked(_field(rec, ("topic_week1",), a_path, r), a_path, r,
                                     "topic_week1")
            j = res.by_label_checked(_field(rec, ("topic_week2",), a_path, r), a_path, r,
                                     "topic_week2")
        else:
            i = res.by_id_checked(_field(rec, ("week_1_topic_id",), a_path, r),
                                  rec.get("week_1_topic_label"), a_path, r, "week_1_topic_id")
            j = res.by_id_checked(_field(rec, ("week_2_topic_id",), a_path, r),
                                  rec.get("week_2_topic_label"), a_path, r, "week_2_topic_id")
        _put(qa, seen_a, i, j, _frequency(rec, a_path, r), a_path, r)
    q_within = qw + qw.T
    ledger_path = d / LEDGER_FILE
    ledger: PrivacyLedger | None = load_ledger(d) if ledger_path.exists() else None
    for path, rows in ((w_path, w_rows), (a_path, a_rows)):
        if not rows:
            raise InputError("no records: the statistics are incomplete; restore the file "
                             "(or rerun topicslab stats)", file=str(path))
    if ledger is not None:  # written by topicslab stats: every pair is listed
        for path, seen_pairs, want in ((w_path, np.triu(seen_w, 1), m * (m - 1) // 2),
                                       (a_path, seen_a, m * m)):
            if int(seen_pairs.sum()) != want:
                raise InputError(f"lists {int(seen_pairs.sum())} of the {want} topic pairs of "
                                 f"taxonomy {tax.version}: the statistics are incomplete; "
                                 "restore the file (or rerun topicslab stats)", file=str(path))
    if ledger is not None:
        _check_ledger_taxonomy(ledger, tax, str(ledger_path), str(d))
    if k is None:
        if ledger is not None:
            k = _ledger_k(ledger, str(ledger_path), m)
            _check_ledger_k(ledger, k, float(np.triu(q_within, 1).sum()),
                            _ledger_n(ledger, str(ledger_path)), m, str(ledger_path))
        else:
            total = float(np.triu(q_within, 1).sum())
            k = max(2, round((1 + math.sqrt(1 + 8 * total)) / 2))
    else:
        # k=True (or 0, 470) divided by C(k, 2) = 0 or went past the taxonomy, silently
        k = integer(k, "k", at_least=2, at_most=m,
                    why="the statistics count pairs of a user's k topics of the taxonomy's")
        # (k=4 read a release of top-5 sets as one of top-4 sets, without a word)
        if ledger is not None and k != (said := _ledger_k(ledger, str(ledger_path), m)):
            raise InputError(f"k = {k}, but the privacy ledger says the release counts top-"
                             f"{said} sets; leave k out to read it with k = {said}",
                             file=str(ledger_path), field="k")
    n_est = float("nan") if ledger is None else _ledger_n(ledger, str(ledger_path))
    q_single = single_from_within(q_within, k)
    if not legacy and ledger is not None and not (d / SINGLE).exists():
        raise InputError(f"file missing: a statistics directory holds {SINGLE} beside "
                         f"{WITHIN}; restore it (or rerun topicslab stats)",
                         file=str(d / SINGLE))
    if not legacy and (d / SINGLE).exists():
        s_path = d / SINGLE
        q_single = np.zeros(m)
        seen = np.zeros(m, dtype=bool)
        s_rows = _read_list(s_path)
        fast_s = _records_fast(s_rows, res, ("topic_id",), ("topic_label",))
        if fast_s is not None and _distinct_cells(fast_s[0][0]):
            q_single[fast_s[0][0]] = fast_s[1]
            seen[fast_s[0][0]] = True
            s_rows = []
        for r, rec in enumerate(s_rows, start=1):
            i = res.by_id_checked(_field(rec, ("topic_id",), s_path, r), rec.get("topic_label"),
                                  s_path, r, "topic_id")
            if seen[i]:
                raise InputError("topic listed twice", file=str(s_path), row=r, field="topic_id")
            seen[i] = True
            q_single[i] = _frequency(rec, s_path, r)
        if not seen.all():
            raise InputError(f"lists {int(seen.sum())} of the {m} topics of taxonomy "
                             f"{tax.version}: the statistics are incomplete; restore the file "
                             "(or rerun topicslab stats)", file=str(s_path))
    q_overlap = None
    has_overlap = ledger is not None and any(
        isinstance(mech, dict) and mech.get("name") == "overlap" for mech in ledger.mechanisms)
    if has_overlap and not (d / OVERLAP).exists():
        raise InputError(f"file missing: the ledger lists the persistence statistic; restore "
                         f"{OVERLAP} (or rerun topicslab stats)", file=str(d / OVERLAP))
    # (read in either schema: save_statistics writes it beside the legacy files too)
    if (d / OVERLAP).exists():
        q_overlap = _read_overlap(d / OVERLAP, int(k))
        if ledger is not None:
            _check_overlap_ledger(q_overlap, ledger, str(d / OVERLAP), str(ledger_path))
    stats = DPStatistics(q_single, q_within, qa, n_est, tax, int(k), ledger, q_overlap)
    if ledger is not None:
        _check_term_sigmas(stats, ledger, str(ledger_path))
    return stats


def _check_overlap_ledger(q_overlap: np.ndarray, ledger: PrivacyLedger, file: str,
                          ledger_file: str) -> None:
    """The persistence statistic must be the one the ledger accounts for: one ``overlap``
    query of (k + 1)·L values for the file's L lags. A q_overlap.json copied into a release
    that never paid for it, or one of more or fewer lags than the query released, was fitted
    as it came (its noise and its privacy cost unknown)."""
    lags, bins = q_overlap.shape
    queries = [mech for mech in ledger.mechanisms if mech["name"] == "overlap"]
    if not queries:
        raise InputError("the ledger lists no persistence query (mechanism 'overlap'), so this "
                         "file is not part of the release and its privacy cost is not "
                         "accounted for: remove it (or rerun topicslab stats --overlap-lags "
                         f"{lags})", file=file)
    if len(queries) > 1:
        raise InputError(f"lists the persistence query (mechanism 'overlap') {len(queries)} "
                         "times, a release makes it once; restore the ledger (or rerun "
                         "topicslab stats)", file=ledger_file, field="mechanisms")
    dims = queries[0]["dims"]
    if dims != lags * bins:
        released = (f"{dims} values, not {lags} lags × {bins} overlaps" if dims % bins
                    else f"{dims // bins} lag(s) × {bins} overlaps")
        raise InputError(f"holds {lags} lag(s), but the ledger's persistence query released "
                         f"{released}: restore the file and the ledger of one release (or "
                         "rerun topicslab stats)", file=file)
    weeks = ledger.contribution_bounding.get("overlap_weeks")
    if weeks is not None and not (isinstance(weeks, list) and len(weeks) == lags and all(
            isinstance(w, int) and not isinstance(w, bool) for w in weeks)):
        raise InputError(f"must list the {lags} weeks of the persistence statistic's lags "
                         f"(its query released {lags}), got {weeks!r:.60}; restore the ledger "
                         "(or rerun topicslab stats)", file=ledger_file,
                         field="contribution_bounding.overlap_weeks")
