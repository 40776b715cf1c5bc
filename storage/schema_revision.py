"""The schema revision without Alembic: the newest this program knows, and the database's.

Opening a store (`medasr status`, export, review, every run) compares the two; Alembic
and its script directory (about half a second of imports and parsing) are loaded only
when they differ, to upgrade or to name the difference (storage/database.py). The newest
revision is read from the migration files' `revision` and `down_revision` lines; a
history this simple reading cannot follow (a merge, two heads) gives None, and Alembic
decides as before. Hand-written because Alembic offers no import-light way to ask.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from sqlalchemy import Connection, inspect, text

VERSIONS_DIR = Path(__file__).resolve().parent / "migrations" / "versions"
_ASSIGNED = r'^{name}(?:\s*:[^=\n]+)?\s*=\s*(?:"([^"\n]+)"|None)\s*$'
_REVISION = re.compile(_ASSIGNED.format(name="revision"), re.MULTILINE)
_DOWN_REVISION = re.compile(_ASSIGNED.format(name="down_revision"), re.MULTILINE)


@functools.cache
def newest_known_revision() -> str | None:
    """The one head of the migration files' linear history; None if it is not that simple."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in VERSIONS_DIR.glob("*.py"):
        if path.name.startswith("__"):
            continue
        source = path.read_text(encoding="utf-8")
        revision, down = _REVISION.search(source), _DOWN_REVISION.search(source)
        if revision is None or down is None or revision.group(1) is None:
            return None  # a form this reading does not know (e.g. a merge's tuple)
        revisions.add(revision.group(1))
        if down.group(1) is not None:
            parents.add(down.group(1))
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 and parents <= revisions else None


def stored_revision(connection: Connection) -> str | None:
    """The revision recorded in the database (alembic_version); None if none or several."""
    if not inspect(connection).has_table("alembic_version"):
        return None
    found = connection.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    return found[0] if len(found) == 1 else None


def other_tables(connection: Connection) -> list[str]:
    """The tables of a database with no recorded revision (its default schema) but an
    empty alembic_version (a store downgraded to nothing): medasr's schema goes only
    into an empty database."""
    return sorted(set(inspect(connection).get_table_names()) - {"alembic_version"})
