"""Running the `medasr` command in tests and reading what it prints."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

from config.settings import StorageSettings
from storage import open_store
from tests.flows.prefect_server import MEDASR
from tests.tasks.delivery.delivery_helpers import make_done


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


# Runs `medasr ARGS` in this interpreter, then prints its exit code and every module.
MODULES_LAUNCHER = """
import json, sys
sys.argv = ["medasr", *json.loads(sys.argv[1])]
try:
    from flows.cli import main
    main()
except SystemExit as exc:
    code = exc.code
else:
    code = 0
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def modules_imported_by(
    args: list[str], *, env: dict[str, str], cwd: Path, timeout_s: float = 120
) -> set[str]:
    """Every module `medasr ARGS` imported in a fresh interpreter (as a cron job or a
    person runs it); the command must exit 0."""
    done = subprocess.run(
        [sys.executable, "-c", MODULES_LAUNCHER, json.dumps(args)],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["code"] == 0, f"medasr {' '.join(args)} failed:\n{done.stderr[-2000:]}"
    return set(report["modules"])


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


def deliverable_store(
    server: Any, *, tmp_path: Path, monkeypatch: Any, metadata: dict[str, dict[str, str]]
) -> None:
    """A store in `tmp_path` (the working folder) with one done note per recording of
    `metadata`, and the variables `medasr deliver` reads pointing at the devserver: one
    attempt per document, the docs upload's patient link from the manifest's patient_id."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MEDASR_CONFIG", raising=False)
    url = f"sqlite:///{tmp_path / 'medasr.db'}"
    for name, value in {
        "MEDASR_DATABASE_URL": url,
        "MEDASR_BASE_URL": server.url,
        "MEDASR_TOKEN": server.token,
        "MEDASR_FHIR_TOKEN": server.token,
        "MEDASR_MAX_ATTEMPTS": "1",
        "MEDASR_DOCS_QUERY": "patient_id={patient_id}",
    }.items():
        monkeypatch.setenv(name, value)
    store = open_store(StorageSettings(database_url=url))
    make_done(store, dict.fromkeys(metadata, "a note"), metadata=metadata)
    store.dispose()
