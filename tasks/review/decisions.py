"""A reviewer's decisions on one recording, each inside the caller's unit of work.

save_draft: the edit is kept as a revision, the recording stays where it is.
finalize: the edit becomes the transcript's current version, signed off (status done);
delivery files it next, as a replacement where an earlier version was filed.
accept_as_is: a held transcript becomes done unchanged. send_back: a held one is
transcribed again from scratch (`medasr review --resend`). Every decision names the
revision it was made on: one based on a version someone else has saved over since
raises StaleRevision and changes nothing. Sending back over a draft sets the draft
aside (a new transcript starts a new history), so it raises DraftInTheWay unless the
reviewer confirmed that very draft (`over_draft`).
"""

from __future__ import annotations

from storage.errors import DraftInTheWay
from storage.records import ItemRecord, RevisionRecord
from storage.review_interface import ReviewUnitOfWork

DRAFT = "draft"
FINAL = "final"


def save_draft(
    uow: ReviewUnitOfWork, *, item_id: int, text: str, author: str, base_revision: int
) -> RevisionRecord:
    """Keep an edit; raises StaleRevision or NotEditable."""
    return uow.revisions.add_revision(
        item_id, text=text, author=author, base_revision=base_revision, kind=DRAFT
    )


def finalize(
    uow: ReviewUnitOfWork, *, item_id: int, text: str, author: str, base_revision: int
) -> tuple[RevisionRecord, ItemRecord]:
    """Make an edit the current version, signed off by `author`; raises as save_draft."""
    revision = uow.revisions.add_revision(
        item_id, text=text, author=author, base_revision=base_revision, kind=FINAL
    )
    return revision, uow.revisions.sign_off(revision)


def accept_as_is(
    uow: ReviewUnitOfWork, *, item_id: int, author: str, base_revision: int
) -> ItemRecord:
    """needs_review -> done with the machine's text; raises StaleRevision, NotUnderReview."""
    uow.revisions.require_latest(item_id, base_revision=base_revision)
    return uow.reviews.accept_review(item_id, by=author)


def send_back(
    uow: ReviewUnitOfWork, *, item_id: int, base_revision: int, over_draft: int | None = None
) -> ItemRecord:
    """needs_review -> pending, to be transcribed again; raises StaleRevision,
    DraftInTheWay (a draft not confirmed by `over_draft`) or NotUnderReview."""
    latest = uow.revisions.require_latest(item_id, base_revision=base_revision)
    if latest is not None and latest.kind == DRAFT and over_draft != latest.number:
        raise DraftInTheWay(
            latest.number,
            f"{latest.author} saved a draft (revision {latest.number}) of this recording: "
            "sending it back transcribes it again and sets the draft aside; its text is "
            "shown below. Send back again to confirm.",
        )
    return uow.reviews.resend_review(item_id)
