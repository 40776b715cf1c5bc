"""docs/configuration.md names every MEDASR_* variable medasr reads; no page names one that
does not exist; docs/commands.md lists every option of `medasr run`."""

from __future__ import annotations

import re
from pathlib import Path

import click
import typer.main

from flows.cli import app
from tests.flows.readme_tables import all_variables, devserver_rows, settings_rows

ROOT = Path(__file__).resolve().parents[2]
CONFIGURATION = ROOT / "docs" / "configuration.md"
COMMANDS = ROOT / "docs" / "commands.md"
# Every page a user reads: none may name a variable medasr does not read.
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
# A whole variable name: not the MEDASR_<SECTION>__<FIELD> pattern or a MEDASR_DEVSERVER_* glob.
_NAME = re.compile(r"\bMEDASR_[A-Z0-9_]*[A-Z0-9](?![A-Za-z0-9_<*])")


def names_in(page: Path) -> set[str]:
    return set(_NAME.findall(page.read_text(encoding="utf-8")))


def test_every_variable_is_on_the_configuration_page() -> None:
    missing = sorted(all_variables() - names_in(CONFIGURATION))
    assert not missing, (
        f"docs/configuration.md lacks {missing}; regenerate its tables with "
        "`.venv/bin/python -m tests.flows.readme_tables`"
    )


def test_no_page_names_an_unknown_variable() -> None:
    unknown = {
        page.relative_to(ROOT).as_posix(): sorted(names_in(page) - all_variables())
        for page in PAGES
    }
    unknown = {page: names for page, names in unknown.items() if names}
    assert not unknown, f"pages name variables medasr does not read: {unknown}"


def test_the_generated_list_covers_every_setting_and_option() -> None:
    # Guards the generator itself: one row per Settings field and per devserver option.
    nested = {row[1] for row in settings_rows()}
    assert {"MEDASR_PIPELINE__SETTLE_S", "MEDASR_STORAGE__LEASE_S"} <= nested
    assert all(name.count("__") == 1 for name in nested)
    flat = {row[0] for row in settings_rows() if row[0]}
    assert {"MEDASR_TOKEN", "MEDASR_CONCURRENCY", "MEDASR_REQUESTS_PER_S"} <= flat
    devserver = {row[0] for row in devserver_rows()}
    assert {"MEDASR_DEVSERVER_PORT", "MEDASR_DEVSERVER_TOKEN"} <= devserver
    assert all(name.startswith("MEDASR_DEVSERVER_") for name in devserver)


def _command_row(command: str) -> str:
    rows = COMMANDS.read_text(encoding="utf-8").splitlines()
    found = [line for line in rows if line.startswith(f"| `medasr {command} ")]
    assert len(found) == 1, f"docs/commands.md has {len(found)} rows for `medasr {command}`"
    return re.split(r"(?<!\\)\|", found[0])[1]  # cells split at unescaped pipes


def test_the_run_row_lists_every_option_of_medasr_run() -> None:
    group = typer.main.get_command(app)
    command = group.get_command(click.Context(group), "run")  # type: ignore[attr-defined]
    row = _command_row("run")
    options = [name for param in command.params for name in param.opts if name.startswith("--")]
    options += [n for param in command.params for n in param.secondary_opts if n.startswith("--")]
    missing = [name for name in options if name != "--help" and name not in row]
    assert not missing, f"the `medasr run` row of docs/commands.md lacks {missing}"
