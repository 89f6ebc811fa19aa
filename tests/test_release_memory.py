"""The pipeline gives the C heap's free pages back between stages (``release_free_memory``)."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

_SNIPPET = """
import os
import numpy as np
from topicslab._resources import release_free_memory

def rss():
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

arrays = [np.ones(12_000) for _ in range(3000)]  # 96 KB each: the heap, not mmap
kept = arrays[::10]  # (holes between them: the heap cannot shrink from its top)
del arrays
before = rss()
release_free_memory()
print((before - rss()) / 2**20)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
                    reason="malloc_trim is glibc's")
def test_freed_heap_pages_go_back_to_the_system() -> None:
    out = subprocess.run([sys.executable, "-c", _SNIPPET], capture_output=True, text=True,
                         check=True, timeout=120)
    released_mb = float(out.stdout.strip().splitlines()[-1])
    assert released_mb >= 150  # of the 247 MB freed in holes



_CHURN = """
import resource, sys
import numpy as np
from topicslab._resources import heap_kept

def churn():
    # a fit step's pattern: blocks of a few MB, 80 MB in all, allocated, touched and freed
    blocks = [np.ones(1_000_000) for _ in range(10)]
    del blocks

def faults(rounds=5):
    churn()  # (the first round faults its pages in either way)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(rounds):
        churn()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

if sys.argv[1] == "kept":
    with heap_kept():
        print(faults())
else:
    print(faults())
"""


def _faults(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", _CHURN, mode], capture_output=True, text=True,
                         check=True, timeout=120)
    return int(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
                    reason="mallopt is glibc's")
def test_the_kept_heap_reuses_freed_blocks_without_faulting_them_in_again() -> None:
    plain, kept = _faults("plain"), _faults("kept")
    # 5 rounds of 80 MB: measured 26K page faults as glibc trims the heap's top, none kept
    assert plain > 10_000
    assert kept < plain / 10


class _FakeLibc:
    def __init__(self) -> None:
        self.calls: list[tuple[str, int, ...]] = []

    def mallopt(self, param: int, value: int) -> int:
        self.calls.append(("mallopt", param, value))
        return 1

    def malloc_trim(self, pad: int) -> int:
        self.calls.append(("malloc_trim", pad))
        return 1


def test_the_kept_heap_restores_the_thresholds_and_gives_pages_back_on_an_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from topicslab import _resources

    fake = _FakeLibc()
    monkeypatch.setattr(_resources, "_libc", lambda: fake)
    with pytest.raises(KeyError), _resources.heap_kept(2**20):
        assert fake.calls == [("mallopt", -3, 32 * 2**20), ("mallopt", -1, 2**20)]
        raise KeyError("inside")
    # glibc's starting thresholds, and the free pages given back
    assert fake.calls[2:] == [("mallopt", -3, 128 * 2**10), ("mallopt", -1, 128 * 2**10),
                              ("malloc_trim", 0)]


def test_the_kept_heap_does_nothing_off_glibc_and_refuses_a_threshold_past_a_c_int(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from topicslab import _resources
    from topicslab.errors import InputError

    monkeypatch.setattr(_resources, "_libc", lambda: None)
    with _resources.heap_kept():
        ran = True
    assert ran
    for bad in (2**31, -1, 1.5, True):
        with pytest.raises(InputError, match="trim_threshold"), _resources.heap_kept(bad):
            pass
