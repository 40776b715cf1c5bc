"""`medasr reviewers add|list|disable|unlock`: accounts of the review workstation.

`add NAME [--role reviewer|admin] --password-stdin` reads the password from standard
input (never from an argument: arguments are visible to every user of the host, and
kept in shell histories). Each change is an event of the audit trail, written by
tasks/review/account_changes.py with the change.
Exit codes: 0 done, 2 usage (bad name, name taken, unknown name, no password), 1 store.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from audit import command_actor
from config.errors import ConfigError
from config.settings import load_settings
from flows.cli.error_exits import command_errors
from storage import open_review_store
from storage.review_interface import ReviewStore
from tasks.review.account_changes import add_account, disable_account, unlock_account
from tasks.review.accounts import ROLES, check_name

reviewers_app = typer.Typer(
    help="Accounts of the review workstation (`medasr web`).", no_args_is_help=True
)


_ARGUMENT_REFUSED = (
    "a password is never given as an argument (every user of the host sees arguments, "
    "and shells keep them): give it on standard input with --password-stdin"
)


# Extra arguments are taken in rather than refused by the parser, whose message would
# print them back: one of them may be a password.
@reviewers_app.command(
    "add", context_settings={"allow_extra_args": True, "ignore_unknown_options": True}
)
def add_command(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The account's name.")],
    role: Annotated[str, typer.Option("--role", help=f"One of {', '.join(ROLES)}.")] = "reviewer",
    password_stdin: Annotated[
        bool, typer.Option("--password-stdin", help="Read the password from standard input.")
    ] = False,
) -> None:
    """Create an account; the password is read from standard input."""
    with command_errors():
        if ctx.args:
            raise ConfigError(_ARGUMENT_REFUSED)
        if not password_stdin:
            raise ConfigError("give the password on standard input with --password-stdin")
        password = sys.stdin.readline().rstrip("\r\n")
        store = _open()
        try:
            with store.unit_of_work() as uow:
                reviewer = add_account(
                    uow, name=name, role=role, password=password, actor=command_actor()
                )
        finally:
            store.dispose()
        typer.echo(f"added {reviewer.role} {reviewer.name}")


@reviewers_app.command("list")
def list_command() -> None:
    """List accounts: name, role, state."""
    with command_errors():
        store = _open()
        try:
            with store.unit_of_work(read_only=True) as uow:
                reviewers = uow.reviewers.list_reviewers()
                now = uow.reviewers.now()
        finally:
            store.dispose()
        typer.echo("name\trole\tstate")
        for reviewer in reviewers:
            state = "active"
            if reviewer.disabled:
                state = "disabled"
            elif reviewer.locked_until is not None and reviewer.locked_until > now:
                state = f"locked until {reviewer.locked_until.isoformat(timespec='seconds')}"
            typer.echo(f"{reviewer.name}\t{reviewer.role}\t{state}")


@reviewers_app.command("disable")
def disable_command(name: Annotated[str, typer.Argument(help="The account's name.")]) -> None:
    """Disable an account and end its sessions."""
    with command_errors():
        _change(name, disable=True)
        typer.echo(f"disabled {name}")


@reviewers_app.command("unlock")
def unlock_command(name: Annotated[str, typer.Argument(help="The account's name.")]) -> None:
    """Unlock an account locked by wrong passwords."""
    with command_errors():
        _change(name, disable=False)
        typer.echo(f"unlocked {name}")


def _change(typed: str, *, disable: bool) -> None:
    check_name(typed)
    store = _open()
    try:
        with store.unit_of_work() as uow:
            change = disable_account if disable else unlock_account
            change(uow, name=typed, actor=command_actor())
    finally:
        store.dispose()


def _open() -> ReviewStore:
    return open_review_store(load_settings().storage)
