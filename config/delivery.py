"""The delivery settings section (MEDASR_DELIVERY__*): where and how `medasr deliver` files
transcripts (the docs upload, an HL7 v2 engine over MLLP, a FHIR server).

A section of the one Settings object (config/settings.py), like config/sections.py's:
each field has a default, a bound and a description; the FHIR token is a SecretStr.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, SecretStr, field_validator

from config.sections import blank_secret_is_none

__all__ = ["DeliverySettings", "DeliveryTargetSettings"]


class DeliveryTargetSettings(BaseModel):
    """Where `medasr deliver` files transcripts: the docs upload, an HL7 engine, a FHIR server.

    DeliverySettings inherits these, so they are MEDASR_DELIVERY__<FIELD> (the target is
    MEDASR_DELIVERY__TARGET); the FHIR token also answers to MEDASR_FHIR_TOKEN.
    """

    target: str = Field(
        "docs",
        max_length=2000,
        description="docs, mllp://HOST:PORT, mllps://HOST:PORT or fhir+http(s)://BASE.",
    )
    fhir_token: SecretStr | None = Field(
        None, description="Bearer token of the FHIR server (MEDASR_FHIR_TOKEN)."
    )
    hl7_sending_application: str = Field(
        "MEDASR", min_length=1, max_length=20, description="MSH-3 of every MDM message."
    )
    hl7_sending_facility: str = Field(
        "MEDASR", min_length=1, max_length=20, description="MSH-4 of every MDM message."
    )
    hl7_receiving_application: str = Field(
        "EHR", min_length=1, max_length=20, description="MSH-5 of every MDM message."
    )
    hl7_receiving_facility: str = Field(
        "HOSPITAL", min_length=1, max_length=20, description="MSH-6 of every MDM message."
    )
    hl7_doc_type: str = Field(
        "TN",
        min_length=1,
        max_length=20,
        description="TXA-2 document type when the manifest has no doc_type (TN: transcribed note).",
    )
    hl7_ack_timeout_s: float = Field(
        30.0, gt=0, le=600, description="Wait for an MLLP ACK before the message is in doubt, s."
    )
    hl7_resends: int = Field(
        3,
        ge=0,
        le=20,
        description="Resends (same MSH-10) of an unanswered MDM message within one run.",
    )
    hl7_stop_after_unanswered: int = Field(
        2,
        ge=1,
        le=1000,
        description=(
            "Stop a delivery run after this many documents in a row got no ACK at all "
            "(each costs resends + 1 ACK timeouts); they are in doubt, the rest stay pending."
        ),
    )

    @field_validator("fhir_token", mode="after")
    @classmethod
    def _blank_token_is_missing(cls, token: SecretStr | None) -> SecretStr | None:
        return blank_secret_is_none(token)

    @field_validator(
        "hl7_sending_application",
        "hl7_sending_facility",
        "hl7_receiving_application",
        "hl7_receiving_facility",
        "hl7_doc_type",
        mode="after",
    )
    @classmethod
    def _no_control_characters(cls, value: str) -> str:
        # A CR or an MLLP framing byte here would split every message sent.
        if any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in value):
            raise ValueError("holds a control character, which would split an HL7 message")
        return value


class DeliverySettings(DeliveryTargetSettings):
    """Uploading finished transcripts to the patient record (POST /mr/api/v2/docs)."""

    enabled: bool = Field(
        False, description="Deliver done transcripts at the end of each nightly backlog run."
    )
    format: Literal["txt", "fhir"] = Field(
        "txt", description="What the nightly delivery uploads: txt or a FHIR DocumentReference."
    )
    docs_query: str = Field(
        "",
        max_length=2000,
        description="Query-string template of the upload, filled from the manifest's columns.",
    )
    note_loinc_code: str = Field(
        "11506-3",
        pattern=r"^[0-9]{1,7}-[0-9]$",
        description="LOINC code of the FHIR DocumentReference type (11506-3: progress note).",
    )
