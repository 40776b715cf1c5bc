"""Where a reviewer goes after a decision: the next item of the queue they came from.

The queue's filters (language, flag) travel with the reviewer: the queue's links carry
them, the recording's page posts its decision to a URL carrying them too (so a refused
decision's page keeps them), and the redirect after Finalize, Accept or Send back opens
the oldest item still waiting under the same filters, or the filtered queue when none is
left. The page it lands on names the recording just decided (`done`), with a link back.
A name is shown only to the session that made the decision (`done` carries a keyed hash
under the session's own secret), so `?done=N` cannot list recordings' names unaudited.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from storage.records import WebSessionRecord
from storage.review_interface import ReviewUnitOfWork
from tasks.discovery.recording_names import recording_name
from web.context import in_unit_of_work

# The decisions after which the recording leaves the reviewer's hands.
MOVING_ON = frozenset({"finalized", "accepted", "sent-back"})
_CODE = re.compile(r"[A-Za-z_-]{1,32}")
_ID_MAX_DIGITS = 18
_DIGEST_CHARS = 32


@dataclass(frozen=True)
class QueueFilters:
    """The queue's filters; empty strings for none."""

    language: str = ""
    flag: str = ""

    def query(self, **extra: str | int) -> str:
        """The URL query of these filters (and `extra`), without the '?'; '' for none."""
        pairs = {"language": self.language, "flag": self.flag, **extra}
        return urlencode({key: value for key, value in pairs.items() if value != ""})


@dataclass(frozen=True)
class LastItem:
    """The recording decided just before this page: its id and name."""

    id: int
    name: str


def code_of(value: object) -> str:
    """A language or flag code from a query or form; '' when missing or malformed."""
    return value if isinstance(value, str) and _CODE.fullmatch(value) else ""


def filters_of(values: Mapping[str, object]) -> QueueFilters:
    """The filters a query names (`language`, `flag`)."""
    return QueueFilters(language=code_of(values.get("language")), flag=code_of(values.get("flag")))


async def redirect_after(
    request: Request, *, item_id: int, notice: str, session: WebSessionRecord
) -> Response:
    """The redirect after a decision: the next item for Finalize, Accept and Send back,
    the same recording for the others (a draft, a language change)."""
    filters = filters_of(request.query_params)
    if notice not in MOVING_ON:
        return RedirectResponse(f"/items/{item_id}?{filters.query(notice=notice)}", 303)

    def oldest_other(uow: ReviewUnitOfWork) -> int | None:
        waiting = uow.reviews.queue_page(
            language=filters.language or None, flag=filters.flag or None, limit=2
        )
        return next((item.id for item in waiting if item.id != item_id), None)

    following = await in_unit_of_work(request, oldest_other, read_only=True)
    query = filters.query(notice=notice, done=done_token(session, item_id))
    target = f"/items/{following}?{query}" if following is not None else f"/?{query}"
    return RedirectResponse(target, status_code=303)


def done_token(session: WebSessionRecord, item_id: int) -> str:
    """`done`'s value: the item id and its keyed hash under this session's secret."""
    key = session.csrf_token.encode()
    digest = hmac.new(key, str(item_id).encode(), hashlib.sha256).hexdigest()
    return f"{item_id}.{digest[:_DIGEST_CHARS]}"


def read_last_item(
    uow: ReviewUnitOfWork, value: str | None, *, session: WebSessionRecord
) -> LastItem | None:
    """The recording a `done` value names, if this session made it and it exists (its
    name only, no text)."""
    item_id, _, _ = (value or "").partition(".")
    if not item_id.isdecimal() or len(item_id) > _ID_MAX_DIGITS:
        return None
    if not hmac.compare_digest(value or "", done_token(session, int(item_id))):
        return None
    item = uow.item_queries.get_item(int(item_id))
    if item is None:
        return None
    return LastItem(id=item.id, name=recording_name(item.source_uri, roots=uow.runs.run_sources()))
