"""Registering a listing at archive scale: one statement compares a batch, one inserts it.

The listed files travel as one JSON parameter (no limit on parameters, no per-row work
in Python): the store joins them with `items` on its unique (source_uri, language)
index and returns only the files that are new or changed, so the nightly no-op costs a
`stat` and an indexed lookup per file. New files go in with `INSERT ... SELECT ... ON
CONFLICT DO NOTHING`: another run registering the same files at once is not an error. A
batch whose URI range holds no item yet (a new folder) is inserted without the
comparison (`any_registered`: one step on the index).
SQLite (json_each) and PostgreSQL (jsonb_array_elements) each have their text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import bindparam, select, text
from sqlalchemy.orm import Session

from storage.models import Item, UTCDateTime
from storage.records import SourceFile

_ROWS = {  # each listed file as the JSON array [uri, size_bytes, version] (a SourceFile)
    "sqlite": "json_each(:rows) AS j",
    "postgresql": "jsonb_array_elements(CAST(:rows AS jsonb)) WITH ORDINALITY AS j(value, n)",
}
# Listed files compared and inserted per statement (one JSON parameter: no IN-list limit).
REGISTER_BATCH = 5000
_KEY = {"sqlite": "j.key", "postgresql": "j.n - 1"}  # the file's index in the batch
_SIZE = {"sqlite": "j.value ->> 1", "postgresql": "CAST(j.value ->> 1 AS bigint)"}
_FALSE = {"sqlite": "0", "postgresql": "false"}
# Plain lists of tuples of str and int: nothing can refer to itself.
_ENCODER = json.JSONEncoder(check_circular=False)


class Differing(NamedTuple):
    """A listed file the store does not hold as listed: new (`id` None) or changed."""

    position: int  # in the batch compared
    id: int | None


class Encoded(NamedTuple):
    """Listed files and the one JSON parameter that carries them (encoded once a batch)."""

    files: Sequence[SourceFile]
    rows: str  # [[uri, size_bytes, version], ...]


def encode_files(files: Sequence[SourceFile]) -> Encoded:
    """`files` with their JSON parameter (a SourceFile is a tuple: the C encoder writes it)."""
    return Encoded(files, _ENCODER.encode(files if isinstance(files, list) else list(files)))


def any_registered(session: Session, files: Sequence[SourceFile], *, language: str) -> bool:
    """Whether an item of `language` has a URI between the least and greatest of `files`:
    one step on the (source_uri, language) index. False means "probably all new"
    (the database's collation may order URIs otherwise): callers check the insert count."""
    least, greatest = min(files).uri, max(files).uri
    found = select(Item.id).where(
        Item.source_uri >= least, Item.source_uri <= greatest, Item.language == language
    )
    return session.scalar(select(found.exists())) is True


def find_differing(session: Session, listed: Encoded, *, language: str) -> list[Differing]:
    """The listed files that are new, or whose version or size differs, in one query:
    their position and item id (None: new). An unchanged file costs no row in Python."""
    dialect = session.get_bind().dialect.name
    query = text(
        f"SELECT {_KEY[dialect]}, i.id FROM {_ROWS[dialect]}"  # noqa: S608
        " LEFT JOIN items AS i ON i.source_uri = j.value ->> 0 AND i.language = :language"
        " WHERE i.id IS NULL OR i.source_version <> j.value ->> 2"
        f" OR i.size_bytes <> {_SIZE[dialect]}"
    )
    rows = session.execute(query, {"rows": listed.rows, "language": language}).all()
    return [Differing(int(index), item_id) for index, item_id in rows]


def find_unsettled(
    session: Session, files: Sequence[SourceFile], *, language: str, settled: Sequence[str]
) -> list[str]:
    """URIs of `files` that are new, changed, or held in a status not in `settled`: what
    a dry run must read (the rest a run would not claim), in one query."""
    dialect = session.get_bind().dialect.name
    query = text(
        "SELECT j.value ->> 0 FROM"  # noqa: S608
        f" {_ROWS[dialect]}"
        " LEFT JOIN items AS i ON i.source_uri = j.value ->> 0 AND i.language = :language"
        " WHERE i.id IS NULL OR i.source_version <> j.value ->> 2"
        f" OR i.size_bytes <> {_SIZE[dialect]} OR i.status NOT IN :settled"
    ).bindparams(bindparam("settled", expanding=True))
    values = {"rows": encode_files(files).rows, "language": language, "settled": list(settled)}
    return list(session.scalars(query, values))


def insert_new(session: Session, listed: Encoded, *, language: str, now: datetime) -> int:
    """Insert pending items for the listed files, skipping any another run inserted first;
    returns how many were ours."""
    dialect = session.get_bind().dialect.name
    statement = text(
        "INSERT INTO items (source_uri, language, source_version, size_bytes, status,"  # noqa: S608
        " retryable, attempts, created_at, updated_at)"
        f" SELECT j.value ->> 0, :language, j.value ->> 2, {_SIZE[dialect]}, 'pending',"
        f" {_FALSE[dialect]}, 0, :now, :now FROM {_ROWS[dialect]}"
        " WHERE true"  # SQLite: tells the upsert clause from a join's ON
        " ON CONFLICT (source_uri, language) DO NOTHING"
    ).bindparams(bindparam("now", type_=UTCDateTime()))
    result = session.execute(statement, {"rows": listed.rows, "language": language, "now": now})
    return int(result.rowcount)  # type: ignore[attr-defined]
