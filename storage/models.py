"""SQLAlchemy 2.0 typed models: items (one per source URI and language), chunks, runs.

The migrations under storage/migrations own the schema; these classes describe it for
queries. Timestamps are timezone-aware UTC in Python; SQLite keeps them naive, so
`UTCDateTime` converts on the way in and out.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from storage.records import CHUNK_STATUSES, DELIVERY_STATUSES, ITEM_STATUSES

__all__ = [
    "CHUNK_STATUSES",
    "ITEM_STATUSES",
    "RUN_COUNT_COLUMNS",
    "AuditEventRow",
    "Base",
    "ChunkRow",
    "Delivery",
    "Item",
    "NoteAccuracyRow",
    "Reviewer",
    "Revision",
    "Run",
    "StoreIdentity",
    "WebSession",
]

# Stable constraint names, so migrations can drop and alter them on every dialect.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_name)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UTCDateTime(TypeDecorator[datetime]):
    """A timestamp stored as UTC; naive values read back (SQLite) are UTC by definition."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to the store; use timezone-aware UTC")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


class Base(DeclarativeBase):
    """Declarative base with the naming convention."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def _in(values: tuple[str, ...]) -> str:
    return ", ".join(f"'{v}'" for v in values)


class Item(Base):
    """One source file in one language: fingerprint, status, lease, transcript."""

    __tablename__ = "items"
    __table_args__ = (
        UniqueConstraint("source_uri", "language"),
        CheckConstraint(f"status IN ({_in(ITEM_STATUSES)})", name="status"),
        Index("ix_items_status_language", "status", "language", "id"),
        # The done-twin lookup, in its order (0005): storage/queries.py find_done_with_sha.
        Index(
            "ix_items_sha256_language_status_done_at",
            "sha256",
            "language",
            "status",
            "done_at",
            "id",
        ),
        Index("ix_items_status_updated_at", "status", "updated_at", "id"),  # latest (0005)
        # `medasr status` counts from the index alone (0005).
        Index("ix_items_status_language_duration_ms", "status", "language", "duration_ms"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    source_uri: Mapped[str] = mapped_column(Text)
    language: Mapped[str] = mapped_column(String(16))
    source_version: Mapped[str] = mapped_column(String(255))
    sha256: Mapped[str | None] = mapped_column(String(64))
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    duration_ms: Mapped[int | None] = mapped_column(BigInteger)
    status: Mapped[str] = mapped_column(String(16))
    error_kind: Mapped[str | None] = mapped_column(String(64))
    error_message: Mapped[str | None] = mapped_column(Text)
    retryable: Mapped[bool] = mapped_column(Boolean, default=False)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    lease_owner: Mapped[str | None] = mapped_column(String(255))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    lease_token: Mapped[str | None] = mapped_column(String(64))  # one per claim (0002)
    text: Mapped[str | None] = mapped_column(Text)
    extras: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    chunk_count: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)
    done_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    flags: Mapped[list[str] | None] = mapped_column(JSON(none_as_null=True))
    # "metadata" is taken by the declarative base: the attribute has another name.
    item_metadata: Mapped[dict[str, str] | None] = mapped_column(
        "metadata", JSON(none_as_null=True)
    )
    # The machine's own text once a reviewer's version has replaced it in `text` (0010).
    machine_text: Mapped[str | None] = mapped_column(Text)


class ChunkRow(Base):
    """One piece of an item's audio as sent (or found silent), committed as it comes."""

    __tablename__ = "chunks"
    __table_args__ = (CheckConstraint(f"status IN ({_in(CHUNK_STATUSES)})", name="status"),)

    item_id: Mapped[int] = mapped_column(
        ForeignKey("items.id", ondelete="CASCADE"), primary_key=True
    )
    index: Mapped[int] = mapped_column(Integer, primary_key=True)
    start_ms: Mapped[int] = mapped_column(BigInteger)
    end_ms: Mapped[int] = mapped_column(BigInteger)
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    status: Mapped[str] = mapped_column(String(16))
    text: Mapped[str | None] = mapped_column(Text)
    attempts: Mapped[int] = mapped_column(Integer, default=1)
    txn_id: Mapped[str | None] = mapped_column(String(255))
    latency_ms: Mapped[float | None] = mapped_column(Float)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)


class Run(Base):
    """One pass of a flow over a source, with its counts."""

    __tablename__ = "runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    source: Mapped[str] = mapped_column(Text)
    language: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(32))
    files: Mapped[int] = mapped_column(Integer, default=0)
    done: Mapped[int] = mapped_column(Integer, default=0)
    failed: Mapped[int] = mapped_column(Integer, default=0)
    skipped: Mapped[int] = mapped_column(Integer, default=0)
    requests: Mapped[int] = mapped_column(Integer, default=0)
    retries: Mapped[int] = mapped_column(Integer, default=0)
    other_counts: Mapped[dict[str, int] | None] = mapped_column(JSON(none_as_null=True))


class Delivery(Base):
    """One transcript version of one item, uploaded (or to upload) to the patient record."""

    __tablename__ = "deliveries"
    __table_args__ = (
        UniqueConstraint("item_id", "version", "target", "filing"),
        CheckConstraint(f"status IN ({_in(DELIVERY_STATUSES)})", name="status"),
        Index("ix_deliveries_status_id", "status", "id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"))
    language: Mapped[str] = mapped_column(String(16))
    version: Mapped[str] = mapped_column(String(64))
    format: Mapped[str] = mapped_column(String(8))
    status: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    retryable: Mapped[bool] = mapped_column(Boolean, default=False)
    error_kind: Mapped[str | None] = mapped_column(String(64))
    error_message: Mapped[str | None] = mapped_column(Text)
    lease_owner: Mapped[str | None] = mapped_column(String(255))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    response: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    replaces_id: Mapped[int | None] = mapped_column(
        ForeignKey("deliveries.id", ondelete="SET NULL")
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    lease_token: Mapped[str | None] = mapped_column(String(64))  # one per claim (0005)
    target: Mapped[str] = mapped_column(String(255), default="docs", server_default="docs")
    remote_id: Mapped[str | None] = mapped_column(String(255))
    sending_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    control_id: Mapped[str | None] = mapped_column(String(64))  # MSH-10 of this series
    series: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    document_id: Mapped[str | None] = mapped_column(String(128))  # TXA-12 / masterIdentifier
    sent_text: Mapped[str | None] = mapped_column(Text)  # kept while the answer may be missing
    # The times this version went to this target before (0013): a version that is the note
    # again after another replaced it is filed again, under identifiers of its own.
    filing: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class StoreIdentity(Base):
    """The store's own name, made once per database by a migration (one row)."""

    __tablename__ = "store_identity"
    __table_args__ = (CheckConstraint("id = 1", name="one_row"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    store_id: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


RUN_COUNT_COLUMNS = ("files", "done", "failed", "skipped", "requests", "retries")


class ListedSource(Base):
    """A source this store has listed, and what its latest listing ignored as not audio (0012)."""

    __tablename__ = "listed_sources"
    __table_args__ = (UniqueConstraint("uri"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    uri: Mapped[str] = mapped_column(Text)
    listed_at: Mapped[datetime] = mapped_column(UTCDateTime)
    not_audio_count: Mapped[int] = mapped_column(Integer, default=0)
    not_audio_by_reason: Mapped[dict[str, int] | None] = mapped_column(JSON(none_as_null=True))


class NotAudioFile(Base):
    """One file the latest listing of a source ignored as not audio: its name relative to
    the source (0012; the first few per source, removed by a purge)."""

    __tablename__ = "not_audio_files"
    __table_args__ = (Index("ix_not_audio_files_source_id", "source_id", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    source_id: Mapped[int] = mapped_column(ForeignKey("listed_sources.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(Text)


class AuditEventRow(Base):
    """One event of the audit trail (0009): append-only, chained by hash, never purged."""

    __tablename__ = "audit_events"
    __table_args__ = (
        UniqueConstraint("hash"),
        Index("ix_audit_events_occurred_at", "occurred_at", "seq"),
        Index("ix_audit_events_item_id", "item_id", "seq"),
    )

    seq: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    occurred_at: Mapped[datetime] = mapped_column(UTCDateTime)
    actor: Mapped[str] = mapped_column(String(255))
    action: Mapped[str] = mapped_column(String(32))
    item_id: Mapped[int | None] = mapped_column(BigInteger)
    path: Mapped[str | None] = mapped_column(Text)
    target: Mapped[str | None] = mapped_column(Text)
    detail: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    prev_hash: Mapped[str] = mapped_column(String(64))
    hash: Mapped[str] = mapped_column(String(64))


class Reviewer(Base):
    """A person who may sign in to the review workstation (0010)."""

    __tablename__ = "reviewers"
    __table_args__ = (
        UniqueConstraint("name"),
        CheckConstraint("role IN ('reviewer', 'admin')", name="role"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64))
    role: Mapped[str] = mapped_column(String(16))
    password_hash: Mapped[str] = mapped_column(String(255))
    failed_count: Mapped[int] = mapped_column(Integer, default=0)
    locked_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


class Revision(Base):
    """One reviewer's edit of an item's transcript; the machine's text is never one (0010)."""

    __tablename__ = "revisions"
    __table_args__ = (
        UniqueConstraint("item_id", "number"),
        CheckConstraint("kind IN ('draft', 'final')", name="kind"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"))
    number: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)
    author: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    base_revision: Mapped[int] = mapped_column(Integer)  # 0: the machine's text
    kind: Mapped[str] = mapped_column(String(8))
    # sha256 of the machine text edited: a new transcription starts a new history.
    machine_sha256: Mapped[str] = mapped_column(String(64))


class WebSession(Base):
    """A signed-in browser: the cookie's id is kept only as its sha256 (0010)."""

    __tablename__ = "web_sessions"

    id_sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    reviewer_id: Mapped[int] = mapped_column(ForeignKey("reviewers.id", ondelete="CASCADE"))
    csrf_token: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    last_seen: Mapped[datetime] = mapped_column(UTCDateTime)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)


class NoteAccuracyRow(Base):
    """A reviewed note's word figures (0013): its latest decision, no text; kept by a purge."""

    __tablename__ = "note_accuracy"
    __table_args__ = (
        Index("ix_note_accuracy_reviewed_at", "reviewed_at"),
        Index("ix_note_accuracy_author", "author", "reviewed_at"),
        Index("ix_note_accuracy_department", "department", "reviewed_at"),
        Index("ix_note_accuracy_language", "language", "reviewed_at"),
    )

    item_id: Mapped[int] = mapped_column(
        ForeignKey("items.id", ondelete="CASCADE"), primary_key=True
    )
    revision: Mapped[int] = mapped_column(Integer)  # 0: the machine's text accepted as is
    reviewer: Mapped[str] = mapped_column(String(255))
    reviewed_at: Mapped[datetime] = mapped_column(UTCDateTime)
    language: Mapped[str] = mapped_column(String(16))
    author: Mapped[str | None] = mapped_column(String(255))
    department: Mapped[str | None] = mapped_column(String(255))
    words: Mapped[int] = mapped_column(Integer)
    substitutions: Mapped[int] = mapped_column(Integer)
    deletions: Mapped[int] = mapped_column(Integer)
    insertions: Mapped[int] = mapped_column(Integer)
    accuracy: Mapped[float] = mapped_column(Float)
