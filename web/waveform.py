"""GET /items/ID/peaks: the recording's waveform (peaks) and the pauses marking the
sub-segments of chunks longer than MEDASR_REVIEW__SEGMENT_MAX_S, as JSON.

Peaks are derived from the patient's audio, so they are served like the audio itself:
only with a session, never cached by the browser (web/security.py), only while the file
is still the recording that was transcribed (else the `audio_changed` page, 409), and
each answer is an `audio_served` event naming the whole recording (`detail.waveform`).
"""

from __future__ import annotations

from contextlib import AsyncExitStack

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from audit import AuditAction, record_event
from storage.records import ItemRecord, WebSessionRecord
from storage.review_interface import ReviewUnitOfWork
from tasks.audio.ffmpeg import find_ffmpeg, input_arg
from tasks.discovery.recording_names import recording_name
from tasks.review.peaks import BUCKET_MS, sub_segment_marks
from tasks.review.recording_check import AudioCheck
from web.audio_stream import changed_answer, readable_path
from web.context import in_unit_of_work, workstation


async def peaks(request: Request, session: WebSessionRecord) -> Response:
    """The peaks (0..255 per BUCKET_MS) and the sub-segment marks of one recording."""
    item_id = int(request.path_params["item_id"])
    item, chunks = await in_unit_of_work(
        request, lambda uow: _item_and_chunks(uow, item_id), read_only=True
    )
    if item is None:
        return PlainTextResponse(f"there is no recording {item_id}", status_code=404)
    roots = await in_unit_of_work(request, lambda uow: uow.runs.run_sources(), read_only=True)
    async with AsyncExitStack() as copies:
        path = await readable_path(item, roots=roots, copies=copies, request=request)
        if isinstance(path, AudioCheck):
            return await changed_answer(request, session, item=item, found=path)
        if isinstance(path, Response):
            return path
        found = workstation(request)
        key = (item.id, item.sha256 or path.as_posix())
        waveform = await run_in_threadpool(
            lambda: found.peaks.peaks_of(key, ffmpeg=find_ffmpeg(), source=input_arg(path))
        )
    max_ms = round(found.segment_max_s * 1000)
    marks = sub_segment_marks(waveform, chunks=chunks, max_ms=max_ms)
    await in_unit_of_work(
        request,
        lambda uow: _record_peaks_served(
            uow, item=item, reviewer=session.reviewer.name, duration_ms=waveform.duration_ms
        ),
    )
    return JSONResponse({
        "bucket_ms": BUCKET_MS,
        "duration_ms": waveform.duration_ms,
        "segment_max_ms": max_ms,
        "peaks": waveform.values.tolist(),
        "marks": [{"segment": m.segment, "at_ms": m.at_ms} for m in marks],
    })  # fmt: skip


def _item_and_chunks(
    uow: ReviewUnitOfWork, item_id: int
) -> tuple[ItemRecord | None, list[tuple[int, int, int]]]:
    """The recording and its transcribed chunks (index, start_ms, end_ms), in order."""
    chunks = uow.chunks.done_chunks(item_id).values()
    return uow.item_queries.get_item(item_id), [
        (c.index, c.start_ms, c.end_ms) for c in sorted(chunks, key=lambda c: c.index)
    ]


def _record_peaks_served(
    uow: ReviewUnitOfWork, *, item: ItemRecord, reviewer: str, duration_ms: int
) -> None:
    """The whole recording's loudness was read for a reviewer: an `audio_served` event."""
    name = recording_name(item.source_uri, roots=uow.runs.run_sources())
    detail: dict[str, str | int] = {"start_ms": 0, "end_ms": duration_ms, "waveform": "peaks"}
    record_event(uow, action=AuditAction.AUDIO_SERVED, actor=reviewer,
                 item_id=item.id, path=name, detail=detail)  # fmt: skip
