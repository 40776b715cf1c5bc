"""Revisions of transcripts (`uow.revisions`): a reviewer's drafts and finalized versions.

The machine's text is never overwritten: each save is a new numbered row naming the
revision it was based on (0: the machine's text). A save whose base is no longer the
latest revision is refused (StaleRevision), so two reviewers never overwrite each
other silently. Finalizing puts the revision's text in `items.text` (what export and
delivery read), keeps the machine's text in `items.machine_text`, and signs it off.
A revision belongs to the machine text it edited (`machine_sha256`): a recording
transcribed again starts a new history.
"""

from __future__ import annotations

import hashlib

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from storage import clock
from storage.errors import NotEditable, StaleRevision
from storage.models import Item, Revision
from storage.queries import items_where
from storage.records import ItemRecord, RevisionRecord

_EDITABLE = ("done", "needs_review")


def machine_sha256(item: ItemRecord) -> str:
    """Names the machine text (of this content) that a history of revisions edits."""
    named = f"{item.sha256 or ''}\n{item.machine_transcript}"
    return hashlib.sha256(named.encode("utf-8")).hexdigest()


class Revisions:
    """Edits of one transcript, numbered per item."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def list_revisions(self, item: ItemRecord) -> list[RevisionRecord]:
        """The revisions of the item's current machine text, oldest first."""
        rows = self._session.scalars(
            select(Revision)
            .where(Revision.item_id == item.id, Revision.machine_sha256 == machine_sha256(item))
            .order_by(Revision.number)
        )
        return [_revision_record(row) for row in rows]

    def latest_revision(self, item: ItemRecord) -> RevisionRecord | None:
        """The newest revision of the item's current machine text, if any."""
        row = self._session.scalar(
            select(Revision)
            .where(Revision.item_id == item.id, Revision.machine_sha256 == machine_sha256(item))
            .order_by(Revision.number.desc())
            .limit(1)
        )
        return None if row is None else _revision_record(row)

    def add_revision(
        self, item_id: int, *, text: str, author: str, base_revision: int, kind: str
    ) -> RevisionRecord:
        """Save an edit made on `base_revision`; raises StaleRevision when someone saved
        since, NotEditable when the recording has no transcript."""
        item = self._editable(item_id)
        _refuse_stale(self.latest_revision(item), base_revision=base_revision)
        highest = self._session.scalar(
            select(func.max(Revision.number)).where(Revision.item_id == item_id)
        )
        row = Revision(
            item_id=item_id,
            number=(highest or 0) + 1,
            text=text,
            author=author,
            created_at=clock.store_now(self._session),
            base_revision=base_revision,
            kind=kind,
            machine_sha256=machine_sha256(item),
        )
        self._session.add(row)
        try:
            self._session.flush()
        except IntegrityError as exc:
            raise StaleRevision("another reviewer saved this recording at the same moment") from exc
        return _revision_record(row)

    def require_latest(self, item_id: int, *, base_revision: int) -> RevisionRecord | None:
        """The latest revision (the item locked) when `base_revision` is it; raises
        StaleRevision when someone saved since. An unknown item passes: the decision
        that follows names it."""
        self._session.execute(select(Item.id).where(Item.id == item_id).with_for_update())
        found = items_where(self._session, Item.id == item_id)
        if not found:
            return None
        latest = self.latest_revision(found[0])
        _refuse_stale(latest, base_revision=base_revision)
        return latest

    def sign_off(self, revision: RevisionRecord) -> ItemRecord:
        """Make a final revision the transcript's current version: `text` becomes its text,
        the machine's text is kept, status done, flags cleared, the sign-off in extras."""
        item = self._editable(revision.item_id)
        review = {
            "by": revision.author,
            "at": revision.created_at.isoformat(),
            "revision": revision.number,
            "flags": item.flags,
        }
        self._session.execute(
            update(Item)
            .where(Item.id == item.id)
            .values(
                machine_text=item.machine_transcript,
                text=revision.text,
                status="done",
                flags=None,
                extras={**item.extras, "review": review},
                done_at=revision.created_at,  # the retention clock: this version's finish
                updated_at=revision.created_at,
            )
            .execution_options(synchronize_session=False)
        )
        found = items_where(self._session, Item.id == item.id)
        return found[0]

    def _editable(self, item_id: int) -> ItemRecord:
        self._session.execute(select(Item.id).where(Item.id == item_id).with_for_update())
        found = items_where(self._session, Item.id == item_id)
        if not found:
            raise NotEditable(f"there is no recording {item_id}")
        item = found[0]
        if item.status not in _EDITABLE:
            raise NotEditable(
                f"recording {item_id} is {item.status}: it has no transcript to correct"
            )
        return item


def _refuse_stale(latest: RevisionRecord | None, *, base_revision: int) -> None:
    latest_number = 0 if latest is None else latest.number
    if base_revision != latest_number:
        by = f" by {latest.author}" if latest is not None else ""
        raise StaleRevision(
            f"revision {latest_number}{by} was saved after the version you edited "
            f"(revision {base_revision}); reload the recording and make your change again"
        )


def _revision_record(row: Revision) -> RevisionRecord:
    return RevisionRecord(
        item_id=row.item_id,
        number=row.number,
        author=row.author,
        created_at=row.created_at,
        base_revision=row.base_revision,
        kind=row.kind,
        text=row.text,
    )
