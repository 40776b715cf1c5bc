"""Every option a person reads in `--help` says what it does; summaries name every format."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from flows.cli import app
from tests.flows.cli.help_pages import HELP_PAGES


def help_of(*command: str) -> str:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


@pytest.mark.parametrize(
    ("command", "words"),
    [
        (("rerun-failures",), ("Most requests in flight", "No progress output")),
        (("demo",), ("Language code of the recordings", "--fresh")),
        ((), ("or a FHIR",)),
    ],
    ids=["rerun-failures", "demo", "export-summary"],
)
def test_options_and_summaries_are_described(
    command: tuple[str, ...], words: tuple[str, ...]
) -> None:
    shown = help_of(*command)
    for word in words:
        assert word in shown


@pytest.mark.parametrize("page", HELP_PAGES, ids=lambda page: " ".join(page) or "medasr")
def test_help_names_values_in_words_and_cuts_nothing(page: list[str]) -> None:
    """No Python type (`<bool>`, `<list[str]>`, `<int range>`) and no name cut off at 100
    columns, the width of the kept help pages."""
    shown = CliRunner().invoke(app, [*page, "--help"], env={"COLUMNS": "100"}).output
    assert not re.search(r"<(bool|str|int|float|path|list\[\w+\])[^>]*>", shown), shown
    assert "…" not in shown, shown


def test_devserver_help_names_every_variable_whole() -> None:
    shown = CliRunner().invoke(app, ["devserver", "--help"], env={"COLUMNS": "100"}).output
    for name in ("RETRY_AFTER_HTTP_DATE", "LEGACY_RESPONSE_TAG", "P_WRONG_SCRIPT"):
        assert f"MEDASR_DEVSERVER_{name}" in shown.replace("│", "").replace(" ", "")


@pytest.mark.parametrize("command", ["status", "export", "purge", "audit", "web", "serve"])
def test_a_help_paragraph_is_never_cut_where_its_docstring_had_a_line_break(
    command: str,
) -> None:
    """Each paragraph of the command's docstring is one flowing paragraph: wide enough,
    it fills one line; the docstring's own line breaks never show."""
    from flows.cli.commands import LazyGroup

    loaded = LazyGroup(name="medasr").get_command(None, command)  # type: ignore[arg-type]
    assert loaded is not None
    assert loaded.help
    shown = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "1000"}).output
    lines = [line.strip(" │") for line in shown.splitlines()]
    for paragraph in loaded.help.split("\n\n"):
        words = " ".join(paragraph.split())
        assert any(line.strip() == words for line in lines), (words, shown)


@pytest.mark.parametrize("command", ["run", "rerun-failures", "deliver", "demo", "review", "purge"])
def test_every_language_option_has_its_short_flag(command: str) -> None:
    shown = help_of(command)
    assert "--language -l" in shown, shown
