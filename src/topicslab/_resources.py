"""Resource checks made before a command starts: refuse what cannot fit instead of swapping.

A request that needs more memory than the machine has available fails after minutes, or takes
the machine down; ``require_memory`` refuses it up front with the estimate in the message.
"""

from __future__ import annotations

import os

from topicslab.errors import InputError

__all__ = ["available_memory", "require_memory"]


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation (``MemAvailable``), if known."""
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


def require_memory(estimate: float, what: str, *, field: str | None = None,
                   hint: str = "") -> None:
    """Refuse ``what`` when its ``estimate`` (bytes) exceeds the available memory."""
    available = available_memory()
    if available is None or estimate <= available:
        return
    advice = f"; {hint}" if hint else ""
    raise InputError(f"{what} needs about {estimate / 2**30:.1f} GiB of memory, "
                     f"{available / 2**30:.1f} GiB available{advice}", field=field)
