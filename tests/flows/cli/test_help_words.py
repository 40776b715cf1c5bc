"""Every option a person reads in `--help` says what it does; summaries name every format."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from flows.cli import app


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
