"""Readable value names in `--help`: `INTEGER`, `GLOB`, nothing for a flag.

Typer prints an option's Python type (`<bool>`, `<list[str]>`, `<int range>`); a person
reading `medasr run --help` wants the kind of value to type. An option that names its own
metavar keeps it; every other one gets a word from its type, and a flag none.
"""

from __future__ import annotations

from typer.core import TyperArgument, TyperOption

from flows.cli.vendored_click import click

# Typer's label of a type (without the angle brackets) -> the word shown instead.
_WORDS = {
    "str": "TEXT",
    "int": "INTEGER",
    "int range": "INTEGER",
    "float": "NUMBER",
    "float range": "NUMBER",
    "path": "PATH",
    "file": "PATH",
    "directory": "PATH",
    "datetime": "DATETIME",
    "list[str]": "TEXT",
    "list[path]": "PATH",
}


def name_values(command: click.Command) -> None:
    """Give every option of COMMAND (and of its subcommands) a readable metavar."""
    context = click.Context(command)
    for param in command.params:
        if isinstance(param, TyperOption) and param.metavar is None:
            param.metavar = "" if param.is_flag else _word(param.display_type(context))
        elif isinstance(param, TyperArgument):
            if param.metavar is None and param.name:
                param.metavar = param.name.upper()
            param.__class__ = _NamedArgument
    help_option = command.get_help_option(context)
    if help_option is not None:
        help_option.metavar = ""
    for sub in getattr(command, "commands", {}).values():
        name_values(sub)


class _NamedArgument(TyperArgument):
    """An argument whose name (SOURCE, INPUT) says what to type: no type column beside it.

    Typer prints an argument's Python type whatever its metavar, and builds the
    argument itself; swapping the class of the built one is the hook it leaves."""

    def display_type_rich(self, ctx: click.Context) -> str | None:
        return None


def _word(label: str) -> str:
    """The word for Typer's `<label>`; a choice stays its alternatives, in brackets."""
    bare = label.strip("<>")
    if "|" in bare:
        return f"[{bare}]"
    return _WORDS.get(bare, bare.upper())
