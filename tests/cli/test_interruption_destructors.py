"""Ctrl-C whose traceback holds an object that must not be freed (issue 15).

A signal that arrives while numba compiles a kernel or loads it from its cache leaves
llvmlite modules half built in the interrupted frames; freeing them (their ``__del__``)
crashed the process with SIGSEGV, exit status -11, after the correct "interrupted:" line
(``population`` under ``kill -USR1``, about 1 case in 30 on a loaded machine). The command now
keeps the interruption's traceback until the process ends with ``os._exit``. (Before the
command takes over, only the package's modules are imported: no numba kernel is compiled or
loaded until a command calls one.)

The half-built module is stood in for by an object whose destructor ends the process with
SIGSEGV, held by the frame that raises ``KeyboardInterrupt``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

_SCRIPT = """\
import os, signal, sys

import topicslab._main as entry
import topicslab.population as pop


class HalfBuilt:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGSEGV)


def interrupted(*args, **kwargs):
    module = HalfBuilt()
    raise KeyboardInterrupt


pop.generate_chunks = interrupted  # Ctrl-C half-way through the command
sys.argv = ["topicslab", "population", "--users", "1000", "--out", "p.parquet"]
entry.main()
"""


def test_an_interrupted_frame_is_not_freed_before_the_exit(tmp_path: Path) -> None:
    from topicslab import io as tio

    script = tmp_path / "interrupt.py"
    script.write_text(textwrap.dedent(_SCRIPT))
    env = {**os.environ, "PYTHONPATH": str(Path(tio.__file__).parents[2])}
    env.pop("TOPICSLAB_DEBUG", None)
    res = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 130, res.stderr
    lines = res.stderr.strip().splitlines()
    assert lines[-1].startswith("interrupted: "), res.stderr
    assert "Traceback" not in res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["interrupt.py"]
