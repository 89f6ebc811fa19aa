"""What every bad-input test checks: one ``error:`` line and exit code 2, and an unchanged tree.

Shared by the rounds of bad inputs (tests/cli/test_bad_inputs*.py); imported as ``refusal``
(pytest puts this directory on the import path).
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from typer.testing import CliRunner

_runner = CliRunner()


def invoke(args: list[str]) -> Any:
    """The CLI in process (Typer's runner): ``result.exit_code``, ``result.output``."""
    from topicslab.cli import app

    return _runner.invoke(app, args)

def check_refused(output: str, exit_code: int, named: str) -> str:
    """Exit code 2, exactly one line, ``error: `` naming ``named``, no traceback; the line."""
    assert exit_code == 2, output
    lines = [ln for ln in output.splitlines() if ln.strip()]
    assert len(lines) == 1, output
    assert lines[0].startswith("error: "), output
    assert named in lines[0], (named, output)
    assert "Traceback" not in output
    return lines[0]


def refused_leaving(args: list[str], work: Path, named: str, *also: Path) -> str:
    """``invoke(args)`` refused (``check_refused``) naming ``named``, ``work`` and every one of
    ``also`` unchanged; the line."""
    dirs = (work, *also)
    before = [tree(p) for p in dirs]
    res = invoke(args)
    line = check_refused(res.output, res.exit_code, named)
    assert [tree(p) for p in dirs] == before, "a refused command wrote"
    return line


def tree(root: Path) -> dict[str, tuple[bool, int, int]]:
    """Every path under ``root`` with its size and modification time (directories, pipes and
    links without: reading a pipe's or a dangling link's status would block or fail)."""
    return {str(p.relative_to(root)): (p.is_dir(), *(
        (0, 0) if p.is_dir() or p.is_fifo() or p.is_symlink()
        else (p.stat().st_size, p.stat().st_mtime_ns)))
            for p in root.rglob("*")}


def random_profiles(users: int = 300, weeks: int = 4, seed: int = 0) -> npt.NDArray[np.int16]:
    """``int16[users, weeks, 5]``: sorted profiles of 5 of the first 40 topics, the small
    population every round of bad inputs builds its inputs from."""
    rng = np.random.default_rng(seed)
    return np.sort(np.stack([np.stack([rng.choice(40, 5, replace=False) for _ in range(weeks)])
                             for _ in range(users)]), axis=-1).astype(np.int16)


def invoke_refused(invoke: Callable[[list[str]], Any], args: list[str], inputs: Path,
                   work: Path, named: str) -> None:
    """Run ``args`` (``{in}``: the inputs directory, ``{out}``: ``work/out``) through
    ``invoke`` (a CliRunner's, returning its result) and check the refusal: one line naming
    ``named``, exit 2, nothing written into ``work`` and no input changed."""
    before, inputs_before = tree(work), tree(inputs)
    res = invoke([a.format(**{"in": inputs, "out": work / "out"}) for a in args])
    check_refused(res.output, res.exit_code, named)
    assert tree(work) == before, "a refused command wrote into its output location"
    assert tree(inputs) == inputs_before, "a refused command changed an input"


def population_and_stats(directory: Path) -> tuple[Any, Path]:
    """``random_profiles()`` as a v2 population (ids 0..299) written to
    ``directory/pop.parquet``, and its DP statistics (ε = 1000) to ``directory/stats``:
    (the sets, the Parquet path)."""
    from topicslab.datamodel import TopicSets

    data = TopicSets(random_profiles(300, 4, seed=0), "v2", np.arange(300, dtype=np.int64))
    # the same files every time (fixed seeds): made once per test process and copied (a
    # release of 469 x 469 pairs is 67 MB of JSON and 2-3 s to draw and write; two dozen
    # rounds' fixtures each made their own)
    made = _made_once(data, directory.parent)
    pop = directory / "pop.parquet"
    shutil.copy2(made / "pop.parquet", pop)
    shutil.copytree(made / "stats", directory / "stats")
    return data, pop


_MADE: list[Path] = []


def _made_once(data: Any, where: Path) -> Path:
    """The directory holding ``pop.parquet`` and ``stats`` of ``data``, made in ``where`` (a
    test's temporary directory: pytest removes old ones, should this process be killed) on
    the first call of this process, and removed when it exits. Its name starts with a dot:
    tests/conftest.py leaves such directories to the end of the session."""
    if not _MADE:
        from topicslab import dp
        from topicslab import io as tio

        made = Path(tempfile.mkdtemp(prefix=".refusal-made-", dir=where))
        atexit.register(shutil.rmtree, made, ignore_errors=True)
        tio.write_sets(made / "pop.parquet", data)
        dp.save_statistics(made / "stats", dp.compute_statistics(data, epsilon=1e3,
                                                                 delta=1e-6, seed=0))
        _MADE.append(made)
    return _MADE[0]


def fit_small_model(invoke: Callable[[list[str]], Any], directory: Path) -> None:
    """``topicslab fit`` of ``directory/stats`` into ``directory/model`` (2 types, 1 step)."""
    res = invoke(["fit", "--stats", str(directory / "stats"), "--out", str(directory / "model"),
                  "--types", "2", "--modes", "1", "--steps", "1", "--no-progress"])
    assert res.exit_code == 0, res.output


def made_with_model(directory: Path) -> Path:
    """``directory`` holding ``population_and_stats``' files and a model fitted to them
    (``fit_small_model``): the inputs most rounds start from."""
    population_and_stats(directory)
    fit_small_model(invoke, directory)
    return directory


def refusal_test(cases: list[tuple[str, list[str], str]]) -> Callable[..., None]:
    """``test_bad_input_is_refused`` over a round's table of (name, args, named) cases: each
    is refused with one line naming ``named`` and nothing written (``invoke_refused``); the
    round's module provides the ``inputs`` and ``work`` fixtures."""

    @pytest.mark.parametrize(("name", "args", "named"), cases, ids=[c[0] for c in cases])
    def test_bad_input_is_refused(inputs: Path, work: Path, name: str, args: list[str],
                                  named: str) -> None:
        invoke_refused(invoke, args, inputs, work, named)

    return test_bad_input_is_refused


def unprivileged() -> list[str] | None:
    """The command prefix that runs a process as this user without the privileges that
    bypass permission checks: nothing for a user that is not root; for root, ``setpriv``
    dropping every capability; ``None`` where that is not possible."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    probe = subprocess.run([setpriv, "--inh-caps=-all", "--bounding-set=-all", "true"],
                           capture_output=True, check=False)
    return ([setpriv, "--inh-caps=-all", "--bounding-set=-all"] if probe.returncode == 0
            else None)


def console_script(args: list[str], env: dict[str, str], cwd: Path,
                   ) -> subprocess.CompletedProcess[str]:
    """``topicslab ARGS`` through the real entry point (a subprocess: environment variables,
    encodings and signals matter), with ``env`` over this environment and this checkout's
    package first on the path."""
    from topicslab import io as tio

    full = {**os.environ, "PYTHONPATH": str(Path(tio.__file__).parents[2]), **env}
    full.pop("TOPICSLAB_DEBUG", None)
    return subprocess.run([sys.executable, "-c", "from topicslab._main import main; main()",
                           *args], capture_output=True, text=True, env=full, check=False,
                          cwd=cwd)


def small_population(directory: Path) -> Path:
    """``directory`` with ``pop.parquet``: the 300 random profiles as a v2 population."""
    from topicslab import io as tio
    from topicslab.datamodel import TopicSets

    tio.write_sets(directory / "pop.parquet",
                   TopicSets(random_profiles(), "v2", np.arange(300, dtype=np.int64)))
    return directory


def api_refused(call: Callable[[Path, Path], Any], inputs: Path, work: Path,
                named: str) -> None:
    """``call(inputs, work)`` raises an ``InputError`` naming ``named``, writes nothing into
    ``work`` and changes no input (the Python API's side of the contract)."""
    from topicslab.errors import InputError

    before = tree(inputs)
    with pytest.raises(InputError) as exc:
        call(inputs, work)
    assert named in str(exc.value), str(exc.value)
    assert not list(work.iterdir())
    assert tree(inputs) == before


def api_run_refused(work: Path, out: Path, match: str, **inputs: Any) -> None:
    """``experiment.run("smoke", out, **inputs)`` (a two-step fit of two types) raises an
    ``InputError`` matching ``match`` and leaves ``work`` as it was."""
    from topicslab import experiment
    from topicslab.errors import InputError

    before = tree(work)
    with pytest.raises(InputError, match=match):
        experiment.run("smoke", out, overrides={"fit_steps": 2, "types": 2}, **inputs)
    assert tree(work) == before
