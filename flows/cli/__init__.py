"""The `medasr` command line: the face of the flows in a terminal or a cron job.

The Typer app is `flows.cli.commands.app`; one module per command family: run (run,
rerun-failures), store (status, export, db; fhir for `export --format fhir`), review,
deliver, audio (split), devserver, demo; `medasr serve` is flows/deploy.py's. Then the
terminal's own concerns: console (progress, summary table), log_level, quiet_errors,
interrupts (Ctrl-C). The flows, deployments and summaries they call live in `flows/`;
nothing there imports this package (tests/test_layout.py).
"""

from __future__ import annotations


def main() -> None:
    """The `medasr` console script (pyproject [project.scripts]); see commands.main."""
    # Imported here so that `import flows.cli.console` does not load every command.
    from flows.cli.commands import main as run_command_line

    run_command_line()
