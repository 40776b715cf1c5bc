"""Whose note: the identifiers a receiver knows a filed transcript by.

A note is (store, recording, language, version), never its words alone: two copies of
one dictation for two patients are two documents, and two stores never share an
identifier. The store's part is its identity (`uow.deliveries.store_identity()`, made
once per database by a migration, 8 characters of Crockford base32: 40 random bits).

- TXA-12 and the FHIR masterIdentifier name one version of one recording's note in
  one store: stable across sends and runs, new per version, and new again when a
  version is filed once more as the replacement of another (its `filing`).
- MSH-10 names one attempt series of one delivery row: the store identity, the row id
  and the series, `<store:8><row id, base 36>-<series, base 36>`, at most 20 characters
  (HL7 2.5.1 ST). Within a store it is unique by construction; across stores two
  collide only if their identities do: for n stores about n^2 / 2^41 (10^-6 for a
  thousand stores).
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass

from config.errors import InternalError
from tasks.delivery.targets import TargetKind

MSH_10_MAX_CHARS = 20
_BASE36 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
# Fixed forever: changing it would change every identifier a receiver has seen.
_NAMESPACE = uuid.UUID("0b6f4e1e-5a0d-5c33-9d1e-7f2a8c4d6e10")


@dataclass(frozen=True)
class NoteKey:
    """One version of one recording's note in one store."""

    store_id: str
    item_id: int  # the recording, in its language, in this store
    language: str
    version: str  # storage.versions.transcript_version
    filing: int = 0  # filed again after another version replaced it (the row's `filing`)

    def named(self) -> str:
        named = f"{self.store_id}\n{self.item_id}\n{self.language}\n{self.version}"
        # A first filing keeps the identifiers receivers have seen since 0011.
        return named if self.filing == 0 else f"{named}\n{self.filing}"


def note_urn(key: NoteKey) -> str:
    """urn:uuid of one note version (the FHIR masterIdentifier)."""
    return f"urn:uuid:{uuid.uuid5(_NAMESPACE, 'note:' + key.named())}"


def recording_urn(*, store_id: str, item_id: int, language: str) -> str:
    """urn:uuid of one recording's notes in one language (the FHIR identifier)."""
    return f"urn:uuid:{uuid.uuid5(_NAMESPACE, f'recording:{store_id}:{item_id}:{language}')}"


def txa_12(key: NoteKey) -> str:
    """TXA-12 (unique document number) of one note version."""
    digest = hashlib.sha256(("txa12\n" + key.named()).encode("utf-8")).hexdigest()
    return "MEDASR-" + digest[:32].upper()


def document_id_for(kind: TargetKind, key: NoteKey) -> str:
    """What a target of `kind` knows the note by: TXA-12 over MLLP, the URN elsewhere."""
    return txa_12(key) if kind is TargetKind.MLLP else note_urn(key)


def message_control_id(*, store_id: str, delivery_id: int, series: int) -> str:
    """MSH-10 of one attempt series of one delivery row; at most 20 characters."""
    control = f"{store_id}{_base36(delivery_id)}-{_base36(series)}"
    if len(control) > MSH_10_MAX_CHARS:
        raise InternalError(f"message control ID {control!r} exceeds {MSH_10_MAX_CHARS} characters")
    return control


def _base36(number: int) -> str:
    digits = ""
    while True:
        number, digit = divmod(number, 36)
        digits = _BASE36[digit] + digits
        if number == 0:
            return digits
