"""Rebuild the package's taxonomy CSVs from the upstream markdown tables.

    python -m topicslab.taxonomy.convert DIR

``DIR`` holds the taxonomy tables as markdown (``taxonomy_v1.md``, ``taxonomy_v2.md``, as
in the Topics API explainer, github.com/patcg-individual-drafts/topics) and the utility-bucket
table ``topics-utility-buckets-v1.md`` (``| /Top-level topic | Standard or High |`` rows).

Writes ``data/taxonomy_v1.csv`` and ``data/taxonomy_v2.csv`` with columns
``id,label,parent_id,bucket`` (parent_id 0 for top-level topics; bucket empty for v1, which
predates utility buckets).
"""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

from topicslab._atomic import write_text_atomic
from topicslab.taxonomy.core import Taxonomy
from topicslab.taxonomy.markdown import parse_buckets, parse_topics


def build(source_dir: Path) -> dict[str, str]:
    """CSV text for each version, from the markdown files in ``source_dir``."""
    buckets = parse_buckets(source_dir / "topics-utility-buckets-v1.md")
    out = {}
    for version in ("v1", "v2"):
        rows = parse_topics(source_dir / f"taxonomy_{version}.md")
        tax = Taxonomy._build(version, rows, buckets if version == "v2" else None)
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["id", "label", "parent_id", "bucket"])
        for i in range(tax.size):
            p = int(tax.parent[i])
            w.writerow([
                int(tax.ids[i]),
                tax.labels[i],
                int(tax.ids[p]) if p >= 0 else 0,
                tax.bucket_name(i) if version == "v2" else "",
            ])
        out[version] = buf.getvalue()
    return out


#: the files ``DIR`` holds
_SOURCES = "taxonomy_v1.md, taxonomy_v2.md, topics-utility-buckets-v1.md"


def main(argv: list[str] | None = None) -> None:
    """The command (README, Development); bad input is one ``error:`` line and exit code 2 (a
    missing or empty DIR, or a file of no table, was a traceback with exit code 1)."""
    from topicslab._paths import printable

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write("usage: python -m topicslab.taxonomy.convert DIR  (the explainer's "
                         f"markdown tables: {_SOURCES})\n")
        raise SystemExit(2)
    source = Path(args[0])
    target = Path(__file__).parent / "data"
    try:
        built = build(source)
    except OSError as exc:
        problem = f"{exc.filename or source}: {exc.strerror or exc}; DIR holds {_SOURCES}"
    except ValueError as exc:  # no table in a file, a row the taxonomy refuses, not UTF-8
        problem = str(exc) if str(exc).startswith(str(source)) else f"{source}: {exc}"
    else:
        problem = ""
    if problem:
        sys.stderr.write(f"error: {printable(problem)}\n")
        raise SystemExit(2)
    for version, text in built.items():
        write_text_atomic(target / f"taxonomy_{version}.csv", text)
        print(f"wrote {target / f'taxonomy_{version}.csv'}")


if __name__ == "__main__":
    main()
