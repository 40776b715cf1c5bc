"""A reviewer's decisions from the page: save draft, finalize, accept, send back.

Each is one call of tasks/review's plain function (which writes the decision's audit
event in the same unit of work), then a redirect to the recording (POST, redirect, GET).
Every decision posts the revision its page showed (`base_revision`); a stale one answers
409 with the page as it is now (who saved what since) and the reviewer's own text shown
beside it, never saved over. A refused decision's page shows the transcript, so it is an
audited view like any other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from config.errors import MedasrError
from storage.errors import DraftInTheWay, StaleRevision
from storage.records import WebSessionRecord
from storage.review_interface import ReviewUnitOfWork
from tasks.review import decisions, language_change
from web.context import in_unit_of_work
from web.limits import TEXT_MAX_CHARS
from web.next_item import redirect_after
from web.pages import read_item, render_item

_ANY_REVISION = -1  # a decision that does not depend on the page's revision
_NO_BASE = "this decision names no revision of the page it was made on; reload the recording"


async def save_draft(request: Request, session: WebSessionRecord) -> Response:
    """POST /items/ID/draft."""
    return await _edit(request, session, final=False)


async def finalize(request: Request, session: WebSessionRecord) -> Response:
    """POST /items/ID/finalize."""
    return await _edit(request, session, final=True)


async def accept(request: Request, session: WebSessionRecord) -> Response:
    """POST /items/ID/accept."""
    author = session.reviewer.name
    base = _revision_of((await request.form()).get("base_revision"))

    def work(uow: ReviewUnitOfWork, item_id: int, base: int) -> None:
        decisions.accept_as_is(uow, item_id=item_id, author=author, base_revision=base)

    return await _decide(request, session, work, notice="accepted", base=base)


async def send_back(request: Request, session: WebSessionRecord) -> Response:
    """POST /items/ID/send-back (`over_draft`: the draft the reviewer agreed to set aside)."""
    author = session.reviewer.name
    form = await request.form()
    base, over_draft = _revision_of(form.get("base_revision")), _revision_of(form.get("over_draft"))

    def work(uow: ReviewUnitOfWork, item_id: int, base: int) -> None:
        decisions.send_back(
            uow, item_id=item_id, author=author, base_revision=base, over_draft=over_draft
        )

    return await _decide(request, session, work, notice="sent-back", base=base)


async def change_language(request: Request, session: WebSessionRecord) -> Response:
    """POST /items/ID/language: the recording again, in another language (a new item)."""
    form = await request.form()
    language = str(form.get("language") or "").strip()[:64]
    author = session.reviewer.name

    def work(uow: ReviewUnitOfWork, item_id: int, _base: int) -> None:
        language_change.change_language(uow, item_id=item_id, language=language, author=author)

    # This recording and its revisions stay as they are (the new language is a new item),
    # so no colleague's save can make the change stale: it names no revision.
    return await _decide(request, session, work, notice="language", base=_ANY_REVISION)


async def _edit(request: Request, session: WebSessionRecord, *, final: bool) -> Response:
    form = await request.form()
    text = str(form.get("text") or "").replace("\r\n", "\n")
    base = _revision_of(form.get("base_revision"))
    if len(text) > TEXT_MAX_CHARS:
        item_id = int(request.path_params["item_id"])
        notice = (f"a transcript holds at most {TEXT_MAX_CHARS:,} characters; this one has "
                  f"{len(text):,}: nothing was saved")  # fmt: skip
        return await _refused(request, session, item_id, notice=notice, status_code=400)
    author = session.reviewer.name

    def work(uow: ReviewUnitOfWork, item_id: int, base: int) -> None:
        decide = decisions.finalize if final else decisions.save_draft
        decide(uow, item_id=item_id, text=text, author=author, base_revision=base)

    notice = "finalized" if final else "draft"
    return await _decide(request, session, work, notice=notice, unsaved=text, base=base)


async def _decide(
    request: Request,
    session: WebSessionRecord,
    work: Callable[[ReviewUnitOfWork, int, int], Any],
    *,
    notice: str,
    base: int | None,
    unsaved: str | None = None,
) -> Response:
    item_id = int(request.path_params["item_id"])
    if base is None:
        return await _refused(request, session, item_id, notice=_NO_BASE, status_code=400)
    try:
        await in_unit_of_work(request, lambda uow: work(uow, item_id, base))
    except MedasrError as exc:
        stale = isinstance(exc, StaleRevision)
        over = exc.number if isinstance(exc, DraftInTheWay) else None
        return await _refused(
            request, session, item_id, notice=str(exc), status_code=409 if stale else 400,
            unsaved=unsaved if stale else None, over_draft=over,
        )  # fmt: skip
    return await redirect_after(request, item_id=item_id, notice=notice, session=session)


async def _refused(
    request: Request,
    session: WebSessionRecord,
    item_id: int,
    *,
    notice: str,
    status_code: int,
    unsaved: str | None = None,
    over_draft: int | None = None,
) -> Response:
    """The recording's page as it is now, with why the decision was refused (a view)."""
    viewer = session.reviewer.name
    view = await in_unit_of_work(
        request, lambda uow: read_item(uow, item_id=item_id, viewer=viewer)
    )
    if view is None:
        return PlainTextResponse(f"there is no recording {item_id}", status_code=404)
    return render_item(
        request, session, view, notice=notice, unsaved=unsaved, status_code=status_code,
        over_draft=over_draft,
    )  # fmt: skip


def _revision_of(value: object) -> int | None:
    """A revision number from a form field; None when missing or not a number."""
    if not isinstance(value, str) or not value.isdecimal() or len(value) > 12:
        return None
    return int(value)
