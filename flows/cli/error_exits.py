"""How a `medasr` command ends on an error: one line on stderr and its exit code.

What each error means is read in one place, config/errors.py (`exit_code_for`,
`error_line`: 2 a setting or a refused review decision, 1 any other medasr error);
this module says it from the command line. `command_errors` wraps a command's body (the
line escaped onto one line); `exit_on_error` ends `main` on what escaped a command;
`usage_error` and `credentials_rejected` end a command that found the problem itself
(2 and 3). Never a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

import typer

from config.errors import EXIT_CREDENTIALS, EXIT_USAGE, MedasrError, error_line, exit_code_for
from tasks.discovery.recording_names import one_line


@contextmanager
def command_errors() -> Iterator[None]:
    """A command's body: a medasr error becomes one escaped line and its exit code."""
    try:
        yield
    except MedasrError as exc:
        typer.echo(one_line(error_line(exc)), err=True)
        raise typer.Exit(exit_code_for(exc)) from None


def exit_on_error(exc: MedasrError) -> NoReturn:
    """End the process on what escaped the app (`main`): its line as it is, its code."""
    typer.echo(error_line(exc), err=True)
    sys.exit(exit_code_for(exc))


def usage_error(what: str, exc: Exception | str) -> NoReturn:
    """One line, exit 2."""
    typer.echo(f"medasr: {what}: {exc}", err=True)
    raise typer.Exit(EXIT_USAGE)


def credentials_rejected(message: str) -> NoReturn:
    """One line naming MEDASR_TOKEN, exit 3."""
    if "MEDASR_TOKEN" not in message:
        message += " (set a valid MEDASR_TOKEN)"
    typer.echo(f"medasr: stopped: credentials rejected: {message}", err=True)
    raise typer.Exit(EXIT_CREDENTIALS)
