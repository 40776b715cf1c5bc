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
Each decision writes its own audit event (revision_saved, finalized, accepted, sent_back:
who, which recording by its name under its source, on which revision) in the same unit
of work, so every face (the command line, the workstation) gets it by calling these;
tests/test_decision_owners.py keeps the faces from deciding or auditing by themselves.
"""

from __future__ import annotations

from collections.abc import Mapping

from audit import AuditAction, record_event
from storage.errors import DraftInTheWay
from storage.records import ItemRecord, RevisionRecord
from storage.review_interface import ReviewUnitOfWork
from tasks.discovery.recording_names import recording_name
from tasks.review.measured_notes import record_accepted, record_finalized

DRAFT = "draft"
FINAL = "final"


def save_draft(
    uow: ReviewUnitOfWork, *, item_id: int, text: str, author: str, base_revision: int
) -> RevisionRecord:
    """Keep an edit (audited `revision_saved`); raises StaleRevision or NotEditable."""
    revision = uow.revisions.add_revision(
        item_id, text=text, author=author, base_revision=base_revision, kind=DRAFT
    )
    _record_revision(uow, revision, author=author, base_revision=base_revision)
    return revision


def finalize(
    uow: ReviewUnitOfWork, *, item_id: int, text: str, author: str, base_revision: int
) -> tuple[RevisionRecord, ItemRecord]:
    """Make an edit the current version, signed off by `author` (audited `revision_saved`
    and `finalized`); raises as save_draft."""
    revision = uow.revisions.add_revision(
        item_id, text=text, author=author, base_revision=base_revision, kind=FINAL
    )
    item = uow.revisions.sign_off(revision)
    record_finalized(uow.accuracy, item, revision=revision.number, reviewer=author)
    _record_revision(uow, revision, author=author, base_revision=base_revision)
    _record(
        uow, AuditAction.FINALIZED, item.id, author=author, detail={"revision": revision.number}
    )
    return revision, item


def accept_as_is(
    uow: ReviewUnitOfWork, *, item_id: int, author: str, base_revision: int | None
) -> ItemRecord:
    """needs_review -> done with the machine's text (audited `accepted`); raises
    StaleRevision, NotUnderReview."""
    if base_revision is not None:
        uow.revisions.require_latest(item_id, base_revision=base_revision)
    item = uow.reviews.accept_review(item_id, by=author)
    record_accepted(uow.accuracy, item, reviewer=author)
    _record(uow, AuditAction.ACCEPTED, item.id, author=author, detail=_based_on(base_revision))
    return item


def send_back(
    uow: ReviewUnitOfWork,
    *,
    item_id: int,
    author: str,
    base_revision: int | None,
    over_draft: int | None = None,
) -> ItemRecord:
    """needs_review -> pending, to be transcribed again (audited `sent_back`); raises
    StaleRevision, DraftInTheWay (a draft not confirmed by `over_draft`) or NotUnderReview."""
    if base_revision is not None:
        latest = uow.revisions.require_latest(item_id, base_revision=base_revision)
        if latest is not None and latest.kind == DRAFT and over_draft != latest.number:
            raise DraftInTheWay(
                latest.number,
                f"{latest.author} saved a draft (revision {latest.number}) of this recording: "
                "sending it back transcribes it again and sets the draft aside; its text is "
                "shown below. Send back again to confirm.",
            )
    item = uow.reviews.resend_review(item_id)
    detail = _based_on(base_revision)
    if detail is not None and over_draft is not None:
        detail["over_draft"] = over_draft
    _record(uow, AuditAction.SENT_BACK, item.id, author=author, detail=detail)
    return item


def _based_on(base_revision: int | None) -> dict[str, str | int] | None:
    """The page's revision a decision names (the command line names none)."""
    return None if base_revision is None else {"base_revision": base_revision}


def _record_revision(
    uow: ReviewUnitOfWork, revision: RevisionRecord, *, author: str, base_revision: int
) -> None:
    detail: dict[str, str | int] = {
        "revision": revision.number, "base_revision": base_revision, "kind": revision.kind
    }  # fmt: skip
    _record(uow, AuditAction.REVISION_SAVED, revision.item_id, author=author, detail=detail)


def _record(
    uow: ReviewUnitOfWork,
    action: AuditAction,
    item_id: int,
    *,
    author: str,
    detail: Mapping[str, str | int] | None,
) -> None:
    """The decision's event: who, which recording (by its name under its source), how."""
    item = uow.item_queries.get_item(item_id)
    path = recording_name(item.source_uri, roots=uow.runs.run_sources()) if item else None
    record_event(uow, action=action, actor=author, item_id=item_id, path=path, detail=detail)


def waiting_reason(item: ItemRecord) -> str:
    """Why a held recording waits: the gate's flags, the routing's reason, or `all`."""
    if item.flags:
        return "flag: " + ", ".join(item.flags)
    return str(item.extras.get("review_reason") or "all")
