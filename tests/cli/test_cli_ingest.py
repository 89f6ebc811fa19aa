"""``topicslab ingest`` end to end on the shipped sample, and its one-line refusals."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from topicslab import io as tio
from topicslab.api.ingest import ingest_visits
from topicslab.cli import app
from topicslab.io.visits import sample_files

runner = CliRunner()


@pytest.fixture
def sample(tmp_path: Path) -> tuple[Path, Path]:
    visits, domains = sample_files()
    return (Path(shutil.copy(visits, tmp_path / "visits.csv")),
            Path(shutil.copy(domains, tmp_path / "domains.csv")))


def test_ingest_sample(tmp_path: Path, sample: tuple[Path, Path]) -> None:
    visits, domains = sample
    out, unc = tmp_path / "profiles.parquet", tmp_path / "unclassified.csv"
    res = runner.invoke(app, ["ingest", "-v", str(visits), "-d", str(domains), "-o", str(out),
                              "--seed", "3", "--unclassified", str(unc)])
    assert res.exit_code == 0, res.output
    assert "402" in res.output and "12 × 3" in res.output
    got = tio.read_sets(out)
    assert got.sets.shape == (12, 3, 5)
    got.validate(allow_empty=False)
    lib = ingest_visits(visits, domains, seed=3)
    assert np.array_equal(got.sets, lib.sets.sets)
    assert np.array_equal(got.user_ids, np.arange(101, 113))
    with open(unc, newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["domain", "visits"]
    assert {r[0] for r in rows[1:]} == {"acme-corp.com", "my-personal-blog.net",
                                        "tiny-forum.org"}
    assert sum(int(r[1]) for r in rows[1:]) == lib.report.unclassified_visits > 0
    for d, _ in lib.report.unclassified:
        assert d in res.output


def _refused(res, named: str) -> None:  # type: ignore[no-untyped-def]
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), res.output
    assert named in lines[0], res.output


@pytest.mark.parametrize(("edit", "extra", "named"), [
    (("domains", "football-daily.co.uk,325", "football-daily.co.uk,9999"), [],
     "row 1, field 'topics'"),
    (("visits", "104,2024-01-01T01:03:17Z", "104,2024-13-01T01:03:17Z"), [],
     "row 1, field 'timestamp'"),
    (("visits", "110,2024-01-01T02:25:05Z,https://www.mybank-online.com/article/123",
      "110,2024-01-01T02:25:05Z,https:///article/123"), [], "row 2, field 'url'"),
    (None, ["--k", "0"], "--k"),
    (None, ["--epoch-start", "soon"], "--epoch-start"),
    (None, ["--epoch-start", "2024-01-10"], "before the epoch start"),
    (None, ["--taxonomy", "v3"], "--taxonomy"),
    (None, ["--week-column", "week"], "--week-column"),
])
def test_ingest_refuses_bad_input(tmp_path: Path, sample: tuple[Path, Path],
                                  edit: tuple[str, str, str] | None, extra: list[str],
                                  named: str) -> None:
    visits, domains = sample
    if edit is not None:
        path = visits if edit[0] == "visits" else domains
        text = path.read_text()
        assert edit[1] in text
        path.write_text(text.replace(edit[1], edit[2], 1))
    before = sorted(p.name for p in tmp_path.iterdir())
    res = runner.invoke(app, ["ingest", "-v", str(visits), "-d", str(domains),
                              "-o", str(tmp_path / "p.parquet"),
                              "--unclassified", str(tmp_path / "u.csv"), *extra])
    _refused(res, named)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


def test_ingest_refuses_outputs_over_inputs(tmp_path: Path, sample: tuple[Path, Path]) -> None:
    visits, domains = sample
    base = ["ingest", "-v", str(visits), "-d", str(domains)]
    _refused(runner.invoke(app, [*base, "-o", str(visits)]), "--out")
    _refused(runner.invoke(app, [*base, "-o", str(tmp_path / "p.json")]), "--out")
    _refused(runner.invoke(app, [*base, "-o", str(tmp_path / "p.csv"),
                                 "--unclassified", str(domains)]), "--unclassified")
