"""Bad input, the forty-third independent round: a really full disk, permissions and the
umask, the same file under another spelling, non-UTF-8 names, numbers written another way in
text files, and the Python API over other libraries' objects.

- A full disk while ``fit`` wrote its model: the line said "so it was not written (nothing
  half-written is left)" beside the fit's checkpoint on that full disk (80 KB, kept for
  ``--resume``, which it did not mention); ``run`` the same beside its finished stages. In an
  existing ``--out``, a fit failing before its first checkpoint left an empty
  ``checkpoints`` directory behind.
- A umask that takes the owner's own permissions (``umask 0277``, ``umask 0777``): every
  writer failed at its temporary (mkstemp's 0600 went through the umask; pyarrow opens the
  temporary again by name: "PermissionError: Failed to open local file
  '.p.parquet.ra_h19am.tmp'", exit code 1; ``stats`` named its hidden temporary directory
  and asked whether it "changed during the work"); as root, the outputs came out mode 0000.
- An output written over an existing file lost the file's mode: a population or a release
  made private with ``chmod 600`` came out 0644, readable by all, once written again.
- An output in a directory this user may not search (``chmod 600 d``): "d/p.parquet:
  permission denied: this user may not read (or write) it" -- the output named, not the
  directory, and no option.
- An output that is another user's file in a sticky directory (``/tmp``): the command did
  its work, then the closing rename failed: "directory /tmp does not let this user create or
  replace files (did it change during the work?)".
- A profile table (``user_id, week, t1..tk``) whose week column holds 2147483648:
  "MemoryError: Unable to allocate 5.86 TiB" (a long table's week is refused).
- ``reid --attack hämming``: "'hämming' is not ASCII (numbers are read in the digits 0-9
  only)" -- an attack is a name, not a number.
- A name that is not UTF-8 given to ``reid --json`` or ``qif --plot``: the line gave "the
  Parquet and Arrow readers and writers" as the reason.
- The Python API given a PyTorch tensor that requires grad (``TopicSets``, ``profile_anonymity``,
  the QIF channel functions, statistics handed to ``model.fit``): torch's "RuntimeError: Can't
  call numpy() on Tensor that requires grad"; a tensor on the ``meta`` device: torch's
  TypeError; a float16 array (NumPy's or torch's) of whole numbers in ``profile_anonymity``:
  "NotImplementedError: float16" from the compiled kernel.
- ``model.fit`` given a path, a dict or ``None`` for its statistics: "field 'taxonomy':
  statistics carry no usable taxonomy ('str' object has no attribute 'taxonomy')", a field
  the caller did not give.

The same contract as ``test_bad_inputs.py``: exit code 2, one line ``error: ...`` naming the
offending file, row or field, no traceback, and nothing written; from Python, an
``InputError`` naming the field.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from refusal import (
    check_refused,
    fit_small_model,
    invoke,
    population_and_stats,
    random_profiles,
    unprivileged,
)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 users (v2, 4 weeks) as ``pop.parquet``, its DP statistics (``stats``)."""
    d = tmp_path_factory.mktemp("round43")
    population_and_stats(d)
    return d


@pytest.fixture
def umask() -> Iterator[Any]:
    """A function setting the process's umask; the old one is restored after the test."""
    old = os.umask(0o022)
    os.umask(old)
    yield os.umask
    os.umask(old)


def _no_space(*args: object, **kwargs: object) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


# ---- a full disk ---------------------------------------------------------------------------

def test_a_full_disk_names_the_checkpoints_a_fit_keeps(
        inputs: Path, work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The model's write fails for want of space after the fit wrote its checkpoint: the
    line says the checkpoint is kept and how to continue (it said nothing half-written was
    left, beside an 80 KB checkpoint on the full disk)."""
    from topicslab import model as tm

    monkeypatch.setattr(tm, "save_model", _no_space)
    res = invoke(["fit", "--stats", str(inputs / "stats"), "--out", "m", "--types", "2",
                  "--modes", "1", "--steps", "1", "--no-progress"])
    line = check_refused(res.output, res.exit_code, "no space left on the device")
    assert "checkpoints kept in m/checkpoints (add --resume to continue)" in line, line
    assert "nothing half-written" not in line, line
    assert (work / "m" / "checkpoints" / "checkpoint.pt").is_file()


def test_a_full_disk_with_nothing_kept_still_says_so(
        inputs: Path, work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard: a single output that did not fit leaves nothing, and the line says so."""
    monkeypatch.setattr(os, "replace", _no_space)
    res = invoke(["convert", str(inputs / "pop.parquet"), "o.csv"])
    line = check_refused(res.output, res.exit_code, "o.csv: no space left on the device")
    assert "nothing half-written is left" in line, line
    assert list(work.iterdir()) == []


def test_a_fit_failing_before_its_first_checkpoint_leaves_no_empty_directory(
        inputs: Path, work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An existing --out (another file in it): the checkpoint could not be written (a full
    disk), and the ``checkpoints`` directory made for it stayed, empty."""
    torch = pytest.importorskip("torch")

    (work / "m").mkdir()
    (work / "m" / "notes.txt").write_text("mine\n")
    monkeypatch.setattr(torch, "save", _no_space)
    res = invoke(["fit", "--stats", str(inputs / "stats"), "--out", "m", "--types", "2",
                  "--modes", "1", "--steps", "1", "--no-progress"])
    check_refused(res.output, res.exit_code, "checkpoint.pt: no space left on the device")
    assert sorted(p.name for p in (work / "m").iterdir()) == ["notes.txt"]


# ---- the umask and the mode of a replaced file ----------------------------------------------

@pytest.mark.parametrize("mask", [0o277, 0o777])
def test_a_temporary_is_writable_by_its_owner_whatever_the_umask(
        work: Path, umask: Any, mask: int) -> None:
    """mkstemp's 0600 went through the umask: 0400 or 0000, and the writers that open the
    temporary again by name (pyarrow) were refused (as any user but root)."""
    from topicslab._atomic import atomic_dir, atomic_path

    umask(mask)
    with atomic_path(work / "x.parquet") as tmp:
        assert stat.S_IMODE(tmp.stat().st_mode) == 0o600
    with atomic_dir(work / "d") as tmp_dir:
        assert stat.S_IMODE(tmp_dir.stat().st_mode) == 0o700


@pytest.mark.parametrize("mask", [0o277, 0o777])
def test_the_command_line_s_outputs_are_its_owner_s_whatever_the_umask(
        inputs: Path, work: Path, umask: Any, mask: int) -> None:
    """The owner's bits of the umask are not applied to the command line's outputs (its own
    later steps read them back); the group's and others' are."""
    umask(mask)
    res = invoke(["convert", str(inputs / "pop.parquet"), "o.csv"])
    assert res.exit_code == 0, res.output
    res = invoke(["stats", "--sets", str(inputs / "pop.parquet"), "--out", "st",
                  "--epsilon", "1000"])
    assert res.exit_code == 0, res.output
    umask(0o022)
    assert stat.S_IMODE((work / "o.csv").stat().st_mode) == 0o600
    assert stat.S_IMODE((work / "st").stat().st_mode) == 0o700
    assert stat.S_IMODE((work / "st" / "q_single.json").stat().st_mode) == 0o600


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o444])
def test_a_replaced_output_keeps_its_mode(inputs: Path, work: Path, mode: int) -> None:
    """A private population (chmod 600) written again came out 0644."""
    target = work / "o.parquet"
    target.write_text("an older file\n")
    target.chmod(mode)
    res = invoke(["convert", str(inputs / "pop.parquet"), str(target)])
    assert res.exit_code == 0, res.output
    assert stat.S_IMODE(target.stat().st_mode) == mode
    assert target.stat().st_size > 100  # (replaced)


def test_a_replaced_release_keeps_its_files_modes(inputs: Path, work: Path) -> None:
    """The files of a release merged into an existing directory keep their modes too."""
    args = ["stats", "--sets", str(inputs / "pop.parquet"), "--out", "st", "--epsilon", "1000"]
    assert invoke(args).exit_code == 0
    (work / "st" / "q_single.json").chmod(0o600)
    res = invoke([*args, "--seed", "1"])
    assert res.exit_code == 0, res.output
    assert stat.S_IMODE((work / "st" / "q_single.json").stat().st_mode) == 0o600


# ---- directories this user may not search, sticky directories --------------------------------

def _run_unprivileged(prefix: list[str], args: list[str], cwd: Path,
                      extra: dict[str, str] | None = None,
                      ) -> subprocess.CompletedProcess[str]:
    from topicslab import io as tio

    env = {**os.environ, "PYTHONPATH": str(Path(tio.__file__).parents[2]), **(extra or {})}
    env.pop("TOPICSLAB_DEBUG", None)
    return subprocess.run([*prefix, sys.executable, "-c",
                           "from topicslab._main import main; main()", *args],
                          capture_output=True, text=True, env=env, check=False, cwd=cwd)


def test_an_output_under_a_directory_this_user_may_not_search_names_the_directory(
        work: Path) -> None:
    prefix = unprivileged()
    if prefix is None:
        pytest.skip("root, and no setpriv to drop the privileges that bypass permissions")
    (work / "d").mkdir()
    (work / "d").chmod(0o600)  # read and write, no search
    try:
        proc = _run_unprivileged(prefix, ["population", "--users", "10", "--weeks", "2",
                                          "--out", "d/p.parquet"], work)
    finally:
        (work / "d").chmod(0o755)
    line = check_refused(proc.stderr, proc.returncode, "field '--out'")
    assert f"directory {work / 'd'} cannot be searched by this user" in line, line
    assert list((work / "d").iterdir()) == []


@pytest.mark.parametrize(("mode", "args", "named"), [
    (0o600, ["stats", "--sets", "d/pop.parquet", "--out", "st"], "d/pop.parquet, field '--sets'"),
    (0o400, ["sample", "--model", "d", "--users", "5", "--seed", "1", "--out", "s.parquet"],
     "d, field '--model'"),
], ids=["input-in-it", "model-directory"])
def test_an_input_in_a_directory_this_user_may_not_search_names_the_directory(
        inputs: Path, work: Path, mode: int, args: list[str], named: str) -> None:
    """An input there was "no such file" (it exists), a model directory readable but not
    searchable "d/stages.json: permission denied" (a file that is not there)."""
    prefix = unprivileged()
    if prefix is None:
        pytest.skip("root, and no setpriv to drop the privileges that bypass permissions")
    (work / "d").mkdir()
    shutil.copy(inputs / "pop.parquet", work / "d" / "pop.parquet")
    (work / "d").chmod(mode)
    try:
        proc = _run_unprivileged(prefix, args, work)
    finally:
        (work / "d").chmod(0o755)
    line = check_refused(proc.stderr, proc.returncode, named)
    assert "cannot be searched by this user" in line, line
    assert sorted(p.name for p in work.iterdir()) == ["d"]


def test_another_user_s_file_in_a_sticky_directory_is_refused_before_the_work(
        inputs: Path, work: Path) -> None:
    prefix = unprivileged()
    if os.geteuid() != 0 or prefix is None:
        pytest.skip("needs root (to make another user's file) and setpriv")
    sticky = work / "tmp"
    sticky.mkdir()
    old = sticky / "o.csv"
    old.write_text("a colleague's file\n")
    os.chown(old, 65534, 65534)
    os.chown(sticky, 65534, 65534)
    sticky.chmod(0o1777)
    proc = _run_unprivileged(prefix, ["convert", str(inputs / "pop.parquet"), "tmp/o.csv"],
                             work)
    line = check_refused(proc.stderr, proc.returncode, "field 'TARGET'")
    assert "is a file of another user" in line and "sticky" in line, line
    assert old.read_text() == "a colleague's file\n"
    assert [p.name for p in sticky.iterdir()] == ["o.csv"]


# ---- numbers and names -------------------------------------------------------------------------

@pytest.mark.parametrize("week", ["2147483648", "9223372036854775807"])
def test_a_profile_table_s_week_past_the_last_is_refused(work: Path, week: str) -> None:
    rows = "".join(f"{u},{w},1,2,3,4,5\n" for u in range(3) for w in range(2))
    (work / "p.csv").write_text("user_id,week,t1,t2,t3,t4,t5\n" + rows
                                + f"3,{week},1,2,3,4,5\n")
    res = invoke(["convert", "p.csv", "o.parquet"])
    line = check_refused(res.output, res.exit_code, "p.csv, row 7, field 'week'")
    assert "past the last week a file may hold" in line, line
    assert sorted(p.name for p in work.iterdir()) == ["p.csv"]


def test_a_profile_table_s_weeks_counted_from_a_negative_first_are_read() -> None:
    """The guard: weeks count from the smallest, so a negative first week is read."""
    import tempfile

    from topicslab import io as tio

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "p.csv"
        p.write_text("user_id,week,t1,t2\n0,-1,1,2\n0,0,3,4\n")
        sets = tio.read_sets(p)
    assert sets.sets.shape[:2] == (1, 2)


def test_an_attack_name_that_is_not_ascii_is_an_unknown_attack(inputs: Path,
                                                              work: Path) -> None:
    res = invoke(["reid", "--sets", str(inputs / "pop.parquet"), "--attack", "hämming"])
    line = check_refused(res.output, res.exit_code, "field '--attack'")
    assert "unknown attack 'hämming'" in line and "numbers" not in line, line


def test_a_name_that_is_not_utf8_gives_the_reason_for_any_output(work: Path) -> None:
    """The line gave "the Parquet and Arrow readers and writers" as the reason for a PNG."""
    proc = _run_unprivileged([], ["qif", "--plot", os.fsdecode(b"q\xff.png")], work)
    err = proc.stderr
    line = check_refused(err, proc.returncode, "q\\xff.png, field '--plot'")
    assert "topicslab takes UTF-8 names only" in line, line
    assert list(work.iterdir()) == []


def test_a_utf8_name_under_an_ascii_locale_is_not_called_invalid(work: Path) -> None:
    """The C locale with the coercion and UTF-8 mode off: Python reads names as ASCII, and
    the line said a valid UTF-8 name "is not valid UTF-8"."""
    proc = _run_unprivileged([], ["qif", "--plot", "é.png"], work,
                             {"LC_ALL": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0",
                              "PYTHONIOENCODING": "utf-8"})
    line = check_refused(proc.stderr, proc.returncode, "é.png, field '--plot'")
    assert "reads file names as ascii" in line and "not valid UTF-8" not in line, line
    assert list(work.iterdir()) == []


# ---- the Python API over other libraries' objects ---------------------------------------------

def _torch() -> Any:
    return pytest.importorskip("torch")


def test_topic_sets_take_a_tensor_that_requires_grad() -> None:
    torch = _torch()
    from topicslab.datamodel import TopicSets

    arr = random_profiles(20, 2) + 1
    tensor = torch.tensor(arr.astype(np.float32), requires_grad=True)
    ids = torch.arange(20, dtype=torch.float64, requires_grad=True)
    sets = TopicSets(tensor, "v2", ids)
    assert np.array_equal(sets.sets, TopicSets(arr, "v2").sets)
    assert np.array_equal(sets.user_ids, np.arange(20))


def test_a_tensor_on_the_meta_device_is_refused_naming_the_field() -> None:
    torch = _torch()
    from topicslab.datamodel import TopicSets
    from topicslab.errors import InputError

    with pytest.raises(InputError, match="field 'sets': sets is a tensor on the 'meta' device"):
        TopicSets(torch.empty((5, 2, 5), dtype=torch.int16, device="meta"), "v2")


@pytest.mark.parametrize("kind", ["numpy-float16", "torch-float16", "torch-grad"])
def test_profile_anonymity_takes_whole_floats_and_tensors(kind: str) -> None:
    from topicslab import attacks

    arr = random_profiles(30, 2) + 1
    if kind == "numpy-float16":
        given: Any = arr.astype(np.float16)
    else:
        torch = _torch()
        given = (torch.tensor(arr.astype(np.float16)) if kind == "torch-float16"
                 else torch.tensor(arr.astype(np.float32), requires_grad=True))
    assert attacks.profile_anonymity(given) == attacks.profile_anonymity(arr)


def test_the_channel_functions_take_a_tensor_that_requires_grad() -> None:
    torch = _torch()
    from topicslab import qif

    c = np.array([[0.5, 0.5, 0.0], [0.25, 0.25, 0.5], [0.0, 0.0, 1.0]])
    given = torch.tensor(c, requires_grad=True)
    assert qif.bayes_capacity(given) == qif.bayes_capacity(c)
    assert qif.posterior_vulnerability(torch.tensor([0.2, 0.3, 0.5], dtype=torch.float64,
                                                    requires_grad=True),
                                       given) == qif.posterior_vulnerability(
        np.array([0.2, 0.3, 0.5]), c)


def test_fit_takes_statistics_held_in_tensors_that_require_grad(inputs: Path) -> None:
    torch = _torch()
    import dataclasses

    from topicslab import dp
    from topicslab import model as tm

    stats = dp.load_statistics(inputs / "stats")
    variant = tm.make_variant("paper", 2, 2)
    held = dataclasses.replace(stats, q_single=torch.tensor(stats.q_single,
                                                            requires_grad=True))
    res = tm.fit(held, variant, tm.FullObjective(steps=1), progress=False, seed=0)
    ref = tm.fit(stats, variant, tm.FullObjective(steps=1), progress=False, seed=0)
    assert res.loss == ref.loss


@pytest.mark.parametrize("given", ["path", {}, None], ids=["path", "dict", "none"])
def test_fit_of_no_statistics_names_the_statistics(inputs: Path, given: Any) -> None:
    from topicslab import model as tm
    from topicslab.errors import InputError

    stats = str(inputs / "stats") if given == "path" else given
    with pytest.raises(InputError, match="field 'stats': expected DP statistics") as exc:
        tm.fit(stats, tm.make_variant("paper", 2, 2), tm.FullObjective(steps=1),
               progress=False)
    if given == "path":
        assert "dp.load_statistics(" in str(exc.value)


def test_a_fitted_model_still_loads_after_these_changes(inputs: Path, work: Path) -> None:
    """The guard: a fit under the default umask writes a model the sampler reads."""
    shutil.copytree(inputs / "stats", work / "stats")
    fit_small_model(invoke, work)
    res = invoke(["sample", "--model", "model", "--users", "10", "--seed", "1", "--out",
                  "s.parquet"])
    assert res.exit_code == 0, res.output


# ---- run's disk check counts the release (round 43's leftover) -------------------------------

def test_run_s_disk_check_counts_the_release(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check counted the two sets only (300 users: 10 KB), so a run on a disk that held
    them but not the DP release (72 MB for four weeks) failed at the release, after the
    population; and a refusal said "use fewer --users" where fewer users would not help."""
    from topicslab import _resources
    from topicslab.errors import InputError
    from topicslab.experiment import sizes

    monkeypatch.setattr(_resources, "available_disk", lambda _path: 40_000_000)
    res = invoke(["run", "--preset", "smoke", "--users", "300", "--fit-steps", "2", "--types",
                  "2", "--no-disclosure", "--out", "r"])
    line = check_refused(res.output, res.exit_code, "field '--out'")
    assert "DP release" in line and "free some space" in line and "--users" not in line, line
    assert not (work / "r").exists()
    # where the sets are most of it, fewer users is the advice
    monkeypatch.setattr(_resources, "available_disk", lambda _path: 100_000_000)
    with pytest.raises(InputError, match="use fewer --users") as info:
        sizes.check_population_size(20_000_000, 4, work, 4)
    assert info.value.field == "--users"
    sizes.check_population_size(300, 4, work, 4)  # fits: no error
