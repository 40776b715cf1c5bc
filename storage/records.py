"""Plain frozen records: what sources list and what the repository returns (no SQLAlchemy)."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, ClassVar, NamedTuple


class ItemStatus(StrEnum):
    """Where one recording (in one language) stands; the ONE list of item statuses.

    needs_review: transcribed, but the quality gate flagged it
    (tasks/transcription/quality_gate.py); a person accepts it (done) or sends it again
    (pending) with `medasr review`. purged: `medasr purge` removed its patient data
    after the retention period; the row keeps its key and fingerprints so the unchanged
    recording is never transcribed or delivered again. A StrEnum: members compare equal
    to their strings.
    """

    PENDING = "pending"
    PROCESSING = "processing"
    DONE = "done"
    NEEDS_REVIEW = "needs_review"
    FAILED = "failed"
    SKIPPED = "skipped"
    PURGED = "purged"


class ChunkStatus(StrEnum):
    """One chunk's result."""

    DONE = "done"
    FAILED = "failed"
    SILENT = "silent"


class DeliveryStatus(StrEnum):
    """Where one delivery (a transcript version to a target) stands.

    superseded: a version never delivered whose recording has a newer transcript now.
    in_doubt: its request may have reached the receiver but no answer was recorded (the
    sender was killed, its lease lapsed, or the connection broke after sending began):
    never re-sent blindly, only by `medasr deliver --resend-in-doubt` (or by a target
    that deduplicates).
    """

    PENDING = "pending"
    PROCESSING = "processing"
    DELIVERED = "delivered"
    FAILED = "failed"
    SUPERSEDED = "superseded"
    IN_DOUBT = "in_doubt"


# Where a delivery goes when no target is named: the service's own docs endpoint.
DEFAULT_TARGET = "docs"

ITEM_STATUSES = tuple(status.value for status in ItemStatus)
CHUNK_STATUSES = tuple(status.value for status in ChunkStatus)
DELIVERY_STATUSES = tuple(status.value for status in DeliveryStatus)


@dataclass(frozen=True)
class ItemRecord:
    """One source file in one language, as stored."""

    id: int
    source_uri: str
    language: str
    source_version: str
    sha256: str | None
    size_bytes: int
    duration_ms: int | None
    status: str
    error_kind: str | None
    error_message: str | None
    retryable: bool
    attempts: int
    next_attempt_at: datetime | None
    lease_owner: str | None
    lease_expires_at: datetime | None
    text: str | None
    extras: dict[str, Any]
    chunk_count: int | None
    created_at: datetime
    updated_at: datetime
    done_at: datetime | None
    flags: list[str] = field(
        default_factory=list
    )  # the quality gate's, in tasks.transcription.quality_gate.FLAGS order
    metadata: dict[str, str] = field(default_factory=dict)  # the manifest's columns
    lease_token: str | None = None  # this claim's own token; every lease check compares it
    # The machine's own text once a reviewer's version replaced it in `text`; else None.
    machine_text: str | None = None

    @property
    def machine_transcript(self) -> str:
        """What the service answered, whatever a reviewer made of it since."""
        return self.machine_text if self.machine_text is not None else (self.text or "")


@dataclass(frozen=True)
class ChunkRecord:
    """One finished (or failed, or silent) chunk of an item."""

    item_id: int
    index: int
    start_ms: int
    end_ms: int
    size_bytes: int
    status: str
    text: str | None
    attempts: int
    txn_id: str | None
    latency_ms: float | None
    updated_at: datetime


@dataclass(frozen=True)
class RegisterResult:
    """What registering a listing did: new items, changed ones sent back, unchanged ones."""

    new: int
    changed: int
    unchanged: int

    @property
    def total(self) -> int:
        """All files registered."""
        return self.new + self.changed + self.unchanged


@dataclass(frozen=True)
class StatusCount:
    """Items and their known audio duration (ms) for one status and language."""

    status: str
    language: str
    items: int
    audio_ms: int


@dataclass(frozen=True)
class ExportRow:
    """One item as exported (jsonl, csv, txt)."""

    source: str
    language: str
    status: str
    text: str | None
    error_kind: str | None
    error_message: str | None
    duration_ms: int | None
    chunks: int | None
    attempts: int
    sha256: str | None
    updated_at: datetime
    flags: list[str] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)  # the manifest's columns
    machine_text: str | None = None  # what the service answered; `text` is the current version
    reviewed_by: str | None = None  # who finalized or accepted it
    reviewed_at: str | None = None  # when (ISO 8601, the store's clock)
    revision: int | None = None  # the finalized revision `text` is (None: the machine's)
    # The full URI when `source` was shortened to a name for people ("": `source` is it).
    source_uri: str = ""


@dataclass(frozen=True)
class QueueSize:
    """What waits for a person: how many recordings, and since when the oldest."""

    waiting: int
    oldest: datetime | None


@dataclass(frozen=True)
class QueueChoices:
    """What the queue's filters can choose from: the languages and flags that wait."""

    languages: list[str]
    flags: list[str]


@dataclass(frozen=True)
class ReviewerRecord:
    """A person who may sign in to the review workstation (never the password hash out)."""

    id: int
    name: str
    role: str
    failed_count: int
    locked_until: datetime | None
    disabled: bool
    created_at: datetime


@dataclass(frozen=True)
class RevisionRecord:
    """One saved edit of a transcript: draft (kept) or final (the current version)."""

    item_id: int
    number: int
    author: str
    created_at: datetime
    base_revision: int  # 0: the machine's text
    kind: str  # draft | final
    text: str


@dataclass(frozen=True)
class WebSessionRecord:
    """A signed-in browser's session, by the sha256 of its cookie id."""

    id_sha256: str
    reviewer: ReviewerRecord
    csrf_token: str
    last_seen: datetime
    expires_at: datetime


@dataclass(frozen=True)
class DeliveryRecord:
    """One transcript version of one item and what became of its upload."""

    id: int
    item_id: int
    language: str
    version: str
    format: str
    status: str
    attempts: int
    retryable: bool
    error_kind: str | None
    error_message: str | None
    lease_owner: str | None
    lease_expires_at: datetime | None
    response: dict[str, Any] | None
    replaces_id: int | None
    created_at: datetime
    updated_at: datetime
    delivered_at: datetime | None
    lease_token: str | None = None  # one per claim: every write under it compares it
    target: str = "docs"  # where it goes; part of the exactly-once key
    remote_id: str | None = None  # what the receiver named it (document id, Location, MSA-2)
    sending_at: datetime | None = None  # set (committed) just before the request goes out
    control_id: str | None = None  # MSH-10 of the current attempt series, once it went out
    series: int = 0  # attempt series: a new one after each definitive answer
    document_id: str | None = None  # what the target knows the note by (TXA-12, masterIdentifier)
    sent_text: str | None = field(default=None, repr=False)  # kept while in doubt
    filing: int = 0  # the times this version went to this target before (filed again)


@dataclass(frozen=True)
class WantedDelivery:
    """A done item and the version of its transcript today, for one target."""

    item_id: int
    language: str
    version: str
    target: str = DEFAULT_TARGET


@dataclass(frozen=True)
class SentIdentity:
    """What a delivery goes out as: kept on its row before the request leaves."""

    control_id: str | None  # MSH-10 of this attempt series (None: the target has none)
    document_id: str  # TXA-12, or the FHIR masterIdentifier
    replaces_id: int | None  # the delivered row whose version this one replaces
    sent_text: str = field(repr=False, default="")


@dataclass(frozen=True)
class DeliveryCount:
    """Rows of one delivery status (to one target, when counted by target)."""

    status: str
    rows: int
    target: str | None = None


@dataclass(frozen=True)
class RunRecord:
    """One run of a flow over a source."""

    id: int
    started_at: datetime
    finished_at: datetime | None
    source: str
    language: str
    status: str
    counts: dict[str, int]


@dataclass(frozen=True)
class NotAudioListing:
    """What the latest listing of a source ignored as not audio: how many, by reason, and
    the first names relative to the source (none after a purge)."""

    source: str
    listed_at: datetime
    count: int
    by_reason: dict[str, int]
    names: list[str]


class SourceFile(NamedTuple):
    """One listed audio file; `version` (mtime_ns or ETag) changes when content may change.

    A named tuple: one small object per listed file, and `json.dumps` writes a batch of
    them as arrays [uri, size_bytes, version] in C (storage/registration.py).
    """

    uri: str
    size_bytes: int
    version: str


@dataclass(frozen=True)
class SkippedFile:
    """A file or folder left out of a listing, with the reason in words.

    `unreadable`: an audio file that is there but cannot be read (permission, link loop,
    not a regular file); it is recorded as failed. Otherwise (still being written, a
    folder seen twice) it is simply not listed this time. `folder`: a folder or bucket
    prefix whose listing failed (unreadable too): its row stands for what it holds.
    """

    uri: str
    reason: str
    unreadable: bool = False
    folder: bool = False


@dataclass
class IgnoredFiles:
    """Files under a source that are not recordings (storage/not_audio.py's rule): counted
    by reason, the first `EXAMPLES` of them in URI order named (whatever order the listing
    met them in); memory stays bounded at any count."""

    EXAMPLES: ClassVar[int] = 20
    count: int = 0
    by_reason: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)

    def add(self, uri: str, reason: str) -> None:
        """Count one ignored file."""
        self.count += 1
        self.by_reason[reason] = self.by_reason.get(reason, 0) + 1
        if len(self.examples) < self.EXAMPLES or uri < self.examples[-1]:
            bisect.insort(self.examples, uri)
            del self.examples[self.EXAMPLES :]


@dataclass(frozen=True)
class Listing:
    """What a source holds now: files to process (sorted by URI) and what was skipped."""

    files: list[SourceFile]
    skipped: list[SkippedFile]
    ignored: IgnoredFiles = field(default_factory=IgnoredFiles)


@dataclass(frozen=True)
class SentRecording:
    """What one recording cost: its requests and billed audio as the store recorded them
    (no name, no text); `finished_at` is when it was done, else when it last changed."""

    language: str
    status: str
    finished_at: datetime
    metadata: dict[str, str]
    duration_ms: int
    requests: int  # every attempt of its answered chunks, retries included
    billed_ms: int  # each attempt billed at its chunk's length, at least the billed minimum


@dataclass(frozen=True)
class PendingAudio:
    """Recordings waiting to be claimed and their audio: measured where a run stored
    their length, else only their size in bytes."""

    recordings: int
    measured_ms: int
    unmeasured_bytes: int
