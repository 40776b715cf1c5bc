"""What sends a document, and what its failure says about the receiver.

`DocumentSender` is the hook for delivery targets: the docs endpoint (service's
DocsClient) today, MLLP and FHIR REST later. A sender whose receiver deduplicates sets
`dedupes = True`, and deliveries in doubt are then re-sent to it without a person.
"""

from __future__ import annotations

from typing import Any, Protocol

from service.docs_client import DocsReceipt, Document


class DocumentSender(Protocol):
    """What sends one document to a receiver (the docs endpoint, later MLLP or FHIR).

    `dedupes`: the receiver refuses a copy of a document it already filed (FHIR
    conditional create on a stable identifier, MLLP with the same MSH-10), so a delivery
    in doubt may be re-sent without a person's word.
    """

    dedupes: bool

    async def upload(self, document: Document) -> DocsReceipt:
        """Send one document; raises the service/errors.py tree."""
        ...


def remote_id_of(fields: dict[str, Any]) -> str | None:
    """What the receiver named the document, if its answer says (at most 255 characters)."""
    for key in ("document_id", "id", "location"):
        value = fields.get(key)
        if isinstance(value, str | int):
            return str(value)[:255]
    return None
