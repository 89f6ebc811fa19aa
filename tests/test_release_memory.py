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

