"""The `medasr` command: one Typer app; each wing's commands live in their own module.

Exit codes everywhere are the table in config/errors.py (EXIT_CODES): 0 all done, 1 some
items failed, 2 usage or configuration error, 3 credentials rejected, 130 interrupted.

Each command's module is imported only when that command runs or shows its own help:
`medasr status` never pays for Prefect, `medasr --help` for nothing but Typer. The list
of commands on `medasr --help` shows each one's SUMMARY below, the first paragraph of
its docstring (tests/flows/cli/test_quick_commands.py keeps the two equal).
"""

from __future__ import annotations

import importlib
import inspect
import signal
from dataclasses import dataclass
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

from config.errors import MedasrError
from config.runtime import prepare_numpy_environment, prepare_prefect_environment
from flows.cli.error_exits import exit_on_error
from flows.cli.int_bounds import bound_integers
from flows.cli.metavars import name_values
from flows.cli.reader_gone import outlive_readers
from flows.cli.vendored_click import click


@dataclass(frozen=True)
class LazyCommand:
    """A command of `medasr`, named by where it lives instead of imported."""

    name: str
    target: str  # "module:attribute": a command function or a Typer app (a group)
    summary: str  # what `medasr --help` lists for it: its help's first paragraph


COMMANDS = (
    LazyCommand(
        "run",
        "flows.cli.run:run_command",
        "Transcribe every new or changed recording under SOURCE.",
    ),
    LazyCommand(
        "rerun-failures",
        "flows.cli.run:rerun_command",
        "Re-queue failures that may succeed now and transcribe them.",
    ),
    LazyCommand(
        "status",
        "flows.cli.store:status_command",
        "Show items by status and language, audio hours done, the latest failed and skipped,\n"
        "deliveries by status, and the files each source's latest listing ignored as not audio.",
    ),
    LazyCommand(
        "export",
        "flows.cli.export:export_command",
        "Export items: jsonl or csv rows, one .txt transcript per source in a tree, or a FHIR\n"
        "R4 Bundle (fhir).",
    ),
    LazyCommand(
        "review",
        "flows.cli.review:review_command",
        "List transcripts flagged by the quality gate; accept or re-queue them by ID.",
    ),
    LazyCommand(
        "reviewers",
        "flows.cli.reviewers:reviewers_app",
        "Accounts of the review workstation (`medasr web`).",
    ),
    LazyCommand(
        "web",
        "web.command:web_command",
        "Serve the review workstation: read, hear and correct transcripts in a browser.",
    ),
    LazyCommand(
        "deliver",
        "flows.cli.deliver:deliver_command",
        "Send every done transcript not yet delivered in its current version.",
    ),
    LazyCommand(
        "split",
        "flows.cli.audio:split_command",
        "Split one recording into chunks; print one JSON line per chunk.",
    ),
    LazyCommand(
        "devserver",
        "flows.cli.devserver:devserver_command",
        "Run the local stand-in of the transcription service until interrupted.",
    ),
    LazyCommand(
        "serve",
        "flows.deploy:serve_command",
        "Register the nightly and rerun deployments with their schedules and serve them.",
    ),
    LazyCommand(
        "demo",
        "flows.cli.demo:demo_command",
        "Transcribe samples/ against a local devserver, then run again to show zero requests.",
    ),
    LazyCommand(
        "purge",
        "flows.cli.purge:purge_command",
        "Remove the transcripts and other patient data of recordings finished longer ago\n"
        "than a period; their rows stay (status purged), so nothing is bought or filed again.",
    ),
    LazyCommand(
        "audit",
        "flows.cli.audit:audit_app",
        "Read the audit trail (who saw, changed, sent or removed which recording);\n"
        "`medasr audit verify` checks its hash chain.",
    ),
    LazyCommand(
        "quality",
        "flows.cli.quality:quality_app",
        "Reviewed notes' word accuracy by group, with a 95 % interval and the change\n"
        "against the previous period; `medasr quality corrections` lists recurring fixes.",
    ),
    LazyCommand("db", "flows.cli.store:db_app", "Database schema commands."),
)
_BY_NAME = {command.name: command for command in COMMANDS}


def load_command(entry: LazyCommand) -> click.Command:
    """Import the command's module and build its click command as `app.command()` would."""
    module_name, _, attribute = entry.target.partition(":")
    target = getattr(importlib.import_module(module_name), attribute)
    holder = typer.Typer()
    if isinstance(target, typer.Typer):
        holder.add_typer(target, name=entry.name)
    else:
        holder.command(entry.name)(target)
    holder.callback()(_no_options)  # a group, whatever it holds: commands keep their names
    command = typer.main.get_group(holder).commands[entry.name]
    name_values(command)
    bound_integers(command)
    unwrap_help(command)
    return command


def unwrap_help(command: click.Command) -> None:
    """The command's help (and its subcommands') with each paragraph on one line.

    Typer's Rich help keeps a docstring's single line breaks after the first paragraph,
    so a sentence broke where the source was wrapped at 100 columns; one line a
    paragraph lets Rich wrap it to the terminal. A paragraph starting with \\b (kept
    as written, click's convention) is left as it is.
    """
    if command.help:
        command.help = "\n\n".join(
            part if part.lstrip().startswith("\b") else " ".join(part.split())
            for part in inspect.cleandoc(command.help).split("\n\n")
        )
    subcommands: dict[str, click.Command] = getattr(command, "commands", {})
    for sub in subcommands.values():
        unwrap_help(sub)


def _no_options() -> None:
    """The holder group's callback: no options of its own."""


class LazyGroup(TyperGroup):
    """`medasr`'s commands: a command's module is imported when the command is resolved;
    listing them (`medasr --help`, a typo's suggestion) imports none and shows each
    one's summary."""

    _listing = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # What Typer reads to list and to suggest ("Did you mean 'status'?"): summaries.
        self.commands.update(
            {entry.name: TyperCommand(entry.name, help=entry.summary) for entry in COMMANDS}
        )
        self._loaded: dict[str, click.Command] = {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [command.name for command in COMMANDS]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = _BY_NAME.get(cmd_name)
        if entry is None:
            return None
        if self._listing:
            return self.commands[cmd_name]
        if cmd_name not in self._loaded:
            self._loaded[cmd_name] = load_command(entry)
        return self._loaded[cmd_name]

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        self._listing = True
        name_values(self)
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


app = typer.Typer(
    name="medasr",
    cls=LazyGroup,
    help="Batch transcription of medical dictation archives.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _medasr() -> None:
    """No options of its own: the commands come from LazyGroup."""


def _sigterm_as_ctrl_c() -> None:
    """SIGTERM raises KeyboardInterrupt as SIGINT does, in every command: a command that
    writes a temporary file (an export's, a split's) removes it and exits 130 on either,
    where SIGTERM's default ended the process at once and left the file (transcripts in
    it) behind. Commands with handling of their own (flows/cli/interrupts.py) override it."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)


def main() -> None:
    """Console entry point: run the app, turn known errors into one line and an exit code."""
    # Before any command imports Prefect, which reads its settings on first use.
    prepare_prefect_environment()
    prepare_numpy_environment()  # before any command imports numpy
    outlive_readers()  # `medasr run ... | head -1`: the run goes on, its output is dropped
    _sigterm_as_ctrl_c()  # docs/troubleshooting.md, 130: "interrupted (Ctrl-C or SIGTERM)"
    try:
        app(standalone_mode=True)
    except MedasrError as exc:
        exit_on_error(exc)


if __name__ == "__main__":
    main()
