"""CRC32C (Castagnoli), as TFRecord framing needs it, from the maintained ``google-crc32c``
package (hardware CRC instructions where the CPU has them).

Public functions:
    crc32c(data) -> int            CRC32C of bytes-like data
    masked_crc32c(data) -> int     TFRecord's masked form

The numba kernels of ``_tfrecord_fast`` keep their own slicing-by-8 CRC inside the framing
loop: a call into the package per record costs ~860 ns for a 230-byte release record (the
Python call and the slice copy), the in-kernel loop ~260 ns, so at the release's 10M users
the package would add ~12 s to a read (measured on the development machine, 2 cores). The tests
check the kernel, this module and a table-driven oracle against one another.
"""

from __future__ import annotations

import google_crc32c

__all__ = ["crc32c", "masked_crc32c"]


def crc32c(data: bytes | bytearray | memoryview) -> int:
    """CRC32C of ``data``."""
    return int(google_crc32c.value(bytes(data) if isinstance(data, memoryview) else data))


def masked_crc32c(data: bytes | bytearray | memoryview) -> int:
    """TFRecord's mask: rotate right by 15 bits and add a constant, so that CRCs of data
    that itself holds CRCs stay well distributed."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
