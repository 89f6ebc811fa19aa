"""Model files: ``model.safetensors`` + ``model.json``, and the release's
``output_parameters.json`` (docs/design.md §Files).

Public names:
    save_model(directory, model) -> Path        both files or neither; returns the directory
    load_model(directory, *, taxonomy=None) -> TypeMixture
    export_release_parameters(path, model)      θ as ``{"type t": {"epoch w": {"slot s":
                                                {topic_id: logit}}}}`` (atomic)
    import_release_parameters(path, taxonomy) -> TypeMixture

``model.safetensors`` holds the tensor ``theta``, float32 ``[T, r, k, m]`` (persistent types:
``[T, M, k, m]``, M modes), topics in dense-index order (ascending taxonomy id), and for
persistent types ``stay`` ``[T, M, k]``, ``mode_weights`` ``[T, M]`` and ``mode_stay`` ``[T]``
(float32). ``model.json`` holds ``format``, ``format_version``, ``model`` (``paper`` or
``persistent``), ``taxonomy``, ``types``, ``weeks`` (the fitted r), ``modes`` (persistent),
``k``, ``topics``, ``weights_sha256`` (the digest of the ``model.safetensors`` it was
written with; files without one are read unchecked) and the model's metadata (seed,
statistics fingerprint, optimiser, loss, week pairs...). Every check failure is an
``InputError`` naming the file and field. Files written before persistent types existed have
no ``model`` key and are read as ``paper``.

The release's ``output_parameters.json`` holds the paper's θ only: a persistent model cannot
be exported to it (its stay probabilities have no place there).

Release keys: the writer uses 0-based ``"type 0"``, ``"epoch 0"``, ``"slot 0"`` and taxonomy ids
as strings. The reader takes any key ending in an integer (``"type 12"``, ``"type_12"``,
``"12"``), numbers each level in sorted order (0- or 1-based both work) and requires every
topic of the taxonomy in every slot.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from topicslab._atomic import atomic_dir, atomic_path, write_text_atomic
from topicslab._checks import value_shown
from topicslab._json import (
    DuplicateKeyError,
    IntegerTooLargeError,
    bounded_int,
    dumps,
    jsonable,
    loads,
    read_document,
    unique_keys,
)
from topicslab.errors import FileFieldError, InputError
from topicslab.model.typemixture import TypeMixture
from topicslab.taxonomy import VERSIONS, Taxonomy, resolve

__all__ = ["export_release_parameters", "import_release_parameters", "load_model",
           "save_model"]

WEIGHTS = "model.safetensors"
META = "model.json"
FORMAT = "topicslab-type-mixture"
FORMAT_VERSION = 1
_RESERVED = ("format", "format_version", "model", "taxonomy", "types", "weeks", "modes", "k",
             "topics", "weights_sha256")
_PERSISTENT = ("stay", "mode_weights", "mode_stay")


def save_model(directory: str | Path, model: TypeMixture) -> Path:
    """Write ``model.safetensors`` and ``model.json`` into ``directory``, both or neither.

    The pair is written into a temporary sibling directory and moved into ``directory``
    together (``atomic_dir``): a failure or Ctrl-C never leaves new weights beside old
    metadata. Other files in ``directory`` (fit checkpoints, history) are kept.
    """
    if not isinstance(model, TypeMixture):  # None failed inside the write (AttributeError)
        raise TypeError(f"save_model takes a TypeMixture (a fitted model), got "
                        f"{type(model).__name__}")
    from topicslab._paths import refuse_mixing

    refuse_mixing(directory, "model", "directory")
    with atomic_dir(directory, owned=(WEIGHTS, META)) as tmp:
        _write_model_files(tmp, model)
    return Path(directory)


def _canonical(data: bytes) -> bytes:
    """safetensors bytes with the header's keys in sorted order: the library writes its
    metadata map in an order that changes from process to process, so one fit (a resumed one,
    or the same command again) gave files, and ``weights_sha256`` digests, that differed."""
    size = int.from_bytes(data[:8], "little")
    header = json.dumps(json.loads(data[8:8 + size]), sort_keys=True,
                        separators=(",", ":")).encode()
    header += b" " * (-len(header) % 8)  # (the tensors stay 8-byte aligned, as written)
    return len(header).to_bytes(8, "little") + header + data[8 + size:]


def _write_model_files(d: Path, model: TypeMixture) -> None:
    from safetensors.numpy import save

    tensors = {"theta": np.ascontiguousarray(model.theta, dtype=np.float32)}
    for name in _PERSISTENT:
        arr = getattr(model, name)
        if arr is not None:
            tensors[name] = np.ascontiguousarray(arr, dtype=np.float32)
    with atomic_path(d / WEIGHTS) as tmp:
        tmp.write_bytes(_canonical(save(
            tensors, metadata={"format": FORMAT, "taxonomy": model.taxonomy.version})))
    meta = {"format": FORMAT, "format_version": FORMAT_VERSION, "model": model.variant,
            "taxonomy": model.taxonomy.version, "types": model.types, "weeks": model.weeks,
            "k": model.k, "topics": model.m,
            # the weights these metadata describe (load_model checks it): the weights of
            # another fit of the same shape were read under this fit's metadata
            "weights_sha256": _sha256((d / WEIGHTS).read_bytes())}
    if model.variant == "persistent":
        meta["modes"] = model.modes
    meta.update({k: v for k, v in jsonable(model.metadata).items() if k not in _RESERVED})
    write_text_atomic(d / META, dumps(meta, indent=2) + "\n")


def _sha256(data: bytes) -> str:
    import hashlib

    return "sha256:" + hashlib.sha256(data).hexdigest()


def _check_weights_digest(meta: dict[str, Any], data: bytes, meta_file: Path,
                          weights_file: Path) -> None:
    """The weights must be those ``model.json`` was written with (files of a model written
    before the digest existed have none, and are read as they are)."""
    if "weights_sha256" not in meta:
        return
    recorded = meta["weights_sha256"]
    if not isinstance(recorded, str) or not recorded.startswith("sha256:"):
        raise FileFieldError(f"must be 'sha256:' and the hex digest of {WEIGHTS}, got "
                             f"{value_shown(recorded, 40)}; restore the file (or refit)",
                             file=str(meta_file), field="weights_sha256")
    if _sha256(data) != recorded:
        raise FileFieldError(f"is not the weights {META} was written with (its sha256 differs "
                             f"from the one {META} records): the two files are of different "
                             "fits; restore both from one fit (or refit)",
                             file=str(weights_file), field="weights_sha256")


def _meta_int(meta: dict[str, Any], name: str, file: str, at_most: int | None = None) -> int:
    v = meta.get(name)
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise FileFieldError(f"must be a positive integer, got "
                             f"{value_shown(v)}", file=file, field=name)
    if at_most is not None and v > at_most:
        raise FileFieldError(f"must be at most {at_most:,}, got {v:,}", file=file, field=name)
    return v


def load_model(directory: str | Path, *, taxonomy: Taxonomy | str | None = None,
               ) -> TypeMixture:
    """Read a model directory written by ``save_model``; checks shape, taxonomy and values.

    ``taxonomy`` (optional) is the taxonomy the model must use (a mismatch is an error); it
    is needed for models of a custom taxonomy.
    """
    from topicslab._paths import path_name, set_lock

    d = Path(path_name(directory, "directory"))
    # read while no fit moves its model in (the metadata of one fit beside the weights of
    # another, of the same shape, were read as one model)
    with set_lock(d, shared=True):
        return _load_model(d, taxonomy)


def _load_model(d: Path, taxonomy: Taxonomy | str | None) -> TypeMixture:
    from safetensors import SafetensorError
    from safetensors.numpy import load

    from topicslab.io._common import MAX_WEEKS

    meta_file, weights_file = d / META, d / WEIGHTS
    if d.is_symlink() and not d.exists():  # was "d/model.json: file missing"
        from topicslab.io._common import missing

        raise FileFieldError(missing(str(d)), file=str(d))
    from topicslab._paths import other_output

    if (other := other_output(d, "model")) is not None:
        raise FileFieldError(other, file=str(d))
    for f, holds in ((meta_file, "metadata"), (weights_file, "parameters")):
        if f.is_file():
            continue
        if not (f.is_symlink() or f.exists()):
            raise FileFieldError("file missing (not a model directory?)", file=str(f))
        # (each was "file missing": it is there, of another kind)
        kind = ("a link that leads to no file" if not f.exists() else "a directory"
                if f.is_dir() else "not a regular file (a pipe, socket or device)")
        raise FileFieldError(f"is {kind}, where a model directory keeps its {holds}; "
                             "restore the file (or refit)", file=str(f))
    try:
        meta = loads(read_document(meta_file, "model.json"), parse_int=bounded_int,
                          object_pairs_hook=unique_keys)
    except DuplicateKeyError as exc:  # a second "weeks" replaced the first silently
        raise FileFieldError(f"{exc.key!r} is given twice in one object; restore the file (or "
                             "refit)", file=str(meta_file), field=exc.key) from None
    except (json.JSONDecodeError, UnicodeDecodeError, IntegerTooLargeError) as exc:
        raise FileFieldError(f"invalid JSON: {exc}", file=str(meta_file)) from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise FileFieldError(f"not a {FORMAT} file", file=str(meta_file), field="format")
    # (true is 1 to Python: a model.json of "format_version": true was read as version 1)
    if type(meta.get("format_version")) is not int or meta["format_version"] != FORMAT_VERSION:
        raise FileFieldError(f"unsupported format_version {meta.get('format_version')!r}",
                         file=str(meta_file), field="format_version")
    version = meta.get("taxonomy")
    if taxonomy is not None:
        tax = resolve(taxonomy)
        if version != tax.version:
            raise FileFieldError(f"model uses taxonomy {version!r}, expected {tax.version}",
                             file=str(meta_file), field="taxonomy")
    elif version in VERSIONS:
        tax = resolve(str(version))
    else:
        raise FileFieldError(f"unknown taxonomy {version!r}", file=str(meta_file),
                         field="taxonomy")
    variant = meta.get("model", "paper")
    if variant not in ("paper", "persistent"):
        raise FileFieldError(f"model must be 'paper' or 'persistent', got {variant!r}",
                         file=str(meta_file), field="model")
    # weeks: as many as a population may hold (a persistent model's tensors do not show them)
    shape = tuple(_meta_int(meta, n, str(meta_file), MAX_WEEKS if n == "weeks" else None)
                  for n in ("types", "weeks", "k", "topics"))
    weeks = shape[1]
    _check_week_pairs(meta, weeks, str(meta_file))
    if variant == "persistent":
        shape = (shape[0], _meta_int(meta, "modes", str(meta_file)), shape[2], shape[3])
    try:
        # safetensors reports every failure to open as "No such file or directory" (a file
        # this user may not read too): open it first, for the real reason
        # (read once: the bytes checked against model.json's digest are those loaded)
        data = weights_file.read_bytes()
        tensors = load(data)
    except OSError as exc:
        raise FileFieldError(f"cannot read safetensors ({exc.strerror or exc})",
                             file=str(weights_file)) from None
    except (SafetensorError, ValueError) as exc:
        raise FileFieldError(f"cannot read safetensors ({exc})", file=str(weights_file)) from None
    if "theta" not in tensors:
        raise FileFieldError("no tensor named 'theta'", file=str(weights_file), field="theta")
    theta = tensors["theta"]
    if "model" not in meta and all(name in tensors for name in _PERSISTENT):
        # read as the paper's types (the files before persistent types): the error was
        # "model.safetensors, field 'theta': theta has shape (2, 1, 5, 469), model.json says
        # (2, 4, 5, 469)", blaming the tensors for the key model.json lost
        raise FileFieldError("no 'model' key, so read as the paper's types, but "
                             f"{weights_file.name} holds a persistent model's tensors "
                             f"({', '.join(_PERSISTENT)}): restore \"model\": \"persistent\"",
                             file=str(meta_file), field="model")
    if theta.shape != shape:
        raise FileFieldError(f"theta has shape {theta.shape}, model.json says {shape}",
                         file=str(weights_file), field="theta")
    metadata = {k: v for k, v in meta.items() if k not in _RESERVED}
    extra: dict[str, Any] = {}
    if variant == "persistent":
        for name in _PERSISTENT:
            if name not in tensors:
                raise FileFieldError(f"persistent model without a tensor named {name!r}",
                                 file=str(weights_file), field=name)
            extra[name] = tensors[name]
        metadata["weeks"] = weeks
    _check_weights_digest(meta, data, meta_file, weights_file)
    try:
        return TypeMixture(theta.astype(np.float32, copy=False), tax, metadata, **extra)
    except InputError as exc:  # a field of the file, not an option of the command
        raise FileFieldError(exc.message, file=exc.file or str(weights_file), row=exc.row,
                             field=exc.field) from None


def _check_week_pairs(meta: dict[str, Any], weeks: int, file: str) -> None:
    """A fit records the consecutive week pairs of its ``weeks`` (and, cyclic, the wrap
    ``[weeks-1, 0]``): an edited ``week_pairs`` as text was a ValueError (exit code 1), and a
    pair past the weeks, a gap or an edited ``weeks`` were validated as the fit's."""
    if "week_pairs" not in meta:
        return
    pairs = meta["week_pairs"]
    consecutive = [[i, i + 1] for i in range(weeks - 1)]
    if pairs not in (consecutive, [*consecutive, [weeks - 1, 0]] if weeks > 1 else None):
        raise FileFieldError(f"does not match weeks = {weeks}, whose fit records the "
                             f"consecutive week pairs {json.dumps(consecutive)} (and "
                             f"[{weeks - 1}, 0] if cyclic), got {pairs!r:.60}; restore "
                             "model.json (or refit)", file=file, field="week_pairs")


# ------------------------------------------------------------------ release format

def export_release_parameters(path: str | Path, model: TypeMixture) -> Path:
    """Write θ in the release's nested ``output_parameters.json`` layout (atomic)."""
    if not isinstance(model, TypeMixture):  # (statistics failed on .stay)
        raise TypeError(f"export_release_parameters takes a TypeMixture (a fitted model), got "
                        f"{type(model).__name__}")
    if model.stay is not None:
        raise FileFieldError("the release's output_parameters.json holds the paper's types only; "
                         "a persistent model's stay probabilities have no place there (fit "
                         "with --model paper to export, or share model.safetensors)",
                         field="model")
    ids = [str(int(x)) for x in model.taxonomy.ids]
    theta = model.theta.astype(np.float64)
    doc = {f"type {t}": {f"epoch {w}": {f"slot {s}": dict(zip(ids, theta[t, w, s].tolist(),
                                                              strict=True))
                                       for s in range(model.k)}
                         for w in range(model.weeks)}
           for t in range(model.types)}
    p = Path(path)
    write_text_atomic(p, dumps(doc))
    return p


#: (ASCII digits, as every reader takes: "type ０" was type 0; and not a decimal's last digits:
#: "type 0.0" was type 0)
_INDEX = re.compile(r"(?<![.\d])(\d+)\s*$", re.ASCII)
_TOPIC_KEY = re.compile(r"-?(0|[1-9][0-9]*)")  # str(id), as export_release_parameters writes


def _ordered(level: Any, what: str, file: str, where: str) -> list[Any]:
    """Values of one nesting level ordered by the integer at the end of their keys."""
    if not isinstance(level, dict) or not level:
        raise FileFieldError(f"expected a non-empty object of {what}s", file=file,
                         field=where or what)
    keyed = []
    for key, value in level.items():
        m = _INDEX.search(str(key))
        if m is None:
            article = "an" if what[0] in "aeiou" else "a"  # (was "a epoch number")
            raise FileFieldError(f"key {key!r} does not end in {article} {what} number", file=file,
                             field=f"{where}/{key}".strip("/"))
        keyed.append((int(m.group(1)), str(key), value))
    keyed.sort()
    nums = [n for n, _, _ in keyed]
    if nums != list(range(nums[0], nums[0] + len(nums))) or nums[0] not in (0, 1):
        raise FileFieldError(f"{what} numbers must run 0..n-1 or 1..n, got {nums[:5]}...",
                         file=file, field=where or what)
    return [(key, value) for _, key, value in keyed]


#: the topicslab JSON files (by their ``format``) that are not a release's parameters
_OTHER_JSON = {
    "topicslab-type-mixture": "the model.json of a fitted model (topicslab fit), not a "
                              "release output_parameters.json: give the model's directory, "
                              "{directory}",
    "topicslab-learned-attack": "the model.json of a learned attack (topicslab attack-train), "
                                "not a model of users: give a model directory (topicslab fit) "
                                "or a release output_parameters.json",
}


def import_release_parameters(path: str | Path, taxonomy: Taxonomy | str = "v2",
                              ) -> TypeMixture:
    """Read a release ``output_parameters.json`` into a ``TypeMixture`` (metadata records
    the source). Every type must have the same weeks, slots and all topics of ``taxonomy``."""
    from topicslab._paths import path_name

    tax = resolve(taxonomy)
    p = Path(path_name(path))  # (None or bytes was pathlib's TypeError)
    file = str(p)
    if not p.is_file():
        raise FileFieldError("file not found", file=file)
    from topicslab._paths import run_record

    if (record := run_record(p)) is not None:
        raise FileFieldError(f"is {record}, not a release output_parameters.json: give the "
                             f"run's model directory, {p.parent / 'model'}", file=file)
    try:
        doc = loads(read_document(p), parse_int=bounded_int,
                         object_pairs_hook=unique_keys)
    except DuplicateKeyError as exc:
        raise FileFieldError(f"{exc.key!r} is given twice in one object", file=file,
                             field=exc.key) from None
    except (json.JSONDecodeError, UnicodeDecodeError, IntegerTooLargeError) as exc:
        raise FileFieldError(f"invalid JSON: {exc}", file=file) from None
    # another topicslab file (a model directory's model.json) was "key 'format' does not
    # end in a type number": say what the file is, and what to give instead
    kind = _OTHER_JSON.get(str(doc.get("format"))) if isinstance(doc, dict) else None
    if kind is not None:
        raise FileFieldError(f"is {kind.format(directory=p.parent)}", file=file)
    if isinstance(doc, dict) and doc and not any(_INDEX.search(str(k)) for k in doc):
        raise FileFieldError(
            "is not a release output_parameters.json (whose keys are 'type 0', 'type 1', "
            f"...; this file's begin {', '.join(repr(str(k)) for k in list(doc)[:3])}); "
            "give a release's output_parameters.json or a model directory", file=file)
    lut = {int(t): i for i, t in enumerate(tax.ids)}
    types = _ordered(doc, "type", file, "")
    shape: tuple[int, int] | None = None
    theta: npt.NDArray[np.float32] | None = None
    for t, (tkey, tval) in enumerate(types):
        weeks = _ordered(tval, "epoch", file, tkey)
        slots0 = _ordered(weeks[0][1], "slot", file, f"{tkey}/{weeks[0][0]}")
        if shape is None:
            shape = (len(weeks), len(slots0))
            theta = np.empty((len(types), shape[0], shape[1], tax.size), dtype=np.float32)
        if (len(weeks), len(slots0)) != shape:
            raise FileFieldError(f"{len(weeks)} epochs x {len(slots0)} slots, the first type has "
                             f"{shape[0]} x {shape[1]}", file=file, field=tkey)
        assert theta is not None
        for w, (wkey, wval) in enumerate(weeks):
            slots = _ordered(wval, "slot", file, f"{tkey}/{wkey}")
            if len(slots) != shape[1]:
                raise FileFieldError(f"{len(slots)} slots, expected {shape[1]}", file=file,
                                 field=f"{tkey}/{wkey}")
            for s, (skey, sval) in enumerate(slots):
                where = f"{tkey}/{wkey}/{skey}"
                theta[t, w, s] = _slot_logits(sval, lut, tax, file, where)
    assert theta is not None
    return TypeMixture(theta, tax, {"source": file, "format": "release output_parameters"})


def _slot_logits(sval: Any, lut: dict[int, int], tax: Taxonomy, file: str, where: str,
                 ) -> npt.NDArray[np.float32]:
    if not isinstance(sval, dict):
        raise FileFieldError("expected an object {topic_id: logit}", file=file, field=where)
    row = np.full(tax.size, np.nan, dtype=np.float64)
    for key, value in sval.items():
        # int() also read " 1", "01", "1_2" and full-width digits: a second key of the same
        # topic ("1" and "01") silently replaced the first one's logit
        if not isinstance(key, str) or _TOPIC_KEY.fullmatch(key) is None:
            raise FileFieldError(f"topic key {key!r} is not an integer id (digits 0-9: no "
                                 "spaces, underscores, '+' or leading zeros)", file=file,
                                 field=where)
        tid = int(key)
        if tid not in lut:
            raise FileFieldError(f"unknown topic id {tid} (taxonomy {tax.version}; wrong "
                             "taxonomy?)", file=file, field=where)
        if isinstance(value, bool) or not isinstance(value, int | float) \
                or not math.isfinite(value):
            raise FileFieldError(f"logit of topic {tid} is {value!r}, not a finite number",
                             file=file, field=where)
        if abs(value) > np.finfo(np.float32).max:  # (was "theta has non-finite logits")
            raise FileFieldError(f"logit of topic {tid} is {value!r}, past float32's range",
                                 file=file, field=where)
        row[lut[tid]] = float(value)
    if np.isnan(row).any():
        missing = int(tax.ids[int(np.argmax(np.isnan(row)))])
        raise FileFieldError(f"topic id {missing} missing ({int(np.isnan(row).sum())} of "
                         f"{tax.size} topics missing; wrong taxonomy?)", file=file,
                         field=where)
    return row.astype(np.float32)
