"""What one claimed delivery row sends, and the identifiers it goes out under.

The row's version, when it is still the item's; otherwise a version that went out
unanswered is sent again with the words it went out with, under its own identifiers,
so that what the receiver may hold is settled before a newer version replaces it. A
version that never went out is set aside (superseded). The replaced version is the
newest delivered one of the same note to the same target at the moment of sending.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from storage.records import DeliveryRecord, SentIdentity
from storage.versions import item_version
from tasks.delivery.documents import note_of
from tasks.delivery.errors import DeliveryInDoubt
from tasks.delivery.identity import NoteKey, document_id_for, message_control_id
from tasks.delivery.targets import Outgoing, TargetKind
from tasks.discovery.recording_names import recording_name

_WORDS_GONE = "the words it went out with are not kept (sent before this medasr kept them)"


@dataclass(frozen=True)
class Prepared:
    """What one claimed row sends (None: nothing, `outcome` says why) and as what."""

    outgoing: Outgoing | None
    name: str  # the recording, by its path inside its source
    sent: SentIdentity | None
    outcome: str  # when nothing is sent: superseded, in_doubt or failed


@dataclass(frozen=True)
class Sending:
    """The run's fixed parts a row's identifiers come from."""

    kind: TargetKind
    store_id: str
    roots: tuple[str, ...]
    person_resends: bool  # `--resend-in-doubt`: a person checked the record


def prepare_outgoing(uow: Any, row: DeliveryRecord, *, sending: Sending) -> Prepared:
    """What `row` sends; settles it (superseded, in doubt, failed) when it sends nothing."""
    item = uow.item_queries.get_item(row.item_id)
    name = recording_name(item.source_uri, roots=sending.roots) if item else f"delivery {row.id}"
    current = item is not None and item.status == "done" and item_version(item) == row.version
    if not current and row.control_id is None:  # never went out: set it aside
        uow.delivery_claims.record_delivery_superseded(row.id, lease_token=row.lease_token)
        return Prepared(None, name, None, "superseded")
    if item is None or (not current and row.sent_text is None):
        return _unsendable(uow, row, name, person_resends=sending.person_resends)
    key = NoteKey(sending.store_id, item.id, item.language, row.version, row.filing)
    replaced = uow.deliveries.latest_delivered_before(row.id)
    note = note_of(
        item,
        key=key,
        document_id=row.document_id or document_id_for(sending.kind, key),
        replaces_document_id=_document_id(sending.kind, key, replaced),
        text=None if current else row.sent_text,
    )
    control_id = row.control_id or message_control_id(
        store_id=key.store_id, delivery_id=row.id, series=row.series
    )
    outgoing = Outgoing(
        delivery_id=row.id,
        item=item,
        note=note,
        replaced_remote_id=replaced.remote_id if replaced else None,
        control_id=control_id,
    )
    sent = SentIdentity(
        control_id=control_id,
        document_id=note.document_id,
        replaces_id=replaced.id if replaced else None,
        sent_text=note.text,
    )
    return Prepared(outgoing, name, sent, "")


def _unsendable(uow: Any, row: DeliveryRecord, name: str, *, person_resends: bool) -> Prepared:
    """A version that went out unanswered and cannot go again: a person decides. Once
    one has checked the record (`--resend-in-doubt`), the current version goes instead."""
    if person_resends:
        uow.delivery_claims.record_delivery_failed(
            row.id,
            lease_token=row.lease_token,
            error_kind=DeliveryInDoubt.kind,
            message=f"resent by a person after checking the record, but {_WORDS_GONE}; "
            "the current version goes in its place",
            retryable=False,
        )
        return Prepared(None, name, None, "failed")
    uow.delivery_claims.record_delivery_in_doubt(
        row.id,
        lease_token=row.lease_token,
        error_kind=DeliveryInDoubt.kind,
        message=f"went out unanswered and {_WORDS_GONE}: check the record, then "
        "`medasr deliver --resend-in-doubt`",
    )
    return Prepared(None, name, None, "in_doubt")


def _document_id(kind: TargetKind, key: NoteKey, replaced: DeliveryRecord | None) -> str | None:
    """What the target knows the replaced version by (as it went out)."""
    if replaced is None:
        return None
    earlier = replace(key, version=replaced.version, filing=replaced.filing)
    return replaced.document_id or document_id_for(kind, earlier)
