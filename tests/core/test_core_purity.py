"""The pure layers never import I/O, async or telemetry libraries (architecture.md C2)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import hpactl

FORBIDDEN = {"asyncio", "aiohttp", "kubernetes_asyncio", "structlog", "opentelemetry"}
ROOT = Path(hpactl.__file__).parent
MODULES = sorted(p for pkg in ("core", "model") for p in (ROOT / pkg).rglob("*.py"))


def imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "__import__"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            roots.add(node.args[0].value.split(".")[0])
    return roots


def test_there_are_modules_to_check() -> None:
    assert any(p.name == "decide.py" for p in MODULES)
    assert any(p.name == "hpa.py" for p in MODULES)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_forbidden_imports(path: Path) -> None:
    assert imported_roots(path) & FORBIDDEN == set()


def test_detector_catches_a_forbidden_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import asyncio.tasks\nfrom structlog import get_logger\n")
    assert imported_roots(bad) >= {"asyncio", "structlog"}
