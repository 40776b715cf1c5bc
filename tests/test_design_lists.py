"""docs/DESIGN.md's lists stay true: §7 names every command of `medasr` (and of its groups)
as the command line has them, §2 every runtime dependency pyproject.toml pins.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import typer.main

from flows.cli import app
from flows.cli.commands import COMMANDS, load_command

ROOT = Path(__file__).resolve().parents[1]
DESIGN = ROOT / "docs" / "DESIGN.md"
PYPROJECT = ROOT / "pyproject.toml"

# One entry of §7's line: a command, then its group's subcommands ("a/b"), in brackets
# when the group also runs alone (`medasr audit` reports, `medasr audit verify` checks).
_ENTRY = re.compile(r"(?P<name>[a-z-]+)(?: (?P<open>\[)?(?P<subs>[a-z/-]+)\]?)?")
# A dependency's name in a pin: "psycopg[binary]==3.3.9" -> "psycopg".
_PIN_NAME = re.compile(r"^[A-Za-z0-9._-]+")
# §2's list: "- `name` ..., `other` ...": every backticked name in a bullet.
_BULLET_NAME = re.compile(r"`([A-Za-z0-9._-]+)`")


def _section(number: int) -> str:
    text = DESIGN.read_text(encoding="utf-8")
    start = text.index(f"\n## {number}. ")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def _design_commands() -> dict[str, tuple[frozenset[str], bool]]:
    """§7's command line: each command -> (its subcommands, whether it runs alone too)."""
    line = next(line for line in _section(7).splitlines() if line.startswith("`medasr "))
    entries = line.strip("`").removeprefix("medasr ").split(" | ")
    listed: dict[str, tuple[frozenset[str], bool]] = {}
    for entry in entries:
        match = _ENTRY.fullmatch(entry)
        assert match is not None, f"§7 entry {entry!r} is not `name`, `name a/b` or `name [a/b]`"
        subs = frozenset(match["subs"].split("/")) if match["subs"] else frozenset()
        listed[match["name"]] = (subs, not subs or match["open"] is not None)
    assert len(listed) == len(entries), "§7 names a command twice"
    return listed


def _cli_commands() -> dict[str, tuple[frozenset[str], bool]]:
    """The same, read from the Typer app and each command as `medasr NAME` loads it."""
    group = typer.main.get_command(app)
    names = group.list_commands(typer.Context(group))  # type: ignore[arg-type]
    assert names == [entry.name for entry in COMMANDS]
    found: dict[str, tuple[frozenset[str], bool]] = {}
    for entry in COMMANDS:
        command = load_command(entry)
        subs: dict[str, object] = getattr(command, "commands", {})
        alone = not subs or bool(getattr(command, "invoke_without_command", False))
        found[entry.name] = (frozenset(subs), alone)
    return found


def test_section_7_lists_every_command_in_the_order_of_medasr_help() -> None:
    design, cli = _design_commands(), _cli_commands()
    assert list(design) == list(cli), "docs/DESIGN.md §7 and `medasr --help` differ"
    assert design == cli, "docs/DESIGN.md §7's subcommands differ from the command line's"


def _pinned() -> set[str]:
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    names = set()
    for pin in project["dependencies"]:
        match = _PIN_NAME.match(pin)
        assert match is not None, pin
        names.add(match.group(0).lower())
    return names


def _design_dependencies() -> set[str]:
    section = _section(2)
    start = section.index("Pinned in `pyproject.toml`")
    bullets = [line for line in section[start:].splitlines() if line.startswith("- ")]
    block = section[start:].split("\n\n")[1]  # the list: the paragraph after the heading line
    assert bullets, "§2 lists the pins as bullets: - `name`: why"
    assert all(line in block for line in bullets), "§2 keeps its bullets in one list"
    return {name.lower() for name in _BULLET_NAME.findall(block)}


def test_section_2_names_every_runtime_dependency_and_no_other() -> None:
    design, pinned = _design_dependencies(), _pinned()
    assert not pinned - design, f"docs/DESIGN.md §2 lacks {sorted(pinned - design)}"
    assert not design - pinned, f"docs/DESIGN.md §2 names unpinned {sorted(design - pinned)}"
