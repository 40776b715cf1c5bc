"""The `--help` pages of every medasr command, as a person sees them 100 columns wide.

`python -m tests.flows.cli.help_pages` writes them to tests/flows/cli/help/ (after a
deliberate change of an option or a docstring); test_quick_commands.py compares.
"""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from flows.cli import app

HELP_DIR = Path(__file__).resolve().parent / "help"
HELP_PAGES: list[list[str]] = [
    [],
    ["run"],
    ["rerun-failures"],
    ["status"],
    ["export"],
    ["review"],
    ["reviewers"],
    ["reviewers", "add"],
    ["web"],
    ["deliver"],
    ["split"],
    ["devserver"],
    ["serve"],
    ["demo"],
    ["db"],
    ["db", "upgrade"],
    ["audit"],
    ["audit", "verify"],
    ["purge"],
    ["quality"],
    ["quality", "corrections"],
]


def page_file(args: list[str]) -> Path:
    """Where the help page of `medasr ARGS --help` is kept."""
    return HELP_DIR / ("medasr" + "".join(f"_{arg}" for arg in args) + ".txt")


def help_page(runner: CliRunner, args: list[str]) -> str:
    """`medasr ARGS --help` as printed 100 columns wide; raises AssertionError if it fails."""
    result = runner.invoke(app, [*args, "--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    return result.output


if __name__ == "__main__":
    runner = CliRunner()
    for page in HELP_PAGES:
        page_file(page).write_text(help_page(runner, page))
