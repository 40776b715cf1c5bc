"""Errors of turning one transcript into a document for the patient record.

    MedasrError (config/errors.py)
    └── TerminalError
        ├── MetadataMissing           "metadata_missing": MEDASR_DOCS_QUERY names a manifest
        │                             column this recording has no value for; retryable
        │                             once the manifest is fixed and the source listed again
        ├── DocumentInvalid           "document_invalid": the FHIR resource does not validate
        │                             (e.g. a manifest date that is not a date)
        └── RunStop └── ConfigError  the run stops
            └── DocsQueryInvalid      MEDASR_DOCS_QUERY is not a usable template (exit 2)

Manifest problems are storage/errors.py's ManifestInvalid (a ConfigError). Messages name
the recording and the column, never transcript text, a token or a key.
"""

from __future__ import annotations

from config.errors import ConfigError, TerminalError


class MetadataMissing(TerminalError):
    """The query template needs a manifest column this recording lacks."""

    kind = "metadata_missing"


class DocumentInvalid(TerminalError):
    """The document built for a recording is not a valid FHIR resource."""

    kind = "document_invalid"


class DocsQueryInvalid(ConfigError):
    """MEDASR_DOCS_QUERY cannot be parsed as a query-string template."""

    kind = "docs_query_invalid"
