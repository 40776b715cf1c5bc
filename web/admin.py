"""GET /admin: an admin adds accounts and unlocks them (a reviewer gets 403)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

from config.errors import MedasrError
from storage.records import WebSessionRecord
from storage.review_interface import ReviewUnitOfWork
from tasks.review import account_changes
from web.context import in_unit_of_work, render

_ADMIN_ONLY = "only an admin manages accounts"
# What `?done=` may say: the page's own sentences only (a link cannot put words on it).
_NOTICES = {"added": "Account added.", "unlocked": "Account unlocked."}


async def admin_page(request: Request, session: WebSessionRecord) -> Response:
    """Accounts, a form to add one, an unlock button per locked one."""
    if session.reviewer.role != "admin":
        return PlainTextResponse(_ADMIN_ONLY, status_code=403)
    done = request.query_params.get("done") or ""
    return await _render(request, session, notice=_NOTICES.get(done, ""))


async def add_account(request: Request, session: WebSessionRecord) -> Response:
    """POST /admin/reviewers: name, role, password."""
    if session.reviewer.role != "admin":
        return PlainTextResponse(_ADMIN_ONLY, status_code=403)
    form = await request.form()
    name, role = str(form.get("name") or ""), str(form.get("role") or "reviewer")
    password = str(form.get("password") or "")

    def work(uow: ReviewUnitOfWork) -> None:
        account_changes.add_account(
            uow, name=name, role=role, password=password, actor=session.reviewer.name
        )

    try:
        await in_unit_of_work(request, work)
    except MedasrError as exc:
        return await _render(request, session, notice=str(exc), status_code=400)
    return RedirectResponse("/admin?done=added", status_code=303)


async def unlock_account(request: Request, session: WebSessionRecord) -> Response:
    """POST /admin/unlock: name."""
    if session.reviewer.role != "admin":
        return PlainTextResponse(_ADMIN_ONLY, status_code=403)
    form = await request.form()
    name = str(form.get("name") or "")

    def work(uow: ReviewUnitOfWork) -> None:
        account_changes.unlock_account(uow, name=name, actor=session.reviewer.name)

    try:
        await in_unit_of_work(request, work)
    except MedasrError as exc:
        return await _render(request, session, notice=str(exc), status_code=400)
    return RedirectResponse("/admin?done=unlocked", status_code=303)


async def _render(
    request: Request, session: WebSessionRecord, *, notice: str, status_code: int = 200
) -> Response:
    def read(uow: ReviewUnitOfWork) -> dict[str, object]:
        return {"reviewers": uow.reviewers.list_reviewers(), "now": uow.reviewers.now()}

    found = await in_unit_of_work(request, read, read_only=True)
    context = {**found, "session": session, "notice": notice}
    return render(request, "admin.html", context, status_code=status_code)
