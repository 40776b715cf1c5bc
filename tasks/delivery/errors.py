"""Errors of turning one transcript into a document for the patient record.

    MedasrError (config/errors.py)
    ├── TerminalError
    │   ├── MetadataMissing           "metadata_missing": MEDASR_DOCS_QUERY names a manifest
    │   │                             column this recording has no value for; retryable
    │   │                             once the manifest is fixed and the source listed again
    │   ├── MetadataInvalid           "metadata_invalid" (tasks/errors.py): an identifier
    │   │                             (patient_id, encounter, doc_type) holds a control
    │   │                             character or is too long; retryable once fixed
    │   ├── DocumentInvalid           "document_invalid": the FHIR resource does not validate
    │   │                             (e.g. a manifest date that is not a date)
    │   └── Hl7Rejected               "hl7_rejected": AR/CR, the engine refuses the message
    ├── RunStop                       the run stops
    │   ├── ReceiverSilent            "receiver_silent": the engine answered none of the last
    │   │                             documents; the rest stay pending (exit 1: in doubt)
    │   └── ConfigError
    │       ├── DocsQueryInvalid      MEDASR_DOCS_QUERY is not a usable template (exit 2)
    │       ├── PatientLinkMissing    the docs upload has no MEDASR_DOCS_QUERY naming a
    │       │                         manifest column: no note goes without its patient
    │       ├── TargetInvalid         --to / MEDASR_DELIVERY__TARGET is not a target (exit 2)
    │       └── TargetAlias           a new spelling of an address delivered to (exit 2;
    │                                 --new-target if it is another receiver)
    └── TransientError
        ├── Hl7ApplicationError       "hl7_application_error": AE/CE, retried on a later run
        └── DeliveryInDoubt           "in_doubt": sent, no answer; may have been filed

Manifest problems are storage/errors.py's ManifestInvalid (a ConfigError). Messages name
the recording and the column, never transcript text, a token or a key.
"""

from __future__ import annotations

from config.errors import ConfigError, MedasrError, RunStop, TerminalError, TransientError
from tasks.discovery.recording_names import one_line
from tasks.errors import MetadataInvalid as MetadataInvalid  # one kind, shared with discovery


class MetadataMissing(TerminalError):
    """The query template needs a manifest column this recording lacks."""

    kind = "metadata_missing"


class DocumentInvalid(TerminalError):
    """The document built for a recording is not a valid FHIR resource."""

    kind = "document_invalid"


class DocsQueryInvalid(ConfigError):
    """MEDASR_DOCS_QUERY cannot be parsed as a query-string template."""

    kind = "docs_query_invalid"


class PatientLinkMissing(ConfigError):
    """The docs upload would file notes with no patient identifier (no query template)."""

    kind = "patient_link_missing"


class Hl7ApplicationError(TransientError):
    """AE/CE: the receiving engine could not file the document now; a later run retries."""

    kind = "hl7_application_error"


class Hl7Rejected(TerminalError):
    """AR/CR: the receiving engine refuses the message as it is."""

    kind = "hl7_rejected"


class DeliveryInDoubt(TransientError):
    """Sent, but no answer came back (timeout, dropped connection, garbled reply).

    The receiver may have filed the document. Targets that deduplicate (MLLP with the
    same MSH-10, FHIR conditional create) re-send it safely; others wait for an operator.
    """

    kind = "in_doubt"


class ReceiverSilent(RunStop):
    """The engine answered none of the last documents sent to it: nothing more is sent."""

    kind = "receiver_silent"


class TargetInvalid(ConfigError):
    """`--to` / MEDASR_DELIVERY__TARGET names no target medasr can deliver to."""

    kind = "target_invalid"


class TargetAlias(ConfigError):
    """A target never delivered to whose address is one medasr has delivered to."""

    kind = "target_alias"


def stored_message(exc: MedasrError) -> str:
    """A failure as the store keeps it: our sentence, then the receiver's own words
    (`detail`, on one line), which log lines never carry."""
    return f"{exc}: {one_line(exc.detail)}" if exc.detail else str(exc)
