"""One rule for the manifest's identifiers on every target (docs upload, FHIR, MLLP).

A patient id, encounter or document type holding a control character (Unicode's Cc: C0,
DEL, C1), made of blanks only (a cell that looks filled but names no one), or longer
than HL7 v2.5.1 allows a CX field (250 characters) is no real identifier: the recording
fails alone (`metadata_invalid`), whatever the target, and the dry run counts it so. The
value is never quoted (it may be a patient's identifier).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from tasks.delivery.errors import MetadataInvalid

IDENTIFIER_COLUMNS = ("patient_id", "encounter", "doc_type")
IDENTIFIER_MAX_CHARS = 250  # HL7 v2.5.1 CX (PID-3); no real identifier comes near it
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def check_identifiers(metadata: Mapping[str, str], *, source: str) -> None:
    """Raise MetadataInvalid when an identifier column breaks the rule."""
    for column in IDENTIFIER_COLUMNS:
        value = metadata.get(column) or ""
        if value and not value.strip():
            raise MetadataInvalid(
                f"{source}: the manifest's {column} for this recording is blank (only spaces); "
                "correct the manifest and run again"
            )
        found = _CONTROL.search(value)
        if found:
            raise MetadataInvalid(
                f"{source}: the manifest's {column} for this recording holds a control "
                f"character (U+{ord(found.group()):04X} at position {found.start() + 1}); "
                "correct the manifest and run again"
            )
        if len(value) > IDENTIFIER_MAX_CHARS:
            raise MetadataInvalid(
                f"{source}: the manifest's {column} for this recording has {len(value)} "
                f"characters, more than an identifier holds ({IDENTIFIER_MAX_CHARS}); correct "
                "the manifest and run again"
            )
