"""Sizes that fit in a head (DESIGN.md, the house style), read from the source with `ast`.

    a module of the product under 400 lines
    a function under 40 lines (a Typer command's signature aside: its options are its
    manual, counted from the first line of its body)
    no storage class and no Protocol over 20 public methods

Migrations (storage/migrations/versions/) are history, never edited once shipped: left
out. What cannot be cut yet sits in ALLOWED with the reason; an entry that fits again
fails too, so the list only shrinks.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("audit", "config", "devserver", "flows", "service", "storage", "tasks", "web")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 40
MAX_PUBLIC_METHODS = 20

# "path" for a module, "path:Qualified.name" for a function or a class: why it may stay.
# Empty: everything fits. An entry needs a reason a reviewer accepts.
ALLOWED: dict[str, str] = {}


@dataclass(frozen=True)
class Size:
    """One measured thing over its limit."""

    key: str
    measure: int
    limit: int
    unit: str

    def __str__(self) -> str:
        return f"{self.key}: {self.measure} {self.unit} (limit {self.limit})"


def _sources() -> Iterator[tuple[str, str]]:
    for top in PACKAGES:
        for path in sorted((ROOT / top).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if not relative.startswith("storage/migrations/versions/"):
                yield relative, path.read_text(encoding="utf-8")


def _is_typer_command(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A parameter annotated or defaulted with typer.Option / typer.Argument."""
    arguments = node.args
    parts = [a.annotation for a in arguments.args + arguments.kwonlyargs]
    parts += list(arguments.defaults) + list(arguments.kw_defaults)
    return any(
        isinstance(sub, ast.Attribute)
        and isinstance(sub.value, ast.Name)
        and sub.value.id == "typer"
        and sub.attr in ("Option", "Argument")
        for part in parts
        if part is not None
        for sub in ast.walk(part)
    )


def _function_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    end = node.end_lineno or node.lineno
    start = node.body[0].lineno if _is_typer_command(node) else node.lineno
    return end - start + 1


def _is_protocol(node: ast.ClassDef) -> bool:
    return any(
        (isinstance(base, ast.Name) and base.id == "Protocol")
        or (isinstance(base, ast.Attribute) and base.attr == "Protocol")
        for base in node.bases
    )


def _walk(path: str, node: ast.AST, prefix: str) -> Iterator[Size]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            name = f"{path}:{prefix}{child.name}"
            yield Size(name, _function_lines(child), MAX_FUNCTION_LINES, "lines")
            yield from _walk(path, child, f"{prefix}{child.name}.")
        elif isinstance(child, ast.ClassDef):
            if path.startswith("storage/") or _is_protocol(child):
                public = [
                    member
                    for member in child.body
                    if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef)
                    and not member.name.startswith("_")
                ]
                key = f"{path}:{prefix}{child.name}"
                yield Size(key, len(public), MAX_PUBLIC_METHODS, "public methods")
            yield from _walk(path, child, f"{prefix}{child.name}.")
        else:
            yield from _walk(path, child, prefix)


def measured() -> list[Size]:
    """Every module, function and storage class or Protocol of the product, measured."""
    sizes: list[Size] = []
    for path, text in _sources():
        sizes.append(Size(path, len(text.splitlines()), MAX_MODULE_LINES, "lines"))
        sizes += _walk(path, ast.parse(text, filename=path), "")
    return sizes


def test_modules_functions_and_classes_fit_in_a_head() -> None:
    over = [str(s) for s in measured() if s.measure > s.limit and s.key not in ALLOWED]
    assert over == [], "over the house's sizes:\n" + "\n".join(over)


def test_every_allowed_entry_is_still_over_its_limit() -> None:
    over = {s.key for s in measured() if s.measure > s.limit}
    fits = sorted(key for key in ALLOWED if key not in over)
    assert fits == [], f"these fit now (or are gone): take them out of ALLOWED: {fits}"


def test_the_measure_sees_a_long_function_and_spares_a_typer_signature() -> None:
    long_body = "\n".join(f"    x{n} = {n}" for n in range(MAX_FUNCTION_LINES))
    options = "\n".join(f"    o{n}: int = typer.Option(0)," for n in range(30))
    source = f"def plain():\n{long_body}\n\ndef command(\n{options}\n) -> None:\n    pass\n"
    sizes = {s.key: s.measure for s in _walk("m.py", ast.parse(source), "")}
    assert sizes == {"m.py:plain": MAX_FUNCTION_LINES + 1, "m.py:command": 1}
