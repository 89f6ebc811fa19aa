"""CRC32C (Castagnoli), as TFRecord framing needs it.

Public functions:
    crc32c(data) -> int            CRC32C of bytes-like data
    crc32c_table(data) -> int      the built-in table-driven implementation (numba)
    masked_crc32c(data) -> int     TFRecord's masked form
    BACKEND                        "google-crc32c" or "numba"

The maintained ``google-crc32c`` package (hardware instructions) is used when installed; it is
not a declared dependency, so a table-driven numba version stands in for it. Both are tested
against the standard check value CRC32C(b"123456789") = 0xE3069283.
"""

from __future__ import annotations

from collections.abc import Callable

import numba
import numpy as np
import numpy.typing as npt

__all__ = ["BACKEND", "crc32c", "crc32c_table", "masked_crc32c"]

_POLY = 0x82F63B78  # reflected Castagnoli polynomial


def _make_table() -> npt.NDArray[np.uint32]:
    table = np.zeros(256, dtype=np.uint32)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ _POLY if c & 1 else c >> 1
        table[i] = c
    return table


_TABLE = _make_table()


@numba.njit(cache=True, nogil=True)
def _crc_loop(data: npt.NDArray[np.uint8], table: npt.NDArray[np.uint32]) -> int:
    crc = np.uint32(0xFFFFFFFF)
    for b in data:
        crc = table[(crc ^ b) & np.uint32(0xFF)] ^ (crc >> np.uint32(8))
    return int(crc ^ np.uint32(0xFFFFFFFF))


def crc32c_table(data: bytes | bytearray | memoryview) -> int:
    """CRC32C computed with a 256-entry table (no third-party package)."""
    return int(_crc_loop(np.frombuffer(data, dtype=np.uint8), _TABLE))


def _pick() -> tuple[Callable[[bytes | bytearray | memoryview], int], str]:
    try:
        import google_crc32c
    except ImportError:
        return crc32c_table, "numba"
    fast = google_crc32c.value
    return (lambda data: int(fast(bytes(data) if isinstance(data, memoryview) else data)),
            "google-crc32c")


crc32c, BACKEND = _pick()


def masked_crc32c(data: bytes | bytearray | memoryview) -> int:
    """TFRecord's mask: rotate right by 15 bits and add a constant, so that CRCs of data
    that itself holds CRCs stay well distributed."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
