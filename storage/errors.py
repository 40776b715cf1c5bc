"""Errors of sources (folders, buckets) and of the SQL store; translated once, at the boundary.

    MedasrError (config/errors.py)
    ├── TransientError
    │   ├── SourceUnavailable          network, throttling, I/O hiccup: try again later
    │   ├── StoreUnavailable           database locked past the busy timeout, server down
    │   └── LeaseLost                  another worker took the item over (our lease expired)
    └── TerminalError
        ├── SourceNotFound             the folder, bucket or object does not exist
        ├── SourceUnreadable           no permission, no credentials, not a regular file
        ├── StoreFailed                the database refused a statement (a bug or a constraint)
        ├── ExportRefused              export file not written: a link or another's file in the way
        ├── ReviewRefused              (config/errors.py) a reviewer's decision refused,
        │   │                          nothing changed: the workstation answers 409
        │   │                          (stale) or 400, the command line exits 2
        │   ├── NotUnderReview         a decision on an item that is not needs_review
        │   ├── StaleRevision          a save based on a version someone has saved over since
        │   │   └── DraftInTheWay      a send back over a colleague's draft, not confirmed
        │   └── NotEditable            an edit of a recording with no transcript to correct
        └── RunStop └── ConfigError  the run stops
            ├── UnsupportedSource      unknown scheme, or its fsspec extra is not installed
            ├── DatabaseUrlInvalid     MEDASR_DATABASE_URL unusable (dialect, driver, path)
            ├── SchemaOutdated         the database is not at the newest revision
            ├── SchemaUnknown          the database is at a revision this medasr does not know
            ├── ManifestInvalid        the metadata manifest (CSV) cannot be read or used
            └── ReviewerInvalid        a reviewer name unknown, taken or malformed

`SourceError` and `StoreError` are mixins, so `except SourceError` catches every
source failure whatever its `transient`. Messages name paths and URIs but never a
password of a database URL, a credential, or transcript text.
"""

from __future__ import annotations

from config.errors import (
    ConfigError,
    MedasrError,
    ReviewRefused,
    TerminalError,
    TransientError,
)


class SourceError(MedasrError):
    """Mixin of every failure to list, read or fetch a source."""

    kind = "source_error"


class SourceUnavailable(SourceError, TransientError):
    """The source could not answer now (network, throttling, I/O error); retry later."""

    kind = "source_unavailable"


class SourceNotFound(SourceError, TerminalError):
    """The folder, bucket or object does not exist (any more)."""

    kind = "source_not_found"


class SourceUnreadable(SourceError, TerminalError):
    """The source exists but cannot be read: permission, credentials, not a regular file."""

    kind = "source_unreadable"


class UnsupportedSource(SourceError, ConfigError):
    """The source URL's scheme is unknown or its fsspec extra (gcsfs, adlfs) is missing."""

    kind = "unsupported_source"


class StoreError(MedasrError):
    """Mixin of every failure of the SQL store."""

    kind = "store_error"


class StoreUnavailable(StoreError, TransientError):
    """The database is locked past the busy timeout, or its server cannot be reached."""

    kind = "store_unavailable"


class LeaseLost(StoreError, TransientError):
    """The item is no longer ours: our lease expired and another worker claimed it."""

    kind = "lease_lost"


class StoreFailed(StoreError, TerminalError):
    """The database refused a statement (a constraint or a bug); repeating will not help."""

    kind = "store_failed"


class DatabaseUrlInvalid(StoreError, ConfigError):
    """MEDASR_DATABASE_URL cannot be used: bad syntax, dialect, driver or missing folder."""

    kind = "database_url_invalid"


class SchemaOutdated(StoreError, ConfigError):
    """The database schema is older than this program; run `medasr db upgrade`."""

    kind = "schema_outdated"


class SchemaUnknown(StoreError, ConfigError):
    """The database was migrated by a newer medasr; this one must not touch it."""

    kind = "schema_unknown"


class ManifestInvalid(ConfigError):
    """The metadata manifest (medasr.csv or --manifest) cannot be read or has no `path`."""

    kind = "manifest_invalid"


class NotUnderReview(ReviewRefused):
    """A decision (`medasr review --accept/--resend`, the workstation) on an item that does
    not wait for review."""

    kind = "not_under_review"


class StaleRevision(ReviewRefused):
    """A reviewer saved over a version another reviewer had already replaced; nothing saved."""

    kind = "stale_revision"


class DraftInTheWay(StaleRevision):
    """A send back that would set a colleague's draft aside, not confirmed; nothing changed."""

    kind = "draft_in_the_way"

    def __init__(self, number: int, message: str) -> None:
        super().__init__(message)
        self.number = number  # the draft's revision, which a confirmation must name


class NotEditable(ReviewRefused):
    """An edit of a recording that holds no transcript to correct (pending, failed...)."""

    kind = "not_editable"


class ReviewerInvalid(ConfigError):
    """`medasr reviewers` given a name that is unknown, already taken, or not a plain name."""

    kind = "reviewer_invalid"


class ExportRefused(TerminalError):
    """An export file was not written: a link or a file medasr did not write is in its place."""

    kind = "export_refused"
