"""Resource checks made before a command starts: refuse what cannot fit instead of swapping.

A request that needs more memory than the machine has available fails after minutes, or takes
the machine down; ``require_memory`` refuses it up front with the estimate in the message.
A streamed output that cannot fit on its disk fails only when the disk is full, hours later;
``require_disk`` refuses it up front the same way.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from topicslab.errors import InputError

__all__ = ["address_space_room", "available_disk", "available_memory", "heap_kept",
           "release_free_memory", "require_disk", "require_memory", "size_text"]


def size_text(n: float) -> str:
    """Bytes for a message, in the unit that shows them: "0.0 GiB of disk, 0.0 GiB free" was
    the whole refusal of a 20,000-user population on a nearly full small disk."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n:,.0f} bytes"


def usable_cpus() -> int | None:
    """The CPUs this process may run on (its affinity mask; the machine's count where the
    platform has none), ``None`` when unknown."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count()


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation (``MemAvailable``), if known; no more
    than the address-space limit leaves this process (``ulimit -v``)."""
    room = address_space_room()
    free = _machine_memory()
    if free is None or room is None:
        return room if free is None else free
    return min(free, room)


def _machine_memory() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:  # other POSIX systems: free pages only (a lower bound)
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, OSError, ValueError):
        return None


def address_space_room() -> int | None:
    """Bytes the memory limits (``ulimit -v``, RLIMIT_AS: the address space; ``ulimit -d``,
    RLIMIT_DATA: the data segment and private mappings) let this process map beyond what it
    maps now; ``None`` without a limit (or where none can be read). The machine's free
    memory was all the checks asked: under such a limit a request they let through failed
    half-way, as "out of memory" (exit code 1), after the work had begun."""
    try:
        import resource

        limits = [(resource.getrlimit(which)[0], field)
                  for which, field in ((resource.RLIMIT_AS, "VmSize:"),
                                       (resource.RLIMIT_DATA, "VmData:"))]
        limits = [(limit, field) for limit, field in limits
                  if limit != resource.RLIM_INFINITY]
        if not limits:
            return None
        with open("/proc/self/status", encoding="ascii") as fh:
            used = {line.split()[0]: int(line.split()[1]) * 1024 for line in fh
                    if line.startswith(("VmSize:", "VmData:"))}
        return min(max(0, limit - used[field]) for limit, field in limits)
    except (ImportError, OSError, ValueError, IndexError, KeyError):
        return None


def require_memory(estimate: float, what: str, *, field: str | None = None,
                   hint: str = "") -> None:
    """Refuse ``what`` when its ``estimate`` (bytes) exceeds the available memory."""
    available = available_memory()
    if available is None or estimate <= available:
        return
    advice = f"; {hint}" if hint else ""
    room = address_space_room()
    limited = (" under this process's memory limits (ulimit -v, ulimit -d)"
               if room is not None and room <= available else "")
    raise InputError(f"{what} needs about {size_text(estimate)} of memory, "
                     f"{size_text(available)} available{limited}{advice}", field=field)


def available_disk(path: str | os.PathLike[str]) -> int | None:
    """Bytes free on the file system that would hold ``path`` (its nearest existing parent)."""
    p = Path(path).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return shutil.disk_usage(p).free
    except OSError:
        return None


def require_disk(estimate: float, what: str, path: str | os.PathLike[str], *,
                 field: str | None = None, hint: str = "") -> None:
    """Refuse writing ``what`` to ``path`` when its ``estimate`` (bytes; give a lower bound:
    compression varies) exceeds the free space there."""
    free = available_disk(path)
    if free is None or estimate <= free:
        return
    advice = f"; {hint}" if hint else ""
    raise InputError(f"{what} needs at least {size_text(estimate)} of disk, "
                     f"{size_text(free)} free there{advice}", field=field)


@functools.lru_cache(maxsize=1)
def _libc() -> Any:
    """glibc, or ``None`` elsewhere (musl and other platforms have no ``malloc_trim`` or
    ``mallopt``)."""
    import ctypes
    import ctypes.util
    import sys

    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
    except (OSError, AttributeError):
        return None
    if hasattr(libc, "mallopt"):
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return libc


#: glibc's ``mallopt`` parameters; the largest block its dynamic rule takes from the heap;
#: its starting thresholds (a block past 128 KiB mapped on its own, the heap's free top
#: trimmed past 128 KiB)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_DYNAMIC_MMAP_MAX = 32 * 2**20
_DEFAULT_THRESHOLD = 128 * 2**10


@contextlib.contextmanager
def heap_kept(trim_threshold: int = 2**30) -> Iterator[None]:
    """Keep the C heap's freed pages for reuse inside the block, then give them back.

    A loop that allocates and frees the same blocks of a few MB each pass (a fit step's
    tensors: torch's CPU allocator is glibc's malloc) has them trimmed from the heap at every
    free and faults their pages in again at every allocation: ~1.4M page faults in the
    default fit's 300 steps, 2.5–4 s of system time (measured, benchmarks/RESULTS.md). Here
    the heap keeps up to ``trim_threshold`` bytes of free pages; blocks past 32 MiB are still
    mapped and unmapped on their own, as glibc's dynamic rule has them once it has seen one.
    On leaving, the free pages are given back (``release_free_memory``) and the thresholds
    are glibc's starting ones, 128 KiB: its dynamic rule stays off (``mallopt`` turns it off
    for good, and has no getter: a caller's own tuning is overwritten too), and leaving it
    at its largest thresholds (32 / 64 MiB) instead made the paper preset's validate stage
    peak 150 MB higher, past 3 GB, where the starting ones cost the later stages of a
    default run no measurable time (benchmarks/RESULTS.md). Nothing happens off glibc.
    """
    from topicslab._checks import integer

    # (mallopt takes a C int: 2**31 would wrap to a negative "never trim")
    integer(trim_threshold, "trim_threshold", at_least=0, at_most=2**31 - 1)
    libc = _libc()
    if libc is None or not hasattr(libc, "mallopt"):
        yield
        return
    libc.mallopt(_M_MMAP_THRESHOLD, _DYNAMIC_MMAP_MAX)
    libc.mallopt(_M_TRIM_THRESHOLD, int(trim_threshold))
    try:
        yield
    finally:
        libc.mallopt(_M_MMAP_THRESHOLD, _DEFAULT_THRESHOLD)
        libc.mallopt(_M_TRIM_THRESHOLD, _DEFAULT_THRESHOLD)
        libc.malloc_trim(0)


def release_free_memory() -> None:
    """Give the C heap's free pages back to the system (glibc's ``malloc_trim``; nothing
    elsewhere).

    Arrays freed by a stage leave their pages in the heap, where only later C allocations can
    reuse them; Arrow's pool (mimalloc) cannot, so a Parquet read after the stage takes its
    memory anew on top of them: after the paper preset's fidelity stage 173 MB of the
    process's resident memory were such pages, and its validate stage (which reads the
    synthetic users' file) peaked 0.4 GB above the same work in a fresh process
    (benchmarks/RESULTS.md). Nothing allocated is touched.
    """
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
