"""Running the `medasr` command in tests and reading what it prints."""

from __future__ import annotations

import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path

from tests.flows.prefect_server import MEDASR


def medasr(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the console script with no TTY (pipes), as cron or CI would."""
    return subprocess.run(
        [MEDASR, *args],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def table_rows(out: str) -> dict[str, str]:
    """Rows of the Rich summary table: label -> value."""
    rows = (line.split("\u2502") for line in out.splitlines())
    return {cells[1].strip(): cells[2].strip() for cells in rows if len(cells) == 4}


def failure_kinds(database: Path) -> list[str]:
    """The error kinds of the store's failed deliveries, sorted: what the run refused, read
    from the store (a log line's place depends on how earlier tests set up logging)."""
    with closing(sqlite3.connect(database)) as connection:
        rows = connection.execute(
            "SELECT error_kind FROM deliveries WHERE status = 'failed' ORDER BY error_kind"
        ).fetchall()
    return [kind for (kind,) in rows]
