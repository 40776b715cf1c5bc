"""A reviewer's decisions from the page: save draft, finalize, accept, send back.

Each is tasks/review's plain function and its audit event in one unit of work, then a
redirect to the recording (POST, redirect, GET). A stale save answers 409 with the
page as it is now and the reviewer's own text shown beside it, never saved over.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from audit import AuditAction, record_event
from config.errors import MedasrError
from storage.errors import StaleRevision
from storage.records import WebSessionRecord
from storage.review_interface import ReviewUnitOfWork
from tasks.review import decisions, language_change
from web.context import in_unit_of_work
from web.pages import read_item, render_item

_TEXT_MAX_CHARS = 2_000_000


async def save_draft(request: Request, session: WebSessionRecord) -> Response:
    """POST /items/ID/draft."""
    return await _edit(request, session, final=False)


async def finalize(request: Request, session: WebSessionRecord) -> Response:
    """POST /items/ID/finalize."""
    return await _edit(request, session, final=True)


async def accept(request: Request, session: WebSessionRecord) -> Response:
    """POST /items/ID/accept."""
    author = session.reviewer.name

    def work(uow: ReviewUnitOfWork, item_id: int) -> None:
        decisions.accept_as_is(uow, item_id=item_id, author=author)
        record_event(uow, action=AuditAction.ACCEPTED, actor=author, item_id=item_id)

    return await _decide(request, session, work, notice="accepted")


async def send_back(request: Request, session: WebSessionRecord) -> Response:
    """POST /items/ID/send-back."""
    author = session.reviewer.name

    def work(uow: ReviewUnitOfWork, item_id: int) -> None:
        decisions.send_back(uow, item_id=item_id)
        record_event(uow, action=AuditAction.SENT_BACK, actor=author, item_id=item_id)

    return await _decide(request, session, work, notice="sent-back")


async def change_language(request: Request, session: WebSessionRecord) -> Response:
    """POST /items/ID/language: the recording again, in another language (a new item)."""
    form = await request.form()
    language = str(form.get("language") or "").strip()[:64]
    author = session.reviewer.name

    def work(uow: ReviewUnitOfWork, item_id: int) -> None:
        language_change.change_language(uow, item_id=item_id, language=language, author=author)

    return await _decide(request, session, work, notice="language")


async def _edit(request: Request, session: WebSessionRecord, *, final: bool) -> Response:
    form = await request.form()
    text = str(form.get("text") or "").replace("\r\n", "\n")[:_TEXT_MAX_CHARS]
    try:
        base = int(str(form.get("base_revision") or "0"))
    except ValueError:
        base = -1
    author = session.reviewer.name

    def work(uow: ReviewUnitOfWork, item_id: int) -> None:
        if final:
            revision, _ = decisions.finalize(
                uow, item_id=item_id, text=text, author=author, base_revision=base
            )
        else:
            revision = decisions.save_draft(
                uow, item_id=item_id, text=text, author=author, base_revision=base
            )
        detail: dict[str, str | int] = {
            "revision": revision.number, "base_revision": base, "kind": revision.kind
        }  # fmt: skip
        record_event(uow, action=AuditAction.REVISION_SAVED, actor=author, item_id=item_id,
                     detail=detail)  # fmt: skip
        if final:
            record_event(uow, action=AuditAction.FINALIZED, actor=author, item_id=item_id,
                         detail={"revision": revision.number})  # fmt: skip

    return await _decide(
        request, session, work, notice="finalized" if final else "draft", unsaved=text
    )


async def _decide(
    request: Request,
    session: WebSessionRecord,
    work: Callable[[ReviewUnitOfWork, int], Any],
    *,
    notice: str,
    unsaved: str | None = None,
) -> Response:
    item_id = int(request.path_params["item_id"])
    try:
        await in_unit_of_work(request, lambda uow: work(uow, item_id))
    except MedasrError as exc:
        status = 409 if isinstance(exc, StaleRevision) else 400
        view = await in_unit_of_work(
            request, lambda uow: read_item(uow, item_id=item_id, viewer=None), read_only=True
        )
        if view is None:
            return Response(f"there is no recording {item_id}", status_code=404)
        kept = unsaved if isinstance(exc, StaleRevision) else None
        return render_item(
            request, session, view, notice=str(exc), unsaved=kept, status_code=status
        )
    return RedirectResponse(f"/items/{item_id}?notice={notice}", status_code=303)
