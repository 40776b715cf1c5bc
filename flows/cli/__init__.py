"""The `medasr` command line: the face of the flows in a terminal or a cron job.

commands.py holds the Typer app and the console script's `main` (both re-exported here).
One module per command family: run (run, rerun-failures), store (status, export, db;
fhir for `export --format fhir`), review, deliver, audio (split), devserver, demo;
`medasr serve` is flows/deploy.py's. Then the terminal's own concerns: console (progress,
summary table), log_level, quiet_errors, interrupts (Ctrl-C). The flows, deployments and
summaries they call live in `flows/`; nothing there imports this package
(tests/test_layout.py).
"""

from flows.cli.commands import app, main

__all__ = ["app", "main"]
