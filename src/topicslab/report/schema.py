"""The documented schema of ``results.json`` (``data/results.schema.json``, JSON Schema 2020-12)
and its validation with the ``jsonschema`` library.

Public names:
    results_schema() -> dict         the schema
    validate_results(results)        raise ``ResultsSchemaError`` naming the first bad field
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from topicslab.errors import TopicsLabError


class ResultsSchemaError(TopicsLabError):
    """``results.json`` does not match its schema (a bug, or a hand-edited file)."""


@cache
def results_schema() -> dict[str, Any]:
    """The JSON Schema of ``results.json``."""
    text = resources.files("topicslab.report").joinpath("data/results.schema.json").read_text(
        encoding="utf-8")
    return dict(json.loads(text))


def validate_results(results: dict[str, Any]) -> None:
    """Check ``results`` against the schema; the error names the JSON path of the bad field."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(results_schema())
    errors = sorted(validator.iter_errors(results), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        where = "/".join(str(p) for p in e.absolute_path) or "(top level)"
        raise ResultsSchemaError(f"results.json: field {where}: {e.message}")
