"""Bad input, the forty-first independent round: the process's resource limits and its
working directory.

- The file-size limit (``ulimit -f``; Python ignores its SIGXFSZ): a write past it was
  "OSError: [Errno 27] Error writing bytes to file", naming no file, exit code 1; the
  streamed Parquet writer (``SetsWriter``) gave ``atomic_path`` a stand-in error, so even the
  full-disk check could not name the output.
- The CPU time limit (``ulimit -t``): its SIGXCPU ended the process on the spot (a core
  dump), with no line and the output's hidden temporary left behind.
- The address-space limit (``ulimit -v``): the memory checks asked the machine's free memory
  only, so a request that could not fit under the limit began and failed half-way ("out of
  memory", exit code 1).
- The open-file limit (``ulimit -n``): a good input was "not a valid Parquet file ([Errno
  24] Too many open files: ...)" or "cannot read the file (...); is it complete?", and
  elsewhere "OSError: [Errno 24] Too many open files", exit code 1.
- A working directory removed after the shell went into it: a relative path's checks failed
  with "FileNotFoundError: [Errno 2] No such file or directory", exit code 1, naming nothing.
"""

from __future__ import annotations

import errno
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from refusal import (
    check_refused,
    invoke,
    random_profiles,
    small_population,
    tree,
)


def _limited(args: list[str], cwd: Path, limits: dict[int, tuple[int, int]],
             stdout: int | None = None) -> subprocess.CompletedProcess[str]:
    """``topicslab ARGS`` through the real entry point, under the resource ``limits``
    (``resource.RLIMIT_*``: (soft, hard)); standard output to the descriptor ``stdout`` or
    captured."""
    from topicslab import io as tio

    env = {**os.environ, "PYTHONPATH": str(Path(tio.__file__).parents[2]), "COLUMNS": "200"}
    env.pop("TOPICSLAB_DEBUG", None)

    def limit() -> None:
        for which, values in limits.items():
            resource.setrlimit(which, values)

    return subprocess.run([sys.executable, "-c", "from topicslab._main import main; main()",
                           *args], stdout=stdout if stdout is not None else subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=env, cwd=cwd, check=False,
                          preexec_fn=limit, timeout=300)


def _warm(args: list[str], tmp_path: Path) -> None:
    """Run ``args`` once without limits (in a directory of their own), so that numba has
    cached the kernels they compile: saving one to its cache under the file-size limit
    fails too, as a failure that is not the output's."""
    warm = tmp_path / "warm"
    warm.mkdir()
    if (tmp_path / "pop.parquet").exists():
        (warm / "pop.parquet").symlink_to(tmp_path / "pop.parquet")
    res = _limited(args, warm, {})
    assert res.returncode == 0, res.stderr
    shutil.rmtree(warm)


def _hard(which: int) -> int:
    return resource.getrlimit(which)[1]


# ---- the file-size limit (ulimit -f) -------------------------------------------------------


def test_a_population_past_the_file_size_limit_names_its_output(tmp_path: Path) -> None:
    """Was "OSError: [Errno 27] Error writing bytes to file ... File too large", exit code 1,
    naming no file."""
    fsize = resource.RLIMIT_FSIZE
    _warm(["population", "--users", "20000", "--out", "p.parquet"], tmp_path)
    res = _limited(["population", "--users", "20000", "--out", "p.parquet"], tmp_path,
                   {fsize: (100 * 1024, _hard(fsize))})
    line = check_refused(res.stderr, res.returncode, "p.parquet: larger than the largest file "
                                                      "allowed (the file-size limit, ulimit -f")
    assert "nothing half-written is left" in line
    assert list(tmp_path.iterdir()) == []


def test_the_standard_output_past_the_file_size_limit_is_one_line(tmp_path: Path) -> None:
    """``qif --json > FILE`` under a limit smaller than the JSON: exit code 1, naming no
    file."""
    fsize = resource.RLIMIT_FSIZE
    _warm(["qif", "--json"], tmp_path)
    with open(tmp_path / "q.json", "w", encoding="utf-8") as fh:
        res = _limited(["qif", "--json"], tmp_path, {fsize: (100, _hard(fsize))},
                       stdout=fh.fileno())
    check_refused(res.stderr, res.returncode, "grew larger than the largest file allowed")


def test_a_release_past_the_file_size_limit_names_its_file_not_the_temporary(
        tmp_path: Path) -> None:
    """Was "st/.stats.tmp-XXXXXXXX/q_single.json", a hidden name that is gone, exit code 1
    (under ``run``, "rr/.stats.tmp-XXXXXXXX/q_single.json")."""
    small_population(tmp_path)
    fsize = resource.RLIMIT_FSIZE
    _warm(["stats", "--sets", "pop.parquet", "--out", "st"], tmp_path)
    res = _limited(["stats", "--sets", "pop.parquet", "--out", "st"], tmp_path,
                   {fsize: (2048, _hard(fsize))})
    check_refused(res.stderr, res.returncode, "st/q_single.json: larger than the largest file")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pop.parquet"]


def test_a_writer_that_says_it_its_own_way_past_the_limit_is_named(tmp_path: Path) -> None:
    """torch, saving a model under ulimit -f, says "RuntimeError: [enforce fail at
    inline_container.cc:672] . unexpected pos 1984 vs 1878", exit code 1: a temporary that
    reached the limit names the output (the writer is played by a write up to the limit)."""
    from topicslab._atomic import atomic_path

    final = tmp_path / "checkpoint.pt"
    fsize = resource.RLIMIT_FSIZE
    before = resource.getrlimit(fsize)
    resource.setrlimit(fsize, (4096, before[1]))
    try:
        with pytest.raises(OSError) as exc, atomic_path(final) as tmp:
            tmp.write_bytes(b"x" * 4096)
            raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos")
    finally:
        resource.setrlimit(fsize, before)
    assert exc.value.errno == errno.EFBIG and exc.value.filename == str(final)
    assert list(tmp_path.iterdir()) == []


def test_a_writer_failing_below_the_limit_keeps_its_error(tmp_path: Path) -> None:
    from topicslab._atomic import atomic_path

    fsize = resource.RLIMIT_FSIZE
    before = resource.getrlimit(fsize)
    resource.setrlimit(fsize, (4096, before[1]))
    try:
        with pytest.raises(RuntimeError), atomic_path(tmp_path / "m.pt") as tmp:
            tmp.write_bytes(b"x" * 100)
            raise RuntimeError("another failure")
    finally:
        resource.setrlimit(fsize, before)


def test_sets_writer_past_the_file_size_limit_names_its_file(tmp_path: Path) -> None:
    """The Python API: the stand-in error of ``SetsWriter.abort`` hid the EFBIG, which came
    out as the writer's own, naming no file; nothing is left."""
    from topicslab import io as tio
    from topicslab.datamodel import TopicSets

    sets = TopicSets(random_profiles(20_000, 4, seed=0), "v2",
                     np.arange(20_000, dtype=np.int64))
    path = tmp_path / "p.parquet"
    fsize = resource.RLIMIT_FSIZE
    before = resource.getrlimit(fsize)
    resource.setrlimit(fsize, (20 * 1024, before[1]))
    try:
        with pytest.raises(OSError) as exc:
            tio.write_sets(path, sets)
    finally:
        resource.setrlimit(fsize, before)
    assert exc.value.errno == errno.EFBIG
    assert exc.value.filename == str(path)
    assert list(tmp_path.iterdir()) == []


# ---- the CPU time limit (ulimit -t) --------------------------------------------------------


def test_the_cpu_time_limit_stops_a_command_as_ctrl_c_does(tmp_path: Path) -> None:
    """SIGXCPU ended the process (exit status -24, a core dump) with no line, leaving the
    output's hidden temporary."""
    cpu = resource.RLIMIT_CPU
    res = _limited(["population", "--users", "3000000", "--chunk-users", "100000", "--out",
                    "p.parquet"], tmp_path, {cpu: (3, _hard(cpu)), resource.RLIMIT_CORE: (0, 0)})
    assert res.returncode == 130, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("interrupted:")]
    assert len(lines) == 1, res.stderr
    assert "CPU time limit, ulimit -t" in lines[0]
    assert "nothing written" in lines[0]
    assert "Traceback" not in res.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("signame", ["SIGUSR1", "SIGUSR2", "SIGALRM"])
def test_the_other_ending_signals_leave_no_temporary(work: Path, signame: str) -> None:
    """Their default ends the process: ``kill -USR1`` did so on the spot, exit status 138,
    no line and the output's hidden temporary left behind."""
    from topicslab import io as tio

    env = {**os.environ, "PYTHONPATH": str(Path(tio.__file__).parents[2])}
    env.pop("TOPICSLAB_DEBUG", None)
    number = getattr(signal, signame)
    proc = subprocess.Popen([sys.executable, "-m", "topicslab", "population", "--users",
                             "3000000", "--chunk-users", "100000", "--out", "big.parquet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                            text=True, cwd=work,
                            preexec_fn=lambda: signal.signal(number, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not any(work.iterdir()) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)  # until the write has begun
    proc.send_signal(number)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1].startswith("interrupted: population stopped"), err
    assert list(work.iterdir()) == []


# ---- the address-space limit (ulimit -v) ---------------------------------------------------


@pytest.mark.parametrize("which", ["RLIMIT_AS", "RLIMIT_DATA"])
def test_a_request_past_the_memory_limits_is_refused_up_front(tmp_path: Path,
                                                              which: str) -> None:
    """The check asked the machine's free memory only: the generation began and failed with
    "out of memory", exit code 1 (under ulimit -d, after the file was written)."""
    limit = getattr(resource, which)
    res = _limited(["population", "--users", "5000000", "--chunk-users", "5000000", "--out",
                    "p.parquet"], tmp_path, {limit: (2**30, _hard(limit))})
    line = check_refused(res.stderr, res.returncode, "--chunk-users")
    assert "memory limits (ulimit -v, ulimit -d)" in line
    assert list(tmp_path.iterdir()) == []


def test_libraries_that_cannot_be_loaded_under_a_memory_limit_are_one_line(
        tmp_path: Path) -> None:
    """numba's shared object could not be mapped: a traceback ending in "OSError: Could not
    find/load shared object file 'libllvmlite.so'" (or, for Arrow's, "ImportError:
    libarrow.so.2600: failed to map segment from shared object"), exit code 1."""
    address = resource.RLIMIT_AS
    res = _limited(["population", "--users", "2000", "--out", "p.parquet"], tmp_path,
                   {address: (250 * 2**20, _hard(address))})
    assert res.returncode == 1, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert lines[0].startswith("error: out of memory loading the libraries under this "
                               "process's memory limits (ulimit -v 256000)"), lines[0]
    assert list(tmp_path.iterdir()) == []


def test_an_error_line_rich_has_no_memory_to_print_is_still_printed(
        work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Out of memory, rich could not print the line (it imports its emoji table to): a
    MemoryError traceback was all that showed."""
    from topicslab.cli import _app

    def no_memory(*args: object, **kwargs: object) -> None:
        raise MemoryError

    monkeypatch.setattr(_app.err, "print", no_memory)
    res = invoke(["population", "--users", "0", "--out", "p.parquet"])
    check_refused(res.output, res.exit_code, "--users")


def test_available_memory_is_no_more_than_the_address_space_leaves() -> None:
    """(A limit of the address space's size now and 64 MiB more.)"""
    code = ("import resource; from topicslab._resources import available_memory as a; "
            "used = next(int(x.split()[1]) * 1024 for x in open('/proc/self/status') "
            "if x.startswith('VmSize:')); "
            "resource.setrlimit(resource.RLIMIT_AS, (used + (64 << 20), "
            "resource.getrlimit(resource.RLIMIT_AS)[1])); print(a())")
    from topicslab import io as tio

    env = {**os.environ, "PYTHONPATH": str(Path(tio.__file__).parents[2])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True).stdout
    assert int(out) <= 64 << 20


def test_the_population_summary_takes_little_memory_beside_its_chunk() -> None:
    """The top topics of the first chunk, printed once the file is written, took 11 bytes a
    topic slot (the mask, the selection, bincount's int64 copy): 763 MiB for a chunk of 5M
    users x 4 weeks, "out of memory" and exit code 1 beside a complete output."""
    import tracemalloc

    from topicslab.cli.population import _print_top_topics
    from topicslab.datamodel import TopicSets

    users = 1_000_000
    sets = TopicSets(np.tile(random_profiles(1000, 4), (users // 1000, 1, 1)), "v2",
                     np.arange(users, dtype=np.int64))
    tracemalloc.start()
    try:
        _print_top_topics(sets)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20, peak  # (was 224 MiB for these 20M slots)


# ---- the open-file limit (ulimit -n) -------------------------------------------------------


def _too_many_open_files(*args: object, **kwargs: object) -> None:
    raise OSError(errno.EMFILE, os.strerror(errno.EMFILE), "/usr/lib/some/module.py")


def test_too_many_open_files_is_not_a_bad_input_file(work: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Was "not a valid Parquet file ([Errno 24] Too many open files: ...)": the file blamed
    for the process's limit."""
    import pyarrow.parquet as pq

    from topicslab import io as tio

    small_population(work)
    monkeypatch.setattr(pq, "ParquetFile", _too_many_open_files)
    with pytest.raises(OSError) as exc:
        tio.read_sets(work / "pop.parquet")
    assert exc.value.errno == errno.EMFILE
    before = tree(work)
    res = invoke(["stats", "--sets", "pop.parquet", "--out", "st"])
    line = check_refused(res.output, res.exit_code, "too many open files")
    assert "(ulimit -n)" in line and "pop.parquet" not in line
    assert tree(work) == before


@pytest.mark.parametrize("code", [errno.EFBIG, errno.ENOSPC])
def test_a_write_failing_while_an_input_is_read_is_not_the_input_s(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int) -> None:
    """numba, compiling a kernel while the input is read, saves it to its cache: past the
    file-size limit (or on a full disk) the input was "not a valid Parquet file ([Errno 27]
    File too large)"."""
    import pyarrow.parquet as pq

    from topicslab import io as tio

    small_population(tmp_path)

    def failing(*args: object, **kwargs: object) -> None:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(pq, "ParquetFile", failing)
    with pytest.raises(OSError) as exc:
        tio.read_sets(tmp_path / "pop.parquet")
    assert exc.value.errno == code


def test_no_memory_to_read_an_input_is_out_of_memory_not_a_bad_file(
        work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An ENOMEM while the input was read: "not a valid Parquet file (Cannot allocate
    memory)", the file blamed."""
    import pyarrow.parquet as pq

    small_population(work)

    def no_memory(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOMEM, os.strerror(errno.ENOMEM))

    monkeypatch.setattr(pq, "ParquetFile", no_memory)
    before = tree(work)
    res = invoke(["stats", "--sets", "pop.parquet", "--out", "st"])
    assert res.exit_code == 1, res.output
    assert res.output.strip().splitlines() == [
        "error: out of memory: use fewer users, weeks or types"], res.output
    assert tree(work) == before


def test_too_many_open_files_elsewhere_is_one_line(work: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Was "OSError: [Errno 24] Too many open files: '.../encodings/cp437.py'", exit code 1."""
    from topicslab.cli import population

    monkeypatch.setattr(population, "check_generation_memory", _too_many_open_files)
    res = invoke(["population", "--users", "2000", "--out", "p.parquet"])
    check_refused(res.output, res.exit_code, "too many open files: this process may hold")
    assert list(work.iterdir()) == []


# ---- a working directory removed -----------------------------------------------------------


def _gone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    return tmp_path


@pytest.mark.parametrize(("args", "named"), [
    (["population", "--users", "2000", "--out", "p.parquet"], "p.parquet, field '--out'"),
    (["population", "--users", "2000"], "error: the working directory"),  # (the default)
    (["stats", "--sets", "pop.parquet", "--out", "{abs}/st"], "pop.parquet, field '--sets'"),
    (["convert", "{abs}/pop.parquet", "x.csv"], "x.csv, field 'TARGET'"),
])
def test_a_relative_path_in_a_removed_working_directory_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], named: str) -> None:
    """Was "FileNotFoundError: [Errno 2] No such file or directory", exit code 1."""
    small_population(tmp_path)
    _gone(tmp_path, monkeypatch)
    before = tree(tmp_path)
    res = invoke([a.format(abs=tmp_path) for a in args])
    line = check_refused(res.output, res.exit_code, named)
    assert "the working directory no longer exists" in line
    assert tree(tmp_path) == before


def test_absolute_paths_in_a_removed_working_directory_are_refused_up_front(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """numba, compiling a kernel (a fresh install), asks for the working directory: the
    absolute input was "not a valid Parquet file ([Errno 2] No such file or directory)"."""
    small_population(tmp_path)
    _gone(tmp_path, monkeypatch)
    before = tree(tmp_path)
    res = invoke(["stats", "--sets", str(tmp_path / "pop.parquet"), "--out",
                  str(tmp_path / "st")])
    check_refused(res.output, res.exit_code, "the working directory no longer exists")
    assert tree(tmp_path) == before
    res = invoke(["stats", "--help"])  # (help still works)
    assert res.exit_code == 0, res.output


# ---- a masked array ------------------------------------------------------------------------


@pytest.mark.parametrize("argument", ["sets", "user_ids"])
def test_a_masked_array_with_masked_entries_is_refused(argument: str) -> None:
    """``np.asarray`` dropped the mask: the hidden values were read as topics (or user
    ids), and the statistics came out as if nothing were masked."""
    from topicslab.datamodel import TopicSets
    from topicslab.errors import ParameterError

    given = {"sets": random_profiles(20, 4), "user_ids": np.arange(20, dtype=np.int64)}
    masked = np.ma.array(given[argument], mask=np.zeros(given[argument].shape, bool))
    masked.mask.flat[0] = True
    given[argument] = masked
    with pytest.raises(ParameterError) as exc:
        TopicSets(given["sets"], "v2", given["user_ids"])
    assert exc.value.field == argument
    assert "1 masked entries" in str(exc.value)


def test_a_masked_array_with_nothing_masked_is_read_as_before() -> None:
    from topicslab.datamodel import TopicSets

    sets = random_profiles(20, 4)
    read = TopicSets(np.ma.array(sets), "v2", np.ma.array(np.arange(20)))
    assert np.array_equal(read.sets, TopicSets(sets, "v2", np.arange(20)).sets)
