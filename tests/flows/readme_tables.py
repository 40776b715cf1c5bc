"""The configuration tables of docs/configuration.md, generated from the Settings model
and the CLI.

    .venv/bin/python -m tests.flows.readme_tables   # prints both tables (markdown)

Paste the output between the page's "configuration tables" markers.
tests/flows/test_readme.py checks that docs/configuration.md names every variable
listed here, and that no page names a MEDASR_* variable that does not exist.
"""

from __future__ import annotations

from typing import Any

import click
import typer.main
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from config.settings import ENV_PREFIX, FLAT_VARIABLES, Settings
from flows.cli import app

# Defaults that depend on the machine are described, not printed.
_MACHINE_DEFAULTS = {("pipeline", "decode_workers"): "number of CPUs"}
# Variables read outside the Settings model, with their default and meaning.
OTHER_VARIABLES = {
    "MEDASR_CONFIG": ("—", "path of an optional TOML file (sections as below)"),
    "MEDASR_HOME": (
        "—",
        "on a Prefect worker host: the checkout flow runs start in (`prefect.yaml` pull step)",
    ),
}
# Read by the test suite only.
TEST_VARIABLES = ("MEDASR_TEST_POSTGRES_URL", "MEDASR_TEST_VECTORS_DIR")


def settings_rows() -> list[tuple[str, str, str, str]]:
    """(flat name or "", nested name, default, meaning) for every field of Settings."""
    flat_for = {target: name for name, target in FLAT_VARIABLES.items()}
    rows = []
    for section, section_field in Settings.model_fields.items():
        model = section_field.annotation
        assert isinstance(model, type)
        assert issubclass(model, BaseModel)
        for name, field in model.model_fields.items():
            nested = f"{ENV_PREFIX}{section.upper()}__{name.upper()}"
            default = _MACHINE_DEFAULTS.get((section, name)) or _shown(field.default)
            meaning = (field.description or "").rstrip(".")
            rows.append((flat_for.get((section, name), ""), nested, default, meaning))
    return rows


def devserver_rows() -> list[tuple[str, str, str]]:
    """(variable, default, meaning) for every `medasr devserver` option."""
    group = typer.main.get_command(app)
    # The group loads a command's module when asked for it (flows/cli/commands.py).
    devserver = group.get_command(click.Context(group), "devserver")  # type: ignore[attr-defined]
    return [
        (str(param.envvar), _shown(param.default), (getattr(param, "help", "") or "").rstrip("."))
        for param in devserver.params
        if param.envvar
    ]


def all_variables() -> set[str]:
    """Every MEDASR_* variable medasr or its tests read."""
    names = {nested for _, nested, _, _ in settings_rows()} | set(FLAT_VARIABLES)
    names |= {name for name, _, _ in devserver_rows()}
    return names | set(OTHER_VARIABLES) | set(TEST_VARIABLES)


def markdown() -> str:
    """Both tables as markdown, for docs/configuration.md."""
    lines = ["| variable | nested spelling | default | meaning |", "|---|---|---|---|"]
    for flat, nested, default, meaning in settings_rows():
        lines.append(f"| {_code(flat) if flat else ''} | {_code(nested)} | {default} | {meaning} |")
    for name, (default, meaning) in OTHER_VARIABLES.items():
        lines.append(f"| {_code(name)} | | {default} | {meaning} |")
    lines += ["", "| variable | default | meaning |", "|---|---|---|"]
    for name, default, meaning in devserver_rows():
        lines.append(f"| {_code(name)} | {default} | {meaning} |")
    return "\n".join(lines)


def _shown(value: Any) -> str:
    if value is None or value is PydanticUndefined or value == "":
        return "—"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    return _code(str(value))


def _code(text: str) -> str:
    escaped = text.replace("|", "\\|")
    return f"`{escaped}`"


if __name__ == "__main__":
    print(markdown())
