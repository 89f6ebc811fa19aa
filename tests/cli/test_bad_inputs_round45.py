"""Bad input, the forty-fifth independent round: option combinations and interactions,
output paths, saved artefacts edited by hand, interruptions other than SIGKILL (SIGINT,
SIGTERM, SIGHUP at random points, a reader that goes away, closed standard streams) and the
Python API given the wrong kinds of values.

- ``topicslab --help | head -1`` (and ``topicslab stats --help | head``, or ``topicslab``
  alone): exit code 1, where a command's output cut short the same way (``qif | head``)
  ends as the command would have: Typer prints the help on rich's own console, which ends
  the process with ``SystemExit(1)`` on a broken pipe.
- A kill (SIGTERM) or a closed terminal (SIGHUP) in the half second the libraries take to
  load: the process ended with no line at all (exit status 143 / 129, signal's default),
  where Ctrl-C in the same half second said "interrupted: topicslab stopped while
  starting; nothing written".
- A Ctrl-C in the hundredths of a second ``python -m topicslab`` takes to import its entry
  point: Python's traceback.

The same contract as ``test_bad_inputs.py``: exit code 2 (130 when interrupted), one line,
no traceback, and nothing written.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("TOPICSLAB_DEBUG", None)
    return env


@pytest.mark.parametrize(("args", "code"), [(["--help"], 0), (["stats", "--help"], 0),
                                            (["run", "--help"], 0), ([], 2)])
def test_the_help_to_a_reader_that_has_gone_ends_as_it_would_have(
        args: list[str], code: int, work: Path) -> None:
    """``topicslab --help | head -1``: the reader is gone before the help is written (its
    end of the pipe closed), and the help ends with its own exit code, without a line."""
    read, write = os.pipe()
    os.close(read)
    try:
        res = subprocess.run([sys.executable, "-m", "topicslab", *args], stdout=write,
                             stderr=subprocess.PIPE, text=True, env=_env(), timeout=120)
    finally:
        os.close(write)
    assert res.returncode == code, res.stderr
    assert res.stderr == ""


_SIGNAL_WHILE_LOADING = """
import os, signal, sys
import topicslab._main as m
number, load = getattr(signal, sys.argv[1]), m._import_cli
def loading():
    os.kill(os.getpid(), number)  # (delivered at once: the process's own signal)
    return load()
m._import_cli = loading
sys.argv = ["topicslab", "qif"]
m.main()
"""


@pytest.mark.skipif(not hasattr(__import__("signal"), "SIGHUP"), reason="POSIX signals")
@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_a_kill_while_the_libraries_load_ends_with_the_line(name: str, work: Path) -> None:
    res = subprocess.run([sys.executable, "-c", _SIGNAL_WHILE_LOADING, name],
                         capture_output=True, text=True, env=_env(), timeout=120)
    assert res.returncode == 130, (res.returncode, res.stderr)
    assert res.stderr == "interrupted: topicslab stopped while starting; nothing written\n"
    assert res.stdout == ""


_CTRL_C_WHILE_IMPORTING = """
import runpy, sys
class CtrlC:
    def find_spec(self, name, path=None, target=None):
        if name == "topicslab._main":
            raise KeyboardInterrupt
        return None
sys.meta_path.insert(0, CtrlC())
sys.argv = ["topicslab", "qif"]
runpy.run_module("topicslab", run_name="__main__", alter_sys=True)
"""


def test_ctrl_c_while_python_m_imports_its_entry_point_is_one_line(work: Path) -> None:
    res = subprocess.run([sys.executable, "-c", _CTRL_C_WHILE_IMPORTING],
                         capture_output=True, text=True, env=_env(), timeout=120)
    assert res.returncode == 130, (res.returncode, res.stderr)
    assert res.stderr == "interrupted: topicslab stopped while starting; nothing written\n"
