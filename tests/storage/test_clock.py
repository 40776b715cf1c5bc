"""storage.clock is the one place storage reads a clock, so one patch skews a host."""

from __future__ import annotations

import ast
from pathlib import Path

STORAGE = Path(__file__).resolve().parents[2] / "storage"


def _clock_reads_elsewhere(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module == "storage.clock":
            found.append(f"{path.name}:{node.lineno} imports names from storage.clock")
        if (
            isinstance(node, ast.Attribute)
            and node.attr in {"now", "utcnow", "today"}
            and isinstance(node.value, ast.Name)
            and node.value.id in {"datetime", "date"}
        ):
            found.append(f"{path.name}:{node.lineno} reads {node.value.id}.{node.attr}")
    return found


def test_storage_reads_the_clock_only_through_storage_clock() -> None:
    modules = [p for p in STORAGE.rglob("*.py") if p.name != "clock.py"]
    modules = [p for p in modules if "migrations" not in p.parts]
    assert [hit for path in modules for hit in _clock_reads_elsewhere(path)] == []
