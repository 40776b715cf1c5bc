"""An integer option beyond what the store holds (a signed 64-bit integer) is a bad option:
exit 2 naming the option, never the store's OverflowError (flows/cli/int_bounds.py)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from config.errors import EXIT_USAGE
from flows.cli import app
from flows.cli.commands import COMMANDS, load_command
from flows.cli.int_bounds import BoundedIntOption
from flows.cli.vendored_click import click
from storage.interface import UnitOfWorkFactory

TOO_BIG = str(2**63)  # one past the largest id or count SQLite and PostgreSQL store


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["status", "--failures", "99999999999999999999"], "--failures"),
        (["status", "--failures", TOO_BIG], "--failures"),
        (["review", "--limit", TOO_BIG], "--limit"),
        (["review", "--accept", TOO_BIG], "--accept"),
        (["review", "--resend", TOO_BIG], "--resend"),
        (["audit", "--item", TOO_BIG], "--item"),
        (["audit", "--item", f"-{TOO_BIG}1"], "--item"),
    ],
)
def test_an_integer_the_store_cannot_hold_is_a_bad_option(
    runner: CliRunner, store: UnitOfWorkFactory, args: list[str], option: str
) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == EXIT_USAGE, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert f"Invalid value for '{option}'" in result.stderr, result.stderr
    assert "Traceback" not in result.output


def test_the_largest_integer_the_store_holds_is_taken(
    runner: CliRunner, store: UnitOfWorkFactory
) -> None:
    result = runner.invoke(app, ["status", "--failures", str(2**63 - 1)])
    assert result.exit_code == 0, result.output


def _integer_options(command: click.Command) -> list[click.Parameter]:
    found = [
        param
        for param in command.params
        if getattr(getattr(param, "type_descriptor", None), "annotation", None)
        in (int, int | None, list[int], list[int] | None)
    ]
    for sub in getattr(command, "commands", {}).values():
        found.extend(_integer_options(sub))
    return found


def test_every_integer_option_of_every_command_is_bounded() -> None:
    options = [param for entry in COMMANDS for param in _integer_options(load_command(entry))]
    assert {param.name for param in options} >= {"failures", "limit", "accept", "resend", "item"}
    assert all(isinstance(param, BoundedIntOption) for param in options), [
        param.name for param in options if not isinstance(param, BoundedIntOption)
    ]
