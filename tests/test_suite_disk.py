"""The suite's own disk: a test file that passed leaves nothing under pytest's temporary
directory, one that failed keeps its directories for a look (tests/conftest.py). The suite
kept 11 GB to the end of a session, and a CI machine's disk ran out at 68% of it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

PASSING = '''
import pytest

@pytest.fixture(scope="module")
def made(tmp_path_factory):
    d = tmp_path_factory.mktemp("module-fixture")
    (d / "big").write_bytes(b"x" * 1000)
    return d

def test_one(made, tmp_path):
    (tmp_path / "f").write_text("x")

def test_two(made, tmp_path):
    (tmp_path / "g").write_text("y")
'''

FAILING = '''
import pytest

@pytest.fixture(scope="module")
def kept(tmp_path_factory):
    return tmp_path_factory.mktemp("kept-fixture")

def test_fails(kept, tmp_path):
    (tmp_path / "h").write_text("z")
    assert False
'''


def test_a_passing_file_leaves_nothing_and_a_failing_one_keeps_its_directories(
        tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    shutil.copy(Path(__file__).with_name("conftest.py"), suite / "conftest.py")
    (suite / "test_passing.py").write_text(PASSING)
    (suite / "test_failing.py").write_text(FAILING)
    base = tmp_path / "base"
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p",
                          "no:cacheprovider", "-o", "tmp_path_retention_policy=failed",
                          f"--basetemp={base}", "--rootdir", str(suite), str(suite)],
                         capture_output=True, text=True, timeout=300, cwd=suite)
    assert "1 failed, 2 passed" in res.stdout, res.stdout + res.stderr
    left = sorted(p.name for p in base.iterdir())
    # the passing file's module directory and test directories are gone; the failing file's
    # module directory and its test's directory stay
    assert not any(n.startswith(("module-fixture", "test_one", "test_two")) for n in left), left
    assert any(n.startswith("kept-fixture") for n in left), left
    assert any(n.startswith("test_fails") for n in left), left
