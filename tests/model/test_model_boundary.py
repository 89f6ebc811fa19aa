"""The fitter sees only DP statistics: ``topicslab.model`` never imports the population."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import topicslab.model

PACKAGE = Path(topicslab.model.__file__).parent
FORBIDDEN = "topicslab.population"


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative imports stay inside the package
                continue
            base = node.module or ""
            names.append(base)
            names += [f"{base}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Attribute):  # topicslab.population.x used after import
            parts = []
            cur: ast.expr = node
            while isinstance(cur, ast.Attribute):
                parts.append(cur.attr)
                cur = cur.value
            if isinstance(cur, ast.Name):
                names.append(".".join([cur.id, *reversed(parts)]))
    return names


def test_no_module_of_the_model_package_imports_the_population():
    files = sorted(PACKAGE.glob("*.py"))
    assert len(files) >= 7
    for f in files:
        bad = [n for n in _imports(f) if n == FORBIDDEN or n.startswith(FORBIDDEN + ".")]
        assert not bad, f"{f.name} imports {bad}"
        assert "importlib" not in f.read_text(), f"{f.name}: no dynamic imports"


def test_importing_and_using_the_model_does_not_load_the_population():
    code = ("import sys, topicslab.model, topicslab.model.fit, topicslab.model.sample; "
            f"print(any(m == {FORBIDDEN!r} or m.startswith({FORBIDDEN!r} + '.') "
            "for m in sys.modules))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert res.stdout.strip() == "False"
