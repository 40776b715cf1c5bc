"""The three senders behind tasks/delivery/targets.py's Sender: docs, MLLP, FHIR REST.

- docs: the service's upload (service/docs_client.py), txt or a FHIR document, as before.
- MLLP: an MDM^T02 (or T10) per transcript; AA/CA delivered, AE/CE a retryable failure,
  AR/CR a failure; no answer, a dropped connection or a garbled reply is resent with the
  SAME MSH-10 up to MEDASR_DELIVERY__HL7_RESENDS times, then the row is in doubt.
- FHIR: a conditional create per transcript version; the server's id is the row's
  remote id, and the next version's `relatesTo` `replaces` points at it.

What each sends is built in tasks/delivery/builders.py (the dry run builds it too).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from config.errors import MedasrError
from config.settings import Settings
from service.docs_client import DocsClient, DocsReceipt, Document
from service.fhir_client import TOKEN_SETTING as FHIR_TOKEN_SETTING
from service.fhir_client import FhirClient
from service.mllp import MllpClient, MllpEndpoint, MllpNoAnswer, MllpTimings, MllpUnreachable
from service.retrying import RetryEvent
from service.status import bearer_token
from tasks.delivery.builders import docs_upload, fhir_body, mdm_message, mdm_parties
from tasks.delivery.documents import DocsQuery
from tasks.delivery.errors import DeliveryInDoubt, Hl7ApplicationError, Hl7Rejected, ReceiverSilent
from tasks.delivery.fhir_documents import version_search_token
from tasks.delivery.mdm import Ack, MdmDocument, MdmParties, parse_ack
from tasks.delivery.targets import Outgoing, Sender, Sent, Target, TargetKind, parse_target

logger = logging.getLogger("medasr.deliver")


def configured_target(settings: Settings) -> Target:
    """MEDASR_DELIVERY__TARGET, parsed; raises TargetInvalid (a ConfigError)."""
    return parse_target(
        settings.delivery.target, allow_insecure=settings.service.allow_insecure_http
    )


def sender_for(
    target: Target,
    settings: Settings,
    *,
    format_name: str,
    query: DocsQuery,
    client: Uploads | None,
    on_retry: Callable[[RetryEvent], None] | None = None,
    allow_unlinked: bool = False,
) -> Sender:
    """The target's sender; the docs upload may be a caller's `client` (left open)."""
    if target.kind is not TargetKind.DOCS or client is None:
        return open_sender(
            target,
            settings,
            format_name=format_name,
            query=query,
            on_retry=on_retry,
            allow_unlinked=allow_unlinked,
        )
    return DocsSender(
        target=target,
        settings=settings,
        client=client,
        format_name=format_name,
        query=query,
        dedupes=bool(getattr(client, "dedupes", False)),  # the docs upload files every copy
    )


def open_sender(
    target: Target,
    settings: Settings,
    *,
    format_name: str,
    query: DocsQuery,
    on_retry: Callable[[RetryEvent], None] | None = None,
    allow_unlinked: bool = False,
) -> Sender:
    """The sender of `target`; raises ConfigError for unusable settings."""
    if target.kind is TargetKind.MLLP:
        return MllpSender(target=target, settings=settings, on_retry=on_retry)
    if target.kind is TargetKind.FHIR:
        return FhirSender(
            target=target, settings=settings, on_retry=on_retry, allow_unlinked=allow_unlinked
        )
    client = DocsClient(settings.service, settings.encryption, on_retry=on_retry)
    return DocsSender(
        target=target, settings=settings, client=client, format_name=format_name, query=query
    )


def target_dedupes(target: Target) -> bool:
    """Whether `target` files a resend of an unanswered document once (MLLP with the same
    MSH-10, FHIR conditional create): the docs upload does not."""
    return target.kind is not TargetKind.DOCS


def check_target_token(target: Target, settings: Settings) -> None:
    """The FHIR token as the first request would use it: CredentialsRejected when none is
    set, ConfigError (naming MEDASR_FHIR_TOKEN) when it cannot go in a header."""
    if target.kind is TargetKind.FHIR:
        bearer_token(settings.delivery.fhir_token, setting=FHIR_TOKEN_SETTING)


class Uploads(Protocol):
    """What uploads a document: the DocsClient, or a stand-in with the same verb."""

    async def upload(self, document: Document) -> DocsReceipt:
        """Send one document; raises the service/errors.py tree."""
        ...


@dataclass
class DocsSender:
    """POST /mr/api/v2/docs: the upload does not deduplicate."""

    target: Target
    settings: Settings
    client: Uploads
    format_name: str
    query: DocsQuery
    dedupes: bool = False

    async def send(self, outgoing: Outgoing) -> Sent:
        """Upload one document; raises the service errors, MetadataMissing, DocumentInvalid."""
        document = docs_upload(
            outgoing,
            format_name=self.format_name,
            query=self.query,
            note_code=self.settings.delivery.note_loinc_code,
        )
        receipt = await self.client.upload(document)
        remote = receipt.fields.get("document_id")
        return Sent(
            fields=receipt.fields,
            remote_id=remote if isinstance(remote, str) else None,
            attempts=receipt.attempts,
            request_bytes=receipt.request_bytes,
        )

    async def aclose(self) -> None:
        """Close the connection pool (a stand-in may have none)."""
        close = getattr(self.client, "aclose", None)
        if close is not None:
            await close()


@dataclass
class MllpSender:
    """MDM over one MLLP connection; the engine drops a repeated MSH-10."""

    target: Target
    settings: Settings
    on_retry: Callable[[RetryEvent], None] | None = None  # hears of every resend
    dedupes: bool = True
    format_name: str = "mdm"
    client: MllpClient = field(init=False)
    parties: MdmParties = field(init=False)
    unanswered_in_a_row: int = field(init=False, default=0)  # documents without any ACK
    _one_document: asyncio.Lock = field(init=False, default_factory=asyncio.Lock)

    def __post_init__(self) -> None:
        delivery = self.settings.delivery
        service = self.settings.service
        timings = MllpTimings(
            ack_timeout_s=delivery.hl7_ack_timeout_s,
            connect_timeout_s=min(service.request_timeout_s, 30.0),
            connect_attempts=service.max_attempts,
            backoff_initial_s=service.retry_initial_backoff_s,
            backoff_max_s=service.retry_max_backoff_s,
        )
        endpoint = MllpEndpoint(self.target.host, self.target.port, tls=self.target.tls)
        self.client = MllpClient(endpoint, timings=timings, ca_bundle=service.ca_bundle)
        self.parties = mdm_parties(self.settings)

    async def send(self, outgoing: Outgoing) -> Sent:
        """Send one MDM and read its ACK; raises Hl7ApplicationError, Hl7Rejected,
        DeliveryInDoubt, MllpUnreachable (nothing sent), MetadataMissing, MetadataInvalid,
        DocumentInvalid, and ReceiverSilent (nothing sent) once the engine stays silent."""
        document, message = mdm_message(outgoing, self.parties, now=datetime.now(UTC))
        # One document at a time, resends included: "in a row" is the order on the wire.
        async with self._one_document:
            self._refuse_if_silent()
            try:
                ack, sends = await self._resend_until_answered(
                    message, document=document, delivery_id=outgoing.delivery_id
                )
            except DeliveryInDoubt:
                self.unanswered_in_a_row += 1
                raise
            self.unanswered_in_a_row = 0
        return _settled(ack, document, target_name=self.target.name, sends=sends, size=len(message))

    def _refuse_if_silent(self) -> None:
        # Each silent document costs (resends + 1) ACK timeouts, one after another.
        limit = self.settings.delivery.hl7_stop_after_unanswered
        if self.unanswered_in_a_row >= limit:
            raise ReceiverSilent(
                f"the engine at {self.target.name} answered none of the last {limit} documents "
                f"({self.settings.delivery.hl7_resends + 1} sends each); delivery stopped, "
                "the rest stay pending: check the engine, then run deliver again"
            )

    async def _resend_until_answered(
        self, message: bytes, *, document: MdmDocument, delivery_id: int
    ) -> tuple[Ack, int]:
        """The ACK and the sends it took; raises DeliveryInDoubt after the last resend."""
        sends = 0
        while True:
            try:
                sends += 1
                return await self._exchange(message, control_id=document.control_id), sends
            except (MllpNoAnswer, DeliveryInDoubt) as exc:
                # Same bytes, same MSH-10: the engine files a repeated control ID once.
                if sends > self.settings.delivery.hl7_resends:
                    raise DeliveryInDoubt(f"message {document.control_id}: {exc}") from exc
                logger.info("delivery %d: resending message %s", delivery_id, document.control_id)
                if self.on_retry is not None:
                    self.on_retry(RetryEvent(sends, 0.0, exc.kind, None))
            except MllpUnreachable as exc:
                if sends == 1:
                    raise  # nothing went out: a plain retryable failure
                raise DeliveryInDoubt(
                    f"message {document.control_id} went unanswered and the engine is now "
                    f"unreachable: {exc}"
                ) from exc

    async def _exchange(self, message: bytes, *, control_id: str) -> Ack:
        reply = await self.client.exchange(message)
        try:
            return parse_ack(reply, control_id=control_id)
        except DeliveryInDoubt:
            await self.client.aclose()  # the link's state is unknown: start afresh
            raise

    async def aclose(self) -> None:
        """Close the connection."""
        await self.client.aclose()


def _settled(ack: Ack, document: MdmDocument, *, target_name: str, sends: int, size: int) -> Sent:
    error: MedasrError | None = None
    if ack.code in ("AE", "CE"):
        error = Hl7ApplicationError(f"the engine answered {ack.code} to message {ack.control_id}")
    elif not ack.accepted:
        error = Hl7Rejected(f"the engine rejected message {ack.control_id} ({ack.code})")
    if error is not None:
        error.detail = ack.text  # the engine's words may name the patient: never logged
        raise error
    fields = {
        "ack_code": ack.code,
        "msa_2": ack.control_id,
        "msh_10": document.control_id,
        "txa_12": document.document_number,
        "trigger": document.trigger,
        "remote_id": document.document_number,
    }
    return Sent(
        fields=fields, remote_id=document.document_number, attempts=sends, request_bytes=size
    )


@dataclass
class FhirSender:
    """Conditional create of DocumentReferences: the server holds one per identifier."""

    target: Target
    settings: Settings
    on_retry: Callable[[RetryEvent], None] | None = None
    allow_unlinked: bool = False  # file a note without a subject on purpose
    dedupes: bool = True
    format_name: str = "fhir"
    client: FhirClient = field(init=False)

    def __post_init__(self) -> None:
        self.client = FhirClient(
            self.settings.service,
            base_url=self.target.base_url,
            token=self.settings.delivery.fhir_token,
            on_retry=self.on_retry,
        )

    async def send(self, outgoing: Outgoing) -> Sent:
        """Create (or find) the version's DocumentReference; raises the service/errors.py
        tree (RequestRejected for 412 and refused bodies) and DocumentInvalid."""
        note, body = fhir_body(
            outgoing,
            note_code=self.settings.delivery.note_loinc_code,
            allow_unlinked=self.allow_unlinked,
        )
        condition = version_search_token(note.document_id)
        receipt = await self.client.create(body, if_none_exist=condition)
        if receipt.unconfirmed:
            # Accepted, so probably filed, but under an id we cannot know: a person looks.
            raise DeliveryInDoubt(
                f"the FHIR server answered HTTP {receipt.status} but {receipt.unconfirmed}; "
                "the document may be filed under an id medasr cannot know"
            )
        fields = {
            "status": receipt.status,
            "id": receipt.resource_id,
            "location": receipt.location,
            "remote_id": receipt.reference,
            "target": self.target.name,
        }
        return Sent(
            fields=fields,
            remote_id=receipt.reference,
            attempts=receipt.attempts,
            request_bytes=receipt.request_bytes,
        )

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self.client.aclose()
