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
The command line names no revision (None): it shows no page a colleague could have saved
over, and acts on the recording as the store holds it.
Finalizing and accepting keep the note's word figures in the same unit of work
(tasks/review/measured_notes.py): the measure is taken where the decision is made.
"""

from __future__ import annotations

from storage.errors import DraftInTheWay
from storage.records import ItemRecord, RevisionRecord
from storage.review_interface import ReviewUnitOfWork
from tasks.review.measured_notes import record_accepted, record_finalized

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
    item = uow.revisions.sign_off(revision)
    record_finalized(uow.accuracy, item, revision=revision.number, reviewer=author)
    return revision, item


def accept_as_is(
    uow: ReviewUnitOfWork, *, item_id: int, author: str, base_revision: int | None
) -> ItemRecord:
    """needs_review -> done with the machine's text; raises StaleRevision, NotUnderReview."""
    if base_revision is not None:
        uow.revisions.require_latest(item_id, base_revision=base_revision)
    item = uow.reviews.accept_review(item_id, by=author)
    record_accepted(uow.accuracy, item, reviewer=author)
    return item


def send_back(
    uow: ReviewUnitOfWork,
    *,
    item_id: int,
    base_revision: int | None,
    over_draft: int | None = None,
) -> ItemRecord:
    """needs_review -> pending, to be transcribed again; raises StaleRevision,
    DraftInTheWay (a draft not confirmed by `over_draft`) or NotUnderReview."""
    if base_revision is None:
        return uow.reviews.resend_review(item_id)
    latest = uow.revisions.require_latest(item_id, base_revision=base_revision)
    if latest is not None and latest.kind == DRAFT and over_draft != latest.number:
        raise DraftInTheWay(
            latest.number,
            f"{latest.author} saved a draft (revision {latest.number}) of this recording: "
            "sending it back transcribes it again and sets the draft aside; its text is "
            "shown below. Send back again to confirm.",
        )
    return uow.reviews.resend_review(item_id)


def waiting_reason(item: ItemRecord) -> str:
    """Why a held recording waits: the gate's flags, the routing's reason, or `all`."""
    if item.flags:
        return "flag: " + ", ".join(item.flags)
    return str(item.extras.get("review_reason") or "all")
