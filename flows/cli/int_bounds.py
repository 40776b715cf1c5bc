"""Integer options bounded by what the store holds: a signed 64-bit integer.

An id, a count or a limit is compared with an INTEGER column, and SQLite and PostgreSQL
hold no integer beyond 2**63 - 1: the driver's OverflowError was a traceback. Every
integer option of every command (`load_command`) is checked here, once, as the command
line reads it, so the value beyond is a bad option (exit 2, naming it) like any other.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import typer
from typer.core import TyperOption

from flows.cli.vendored_click import click

STORE_INT_MAX = 2**63 - 1
STORE_INT_MIN = -(2**63)


class BoundedIntOption(TyperOption):
    """An integer option (one, optional or repeated) refusing what the store cannot hold."""

    def process_value(self, ctx: click.Context, value: Any) -> Any:
        value = super().process_value(ctx, value)
        values = value if isinstance(value, Iterable) else (value,)
        for number in values:
            if isinstance(number, int) and not STORE_INT_MIN <= number <= STORE_INT_MAX:
                raise typer.BadParameter(
                    f"{number} is out of range (at most {STORE_INT_MAX}, at least {STORE_INT_MIN})",
                    ctx=ctx,
                    param=self,
                )
        return value


def bound_integers(command: click.Command) -> None:
    """Make every integer option of COMMAND (and of its subcommands) a BoundedIntOption."""
    for param in command.params:
        if isinstance(param, TyperOption) and _is_integer(param):
            param.__class__ = BoundedIntOption
    for sub in getattr(command, "commands", {}).values():
        bound_integers(sub)


def _is_integer(param: TyperOption) -> bool:
    annotation = param.type_descriptor.annotation
    return annotation in (int, int | None, list[int], list[int] | None)
