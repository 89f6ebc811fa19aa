"""Messages with square brackets survive the console's markup (issue 16).

rich reads ``[spark]`` as a style tag and drops it, so an unescaped install hint printed
``pip install 'topicslab'``. Every hint must reach the user as written.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from topicslab import io as tio
from topicslab.cli import app


def test_spark_install_hint_keeps_its_brackets(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from topicslab.datamodel import TopicSets
    from topicslab.taxonomy import resolve

    rng = np.random.default_rng(0)
    sets = np.sort(np.stack([np.stack([rng.choice(40, 5, replace=False) for _ in range(2)])
                             for _ in range(20)]), axis=-1).astype(np.int16)
    pop = tmp_path / "pop.parquet"
    tio.write_sets(pop, TopicSets(sets, resolve("v2"), np.arange(20, dtype=np.int64)))
    monkeypatch.setitem(sys.modules, "pyspark", None)  # import pyspark -> ImportError
    result = CliRunner().invoke(app, ["stats", "--sets", str(pop), "--out",
                                      str(tmp_path / "stats"), "--engine", "spark"])
    assert result.exit_code == 2, result.output
    line = " ".join(result.output.split())  # the console may wrap the line
    assert "pip install 'topicslab[spark]'" in line, result.output


def test_written_paths_keep_their_brackets(tmp_path: Path) -> None:
    # "wrote PATH" lines print user-chosen names: a name like run[spark].json must survive
    out = tmp_path / "run[spark].json"
    result = CliRunner().invoke(app, ["disclosure", "--example", "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert out.exists()
    assert "run[spark].json" in "".join(result.output.split()), result.output
