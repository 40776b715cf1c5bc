"""The `medasr` command: one Typer app; each wing's commands live in their own module.

Exit codes everywhere are the table in config/errors.py (EXIT_CODES): 0 all done, 1 some
items failed, 2 usage or configuration error, 3 credentials rejected, 130 interrupted.
"""

from __future__ import annotations

import os
import sys

import typer

from config.errors import EXIT_SOME_FAILED, EXIT_USAGE, ConfigError, MedasrError
from flows.cli.audio import split_command
from flows.cli.deliver import deliver_command
from flows.cli.demo import demo_command
from flows.cli.devserver import devserver_command
from flows.cli.review import review_command
from flows.cli.run import rerun_command, run_command
from flows.cli.store import db_app, export_command, status_command
from flows.deploy import serve_command

app = typer.Typer(
    name="medasr",
    help="Batch transcription of medical dictation archives.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("run")(run_command)
app.command("rerun-failures")(rerun_command)
app.command("status")(status_command)
app.command("export")(export_command)
app.command("review")(review_command)
app.command("deliver")(deliver_command)
app.command("split")(split_command)
app.command("devserver")(devserver_command)
app.command("serve")(serve_command)
app.command("demo")(demo_command)
app.add_typer(db_app, name="db")


def main() -> None:
    """Console entry point: run the app, turn known errors into one line and an exit code."""
    try:
        app(standalone_mode=True)
    except ConfigError as exc:
        typer.echo(f"medasr: configuration error: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    except MedasrError as exc:
        typer.echo(f"medasr: {exc}", err=True)
        sys.exit(EXIT_SOME_FAILED)
    except BrokenPipeError:  # `medasr ... | head`: the reader left; results are in the store
        # Point stdout at /dev/null so the interpreter's final flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(EXIT_SOME_FAILED)


if __name__ == "__main__":
    main()
