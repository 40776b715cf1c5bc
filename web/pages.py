"""The pages a reviewer reads: the queue, the search, one recording.

Each view of a recording is an audit event; no page shows a transcript without a
session, and none is cached (web/security.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from audit import AuditAction, record_event
from storage.records import ItemRecord, RevisionRecord, WebSessionRecord
from storage.review_interface import ReviewUnitOfWork
from tasks.discovery.recording_names import recording_name
from web.context import in_unit_of_work, render, workstation
from web.limits import TEXT_MAX_CHARS
from web.next_item import LastItem, filters_of, read_last_item
from web.views import (
    PAGE_SIZE,
    SegmentRow,
    cursor_of,
    parse_cursor,
    queue_rows,
    segment_rows,
    word_diff,
)

_SEARCH_MAX_CHARS = 200


async def queue_page(request: Request, session: WebSessionRecord) -> Response:
    """GET /: what waits for a person, oldest first, PAGE_SIZE a page."""
    filters = filters_of(request.query_params)
    after = parse_cursor(request.query_params.get("after"))
    done = request.query_params.get("done")

    def read(uow: ReviewUnitOfWork) -> dict[str, Any]:
        page = uow.reviews.queue_page(
            language=filters.language or None, flag=filters.flag or None, after=after,
            limit=PAGE_SIZE + 1,
        )  # fmt: skip
        roots = uow.runs.run_sources()
        return {
            "rows": queue_rows(page[:PAGE_SIZE], roots=roots, now=uow.reviewers.now()),
            "next": cursor_of(page[PAGE_SIZE - 1]) if len(page) > PAGE_SIZE else None,
            "queue": uow.reviews.queue_size(),
            "choices": uow.reviews.queue_choices(),
            "last_item": read_last_item(uow, done, session=session),
        }

    found = await in_unit_of_work(request, read, read_only=True)
    context = {
        **found, "language": filters.language, "flag": filters.flag, "session": session,
        "item_query": filters.query(), "notice": _notice(request.query_params.get("notice")),
        "after_last": "Nothing else waits in this queue.",
    }  # fmt: skip
    return render(request, "queue.html", context)


async def search_page(request: Request, session: WebSessionRecord) -> Response:
    """GET /items?search=: recordings with a transcript whose path holds the words; a
    search that ran is a `recordings_searched` event (the query and the count)."""
    term = (request.query_params.get("search") or "").strip()[:_SEARCH_MAX_CHARS]
    viewer = session.reviewer.name

    def read(uow: ReviewUnitOfWork) -> dict[str, Any]:
        items = uow.reviews.search_items(term, limit=PAGE_SIZE) if term else []
        if term:
            record_event(uow, action=AuditAction.RECORDINGS_SEARCHED, actor=viewer,
                         detail={"query": term, "count": len(items)})  # fmt: skip
        roots = uow.runs.run_sources()
        return {"rows": queue_rows(items, roots=roots, now=uow.reviewers.now())}

    found = await in_unit_of_work(request, read)
    return render(request, "search.html", {**found, "search": term, "session": session})


@dataclass(frozen=True)
class ItemView:
    """One recording as its page shows it."""

    item: ItemRecord
    name: str
    segments: list[SegmentRow]
    latest: RevisionRecord | None
    machine_text: str
    editor_text: str
    base_revision: int
    editors: list[str]
    last_item: LastItem | None = None


async def item_page(request: Request, session: WebSessionRecord) -> Response:
    """GET /items/ID: segments, players, the editor beside the machine's text, a diff."""
    item_id = int(request.path_params["item_id"])
    done = request.query_params.get("done")
    view = await in_unit_of_work(
        request,
        lambda uow: read_item(
            uow, item_id=item_id, viewer=session.reviewer.name, done=done, session=session
        ),
    )
    if view is None:
        return PlainTextResponse(f"there is no recording {item_id}", status_code=404)
    return render_item(request, session, view)


def read_item(
    uow: ReviewUnitOfWork,
    *,
    item_id: int,
    viewer: str | None,
    done: str | None = None,
    session: WebSessionRecord | None = None,
) -> ItemView | None:
    """The recording's view (and, for a `viewer`, the transcript_viewed event); `done`:
    the recording decided just before, named on the page."""
    item = uow.item_queries.get_item(item_id)
    if item is None:
        return None
    name = recording_name(item.source_uri, roots=uow.runs.run_sources())
    latest = uow.revisions.latest_revision(item)
    editors = sorted({r.author for r in uow.revisions.list_revisions(item)})
    if viewer is not None:
        record_event(uow, action=AuditAction.TRANSCRIPT_VIEWED, actor=viewer, item_id=item.id,
                     path=name)  # fmt: skip
    return ItemView(
        item=item,
        name=name,
        segments=segment_rows(list(uow.chunks.done_chunks(item.id).values())),
        latest=latest,
        machine_text=item.machine_transcript,
        editor_text=latest.text if latest is not None else (item.text or ""),
        base_revision=latest.number if latest is not None else 0,
        editors=editors,
        last_item=read_last_item(uow, done, session=session) if session else None,
    )


def render_item(
    request: Request,
    session: WebSessionRecord,
    view: ItemView,
    *,
    notice: str = "",
    unsaved: str | None = None,
    status_code: int = 200,
    over_draft: int | None = None,
) -> Response:
    """The recording's page, with a notice (and the reviewer's unsaved text) if any;
    `over_draft`: the draft a repeated Send back confirms setting aside."""
    filters = filters_of(request.query_params)
    max_ms = round(workstation(request).segment_max_s * 1000)
    context = {
        "waveform": any(s.end_ms - s.start_ms > max_ms for s in view.segments),
        "over_draft": over_draft,
        "text_max_chars": TEXT_MAX_CHARS,
        "view": view,
        "session": session,
        "diff": word_diff(view.machine_text, view.editor_text),
        "notice": notice or _notice(request.query_params.get("notice")),
        "unsaved": unsaved,
        "item_query": filters.query(),
        "decision_query": f"?{filters.query()}" if filters.query() else "",
        "last_item": view.last_item,
        "after_last": "Next in this queue: this recording.",
    }
    return render(request, "item.html", context, status_code=status_code)


_NOTICES = {
    "draft": "Draft saved; the recording stays in the queue.",
    "finalized": "Finalized: your text is the transcript now, signed off by you.",
    "accepted": "Accepted as it is.",
    "sent-back": "Sent back: the next run transcribes it again.",
    "language": "Language changed: a new item in that language waits for the next run; "
    "this one is kept as it is.",
}


def _notice(key: str | None) -> str:
    return _NOTICES.get(key or "", "")
