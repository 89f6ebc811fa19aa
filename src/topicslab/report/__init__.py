"""The release report: figures, the HTML page and the ``results.json`` schema.

Public names:
    build_report(results, *, statistics, synthetic, population, errors_path) -> str  (``build``)
    SECTION_IDS                       sections of a complete report
    validate_results(results)         check ``results.json`` against its schema (``schema``)
    results_schema()                  the schema (``data/results.schema.json``)
    figures, html                     the figure and HTML helpers
"""

from topicslab.report.build import SECTION_IDS, build_report
from topicslab.report.schema import ResultsSchemaError, results_schema, validate_results

__all__ = ["SECTION_IDS", "ResultsSchemaError", "build_report", "results_schema",
           "validate_results"]
