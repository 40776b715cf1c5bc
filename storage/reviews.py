"""Items the quality gate flagged (needs_review): list them, accept one, or send it again.

A person decides; nothing here runs inside a transcription. Accepting keeps the
transcript and moves the item to done (the flags it had are kept in its extras under
"review"); sending again forgets the transcript and every chunk, so the next run
transcribes the recording from scratch.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import String, cast, delete, func, select, update
from sqlalchemy.orm import Session

from storage import clock
from storage.errors import NotUnderReview
from storage.models import ChunkRow, Item
from storage.queries import items_where
from storage.records import ItemRecord, QueueChoices, QueueSize

_WITH_TEXT = ("done", "needs_review")


class Reviews:
    """needs_review items: list, accept, re-queue (`uow.reviews`)."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def list_needs_review(self, *, language: str | None = None, limit: int = 0) -> list[ItemRecord]:
        """Items waiting for review (of `language`), oldest first; `limit` 0 means all."""
        condition = Item.status == "needs_review"
        if language is not None:
            condition = condition & (Item.language == language)
        return items_where(
            self._session, condition, order_by=(Item.updated_at, Item.id), limit=limit
        )

    def queue_page(
        self,
        *,
        language: str | None = None,
        flag: str | None = None,
        after: tuple[datetime, int] | None = None,
        limit: int = 50,
    ) -> list[ItemRecord]:
        """A page of the review queue, oldest first, after the (updated_at, id) `after`."""
        condition = Item.status == "needs_review"
        if language is not None:
            condition = condition & (Item.language == language)
        if flag is not None:
            condition = condition & cast(Item.flags, String).contains(f'"{flag}"', autoescape=True)
        if after is not None:
            at, item_id = after
            condition = condition & (
                (Item.updated_at > at) | ((Item.updated_at == at) & (Item.id > item_id))
            )
        return items_where(
            self._session, condition, order_by=(Item.updated_at, Item.id), limit=limit
        )

    def queue_size(self, *, language: str | None = None) -> QueueSize:
        """How many recordings wait for review (of `language`) and since when the oldest
        has waited."""
        waiting = Item.status == "needs_review"
        if language is not None:
            waiting = waiting & (Item.language == language)
        count = self._session.scalar(select(func.count()).select_from(Item).where(waiting))
        oldest = self._session.scalar(
            select(Item.updated_at).where(waiting).order_by(Item.updated_at).limit(1)
        )
        return QueueSize(waiting=int(count or 0), oldest=oldest)

    def queue_choices(self) -> QueueChoices:
        """The languages and flags of the recordings waiting for review, sorted."""
        # No DISTINCT: PostgreSQL's json type has no equality to compare flags with.
        rows = self._session.execute(
            select(Item.language, Item.flags).where(Item.status == "needs_review")
        ).all()
        languages = {language for language, _ in rows}
        flags = {flag for _, found in rows for flag in (found or []) if isinstance(flag, str)}
        return QueueChoices(languages=sorted(languages), flags=sorted(flags))

    def corrected_count(self) -> int:
        """How many recordings carry a reviewer's version instead of the machine's."""
        found = self._session.scalar(
            select(func.count()).select_from(Item).where(Item.machine_text.is_not(None))
        )
        return int(found or 0)

    def search_items(self, term: str, *, limit: int = 50) -> list[ItemRecord]:
        """Recordings with a transcript whose source URI holds `term` (case as given)."""
        condition = Item.status.in_(_WITH_TEXT) & (func.instr(Item.source_uri, term) > 0)
        if self._session.get_bind().dialect.name == "postgresql":
            condition = Item.status.in_(_WITH_TEXT) & (func.strpos(Item.source_uri, term) > 0)
        return items_where(self._session, condition, order_by=(Item.source_uri,), limit=limit)

    def accept_review(self, item_id: int, *, by: str | None = None) -> ItemRecord:
        """needs_review -> done with its transcript; raises NotUnderReview otherwise."""
        item = self._under_review(item_id)
        now = clock.host_now()
        review = {"accepted_at": now.isoformat(), "flags": item.flags}
        if by is not None:
            review |= {"by": by, "at": now.isoformat()}
        extras = {**item.extras, "review": review}
        self._session.execute(
            update(Item)
            .where(Item.id == item_id, Item.status == "needs_review")
            .values(status="done", flags=None, extras=extras, updated_at=now)
            .execution_options(synchronize_session=False)
        )
        return self._reread(item_id)

    def resend_review(self, item_id: int) -> ItemRecord:
        """needs_review -> pending, transcript and chunks forgotten; raises NotUnderReview."""
        self._under_review(item_id)
        self._session.execute(delete(ChunkRow).where(ChunkRow.item_id == item_id))
        self._session.execute(
            update(Item)
            .where(Item.id == item_id, Item.status == "needs_review")
            .values(
                status="pending",
                text=None,
                machine_text=None,
                flags=None,
                extras=None,
                chunk_count=None,
                done_at=None,
                next_attempt_at=None,
                updated_at=clock.host_now(),
            )
            .execution_options(synchronize_session=False)
        )
        return self._reread(item_id)

    def _under_review(self, item_id: int) -> ItemRecord:
        """The item, locked, if it waits for review; raises NotUnderReview otherwise."""
        self._session.execute(select(Item.id).where(Item.id == item_id).with_for_update())
        item = self._get(item_id)
        if item is None:
            raise NotUnderReview(f"there is no item {item_id} (see `medasr review` for the list)")
        if item.status != "needs_review":
            raise NotUnderReview(
                f"item {item_id} is {item.status}, not needs_review; nothing was changed"
            )
        return item

    def _get(self, item_id: int) -> ItemRecord | None:
        found = items_where(self._session, Item.id == item_id)
        return found[0] if found else None

    def _reread(self, item_id: int) -> ItemRecord:
        item = self._get(item_id)
        assert item is not None  # locked by _under_review in this transaction
        return item
