"""`medasr status`, `medasr export`, `medasr db upgrade` (placeholders until storage lands)."""

from __future__ import annotations

import typer

db_app = typer.Typer(help="Database schema commands.", no_args_is_help=True)


def status_command() -> None:
    """Show counts by status and language."""
    raise SystemExit("medasr status: not built yet")


def export_command() -> None:
    """Export results."""
    raise SystemExit("medasr export: not built yet")


@db_app.command("upgrade")
def db_upgrade_command() -> None:
    """Upgrade the database schema to the newest revision."""
    raise SystemExit("medasr db upgrade: not built yet")
