"""Whether the temporary server's database is already at Prefect's newest schema.

On every start Prefect's server runs Alembic's upgrade: Alembic loads each of Prefect's
hundred-odd migration scripts to learn that there is nothing to do (about 0.2 s of the
server's CPU on a nightly host, every night). When the default SQLite database already
carries the newest revision of the installed Prefect, the temporary server is started
with PREFECT_API_DATABASE_MIGRATE_ON_START=false. The newest revision is read from the
scripts' text (`revision = "..."`, `down_revision = "..."`), without importing them;
anything unexpected (another database, several heads, an unreadable file) leaves the
upgrade on, as Prefect would have it.
"""

from __future__ import annotations

import importlib.util
import re
import sqlite3
from collections.abc import Mapping
from pathlib import Path

MIGRATE_ON_START = "PREFECT_API_DATABASE_MIGRATE_ON_START"
_REVISION = re.compile(r"^revision\s*=\s*['\"](\w+)['\"]", re.MULTILINE)
_DOWN_REVISION = re.compile(r"^down_revision\s*=\s*['\"](\w+)['\"]", re.MULTILINE)


def skip_migrations(environment: Mapping[str, str]) -> dict[str, str]:
    """{MIGRATE_ON_START: "false"} when the server this `environment` starts would find
    its database at the newest schema already; else nothing (Prefect upgrades it)."""
    if any(name.startswith("PREFECT_") and "DATABASE" in name for name in environment):
        return {}
    home = Path(environment.get("PREFECT_HOME", "~/.prefect")).expanduser()
    current = _database_revision(home / "prefect.db")
    if current is None or current != _newest_revision():
        return {}
    return {MIGRATE_ON_START: "false"}


def _database_revision(path: Path) -> str | None:
    """The Alembic revision stored in the SQLite database at `path`; None if unknown."""
    if not path.is_file():
        return None
    try:
        connection = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    try:
        rows = connection.execute("SELECT version_num FROM alembic_version").fetchall()
    except sqlite3.Error:
        return None
    finally:
        connection.close()
    return str(rows[0][0]) if len(rows) == 1 else None


def _newest_revision() -> str | None:
    """The single head of the installed Prefect's SQLite migrations; None if unclear."""
    spec = importlib.util.find_spec("prefect")  # found, not imported
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent / "server" / "database" / "_migrations" / "versions"
    revisions: set[str] = set()
    parents: set[str] = set()
    try:
        for script in (folder / "sqlite").glob("*.py"):
            text = script.read_text(encoding="utf-8")
            revisions.update(_REVISION.findall(text))
            parents.update(_DOWN_REVISION.findall(text))
    except OSError:
        return None
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None
