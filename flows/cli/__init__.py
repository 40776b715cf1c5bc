"""The `medasr` command line: the face of the flows in a terminal or a cron job.

The Typer app is `flows.cli.commands.app`; one module per command family (run, store,
audio, devserver, deliver, review, demo), and the terminal's own concerns (console,
log_level, quiet_errors, interrupts). The flows, deployments and summaries they call
live in `flows/`; nothing there imports this package.
"""

from __future__ import annotations


def main() -> None:
    """The `medasr` console script (pyproject [project.scripts]); see commands.main."""
    # Imported here so that `import flows.cli.console` does not load every command.
    from flows.cli.commands import main as run_command_line

    run_command_line()
