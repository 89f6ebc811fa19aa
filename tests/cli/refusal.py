"""What every bad-input test checks: one ``error:`` line and exit code 2, and an unchanged tree.

Shared by the rounds of bad inputs (tests/cli/test_bad_inputs*.py); imported as ``refusal``
(pytest puts this directory on the import path).
"""

from __future__ import annotations

from pathlib import Path


def check_refused(output: str, exit_code: int, named: str) -> str:
    """Exit code 2, exactly one line, ``error: `` naming ``named``, no traceback; the line."""
    assert exit_code == 2, output
    lines = [ln for ln in output.splitlines() if ln.strip()]
    assert len(lines) == 1, output
    assert lines[0].startswith("error: "), output
    assert named in lines[0], (named, output)
    assert "Traceback" not in output
    return lines[0]


def tree(root: Path) -> dict[str, tuple[bool, int, int]]:
    """Every path under ``root`` with its size and modification time (directories, pipes and
    links without: reading a pipe's or a dangling link's status would block or fail)."""
    return {str(p.relative_to(root)): (p.is_dir(), *(
        (0, 0) if p.is_dir() or p.is_fifo() or p.is_symlink()
        else (p.stat().st_size, p.stat().st_mtime_ns)))
            for p in root.rglob("*")}
