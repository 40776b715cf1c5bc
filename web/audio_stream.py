"""GET /items/ID/audio?start_ms=S&end_ms=E: a stretch of a recording as WAV, on demand.

The original file is decoded by ffmpeg from the stretch's offset (`-ss` before `-i`:
ffmpeg seeks in the file first, then decodes, so the first byte of minute 50 does not
wait for 50 minutes of decoding) to 16 kHz mono PCM, streamed straight to the browser:
no decoded audio is written anywhere. The length is known before decoding (44-byte
header + 2 bytes a sample), so HTTP Range requests are answered (206) by starting the
decode at the sample the range begins with; that is how the browser's player seeks.

A recording in a bucket (s3:// or another fsspec source) is fetched by the pipeline's own
machinery (tasks/discovery/fetch.py) into a 0700 folder of this process, because ffmpeg
must read a path: an m4a whose index sits at its end decodes to nothing through a pipe.
The copy is removed before the answer's last byte leaves (a client holding the whole
answer finds nothing on disk), and when the answer ends any other way (client gone,
error). Nothing is cached: patient audio stays on disk only while it is being played.

Audio is served only while the file is still the recording that was transcribed
(tasks/review/recording_check.py for a local file; a remote copy's sha256 against the
stored one): otherwise a page says the recording changed on disk (409) and the refusal
is an `audio_changed` event.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from audit import AuditAction, record_event
from storage.errors import SourceError, SourceNotFound
from storage.records import ItemRecord, WebSessionRecord
from storage.review_interface import ReviewUnitOfWork
from tasks.audio import riff
from tasks.audio.ffmpeg import find_ffmpeg, input_arg
from tasks.discovery.fetch import fetched_file
from tasks.discovery.recording_names import one_line, recording_name
from tasks.review.recording_check import AudioCheck, check_local_recording
from web.context import in_unit_of_work, render, workstation

RATE_HZ = 16_000
SAMPLES_PER_MS = RATE_HZ // 1000
HEADER_BYTES = riff.WAV_HEADER_BYTES
_READ_BYTES = 64 * 1024
_RANGE = re.compile(r"bytes=(\d*)-(\d*)")


@dataclass(frozen=True)
class Stretch:
    """Which part of which file, and how many samples it holds."""

    path: Path
    start_ms: int
    samples: int

    @property
    def total_bytes(self) -> int:
        """The whole WAV's size: header and samples."""
        return HEADER_BYTES + 2 * self.samples


async def audio(request: Request, session: WebSessionRecord) -> Response:
    """A stretch of the recording as audio/wav, whole or the byte range asked for."""
    item_id = int(request.path_params["item_id"])
    item, roots = await in_unit_of_work(
        request,
        lambda uow: (uow.item_queries.get_item(item_id), uow.runs.run_sources()),
        read_only=True,
    )
    if item is None:
        return PlainTextResponse(f"there is no recording {item_id}", status_code=404)
    asked = _asked_stretch(item, request)
    if isinstance(asked, Response):
        return asked
    start_ms, samples = asked
    total_bytes = HEADER_BYTES + 2 * samples
    wanted = byte_range(request.headers.get("range"), total=total_bytes)
    if wanted is None:
        return PlainTextResponse(
            "range not satisfiable",
            status_code=416,
            headers={"content-range": f"bytes */{total_bytes}"},
        )
    first, last = wanted
    copies = AsyncExitStack()
    try:
        path = await readable_path(item, roots=roots, copies=copies, request=request)
        if isinstance(path, AudioCheck):
            await copies.aclose()  # the copy of another recording goes at once
            return await changed_answer(request, session, item=item, found=path)
        if isinstance(path, Response):
            return path
        stretch = Stretch(path=path, start_ms=start_ms, samples=samples)
        await in_unit_of_work(request, lambda uow: _record_served(
            uow, item=item, session=session, stretch=stretch, first=first, last=last
        ))  # fmt: skip
    except BaseException:
        await copies.aclose()
        raise
    return _wav_answer(stretch, first=first, last=last, request=request, copies=copies)


def _wav_answer(
    stretch: Stretch, *, first: int, last: int, request: Request, copies: AsyncExitStack
) -> Response:
    """Bytes `first`..`last` streamed (206 for a Range request); `copies` closed at the end."""
    headers = {"accept-ranges": "bytes", "content-length": str(last - first + 1)}
    partial = request.headers.get("range") is not None
    if partial:
        headers["content-range"] = f"bytes {first}-{last}/{stretch.total_bytes}"
    pieces = _released_before_end(wav_bytes(stretch, first=first, last=last), copies.aclose)
    return ReleasingResponse(
        pieces,
        release=copies.aclose,
        status_code=206 if partial else 200,
        media_type="audio/wav",
        headers=headers,
    )


def _record_served(
    uow: ReviewUnitOfWork,
    *,
    item: ItemRecord,
    session: WebSessionRecord,
    stretch: Stretch,
    first: int,
    last: int,
) -> None:
    name = recording_name(item.source_uri, roots=uow.runs.run_sources())
    end_ms = stretch.start_ms + stretch.samples // SAMPLES_PER_MS
    detail: dict[str, str | int] = {
        "start_ms": stretch.start_ms, "end_ms": end_ms, "bytes": f"{first}-{last}"
    }  # fmt: skip
    record_event(uow, action=AuditAction.AUDIO_SERVED, actor=session.reviewer.name,
                 item_id=item.id, path=name, detail=detail)  # fmt: skip


class ReleasingResponse(StreamingResponse):
    """A streamed answer that closes its body and releases what it holds when it ends,
    however it ends (finished, client gone mid-stream, cancelled, failed)."""

    def __init__(
        self,
        content: AsyncIterator[bytes],
        *,
        release: Callable[[], Awaitable[None]],
        status_code: int,
        media_type: str,
        headers: dict[str, str],
    ) -> None:
        super().__init__(content, status_code=status_code, media_type=media_type, headers=headers)
        self._pieces = content
        self._release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            try:
                aclose = getattr(self._pieces, "aclose", None)
                if aclose is not None:
                    await aclose()  # stops ffmpeg before its input goes
            finally:
                await self._release()


async def _released_before_end(
    pieces: AsyncIterator[bytes], release: Callable[[], Awaitable[None]]
) -> AsyncIterator[bytes]:
    """The same bytes, the last piece held back until `release` has run."""
    held: bytes | None = None
    try:
        async for piece in pieces:
            if held is not None:
                yield held
            held = piece
    finally:
        aclose = getattr(pieces, "aclose", None)
        if aclose is not None:
            await aclose()
    await release()
    if held is not None:
        yield held


async def readable_path(
    item: ItemRecord, *, roots: list[str], copies: AsyncExitStack, request: Request
) -> Path | AudioCheck | Response:
    """A path ffmpeg can read holding the item's recording: the local file, or a private
    copy of a remote one (entered into `copies`, removed when it closes); the check's
    finding when the file is no longer that recording."""
    uri = item.source_uri
    path = local_path(uri)
    if path is not None:
        local_roots = [found for found in map(local_path, roots) if found is not None]
        verified = workstation(request).verified
        found = await run_in_threadpool(
            lambda: check_local_recording(path, item=item, roots=local_roots, verified=verified)
        )
        if found is AudioCheck.MISSING:
            return PlainTextResponse("the recording's file is not there any more", status_code=404)
        return path if found is AudioCheck.SAME else found
    try:
        fetched = await copies.enter_async_context(fetched_file(uri, storage_options=None))
    except SourceNotFound:
        return PlainTextResponse("the recording's file is not there any more", status_code=404)
    except SourceError as exc:
        return PlainTextResponse(
            f"the recording could not be fetched from its source: {one_line(str(exc))}",
            status_code=502,
        )
    if item.sha256 is not None and fetched.fingerprint.sha256 != item.sha256:
        return AudioCheck.CHANGED
    return fetched.path


async def changed_answer(
    request: Request, session: WebSessionRecord, *, item: ItemRecord, found: AudioCheck
) -> Response:
    """The page saying the recording changed on disk (409), and its `audio_changed` event."""

    def record(uow: ReviewUnitOfWork) -> str:
        name = recording_name(item.source_uri, roots=uow.runs.run_sources())
        record_event(uow, action=AuditAction.AUDIO_CHANGED, actor=session.reviewer.name,
                     item_id=item.id, path=name, detail={"reason": found.value})  # fmt: skip
        return name

    name = await in_unit_of_work(request, record)
    context = {
        "session": session,
        "item": item,
        "name": name,
        "link": found is AudioCheck.LINK_OUTSIDE,
    }
    return render(request, "audio_changed.html", context, status_code=409)


def _asked_stretch(item: ItemRecord, request: Request) -> tuple[int, int] | Response:
    """(start_ms, samples) the query asks for, or the 400 saying what is wrong."""
    duration_ms = item.duration_ms or 0
    try:
        start_ms = int(request.query_params.get("start_ms") or 0)
        end_ms = int(request.query_params.get("end_ms") or duration_ms)
    except ValueError:
        return PlainTextResponse("start_ms and end_ms are whole milliseconds", status_code=400)
    if not 0 <= start_ms < end_ms <= max(duration_ms, 1):
        return PlainTextResponse(
            f"start_ms and end_ms must satisfy 0 <= start_ms < end_ms <= {duration_ms}",
            status_code=400,
        )
    return start_ms, (end_ms - start_ms) * SAMPLES_PER_MS


def local_path(uri: str) -> Path | None:
    """The local file a source URI names, or None for a remote one."""
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path))
    if "://" in uri:
        return None
    return Path(uri)


def byte_range(header: str | None, *, total: int) -> tuple[int, int] | None:
    """(first, last) bytes asked for (the whole without a header); None if unsatisfiable.
    One range only: a multi-range request gets its first range."""
    if header is None:
        return 0, total - 1
    found = _RANGE.match(header.split(",")[0].strip())
    if found is None:
        return 0, total - 1
    start, end = found.groups()
    if start == "":  # the last N bytes
        if end == "" or int(end) == 0:
            return None
        return max(total - int(end), 0), total - 1
    first = int(start)
    last = min(int(end), total - 1) if end else total - 1
    if first >= total or last < first:
        return None
    return first, last


def wav_header(samples: int) -> bytes:
    """The 44-byte header of 16 kHz mono 16-bit PCM holding `samples` samples."""
    return riff.wav_header(data_bytes=2 * samples, rate_hz=RATE_HZ)


async def wav_bytes(stretch: Stretch, *, first: int, last: int) -> AsyncIterator[bytes]:
    """Bytes `first`..`last` of the stretch's WAV: header, then ffmpeg's PCM from the
    sample the range starts in (silence pads a file shorter than its stored duration)."""
    header = wav_header(stretch.samples)
    if first < HEADER_BYTES:
        yield header[first : min(last + 1, HEADER_BYTES)]
    if last < HEADER_BYTES:
        return
    pcm_first = max(first - HEADER_BYTES, 0)
    sample = pcm_first // 2
    skip = pcm_first - 2 * sample
    wanted = last - HEADER_BYTES - pcm_first + 1
    async for piece in _decoded(stretch, sample=sample, skip=skip, wanted=wanted):
        yield piece


async def _decoded(
    stretch: Stretch, *, sample: int, skip: int, wanted: int
) -> AsyncIterator[bytes]:
    offset_s = stretch.start_ms / 1000 + sample / RATE_HZ
    length_s = (stretch.samples - sample) / RATE_HZ
    process = await asyncio.create_subprocess_exec(
        find_ffmpeg(), "-nostdin", "-hide_banner", "-loglevel", "error",
        "-ss", f"{offset_s:.6f}", "-i", input_arg(stretch.path), "-t", f"{length_s:.6f}",
        "-vn", "-ac", "1", "-ar", str(RATE_HZ), "-f", "s16le", "-acodec", "pcm_s16le", "pipe:1",
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    assert process.stdout is not None
    try:
        while wanted > 0:
            piece = await process.stdout.read(_READ_BYTES)
            if not piece:
                break
            if skip:
                piece, skip = piece[skip:], max(skip - len(piece), 0)
            piece = piece[:wanted]
            wanted -= len(piece)
            if piece:
                yield piece
        while wanted > 0:  # the file ended early: silence, so the length stays as announced
            pad = min(wanted, _READ_BYTES)
            wanted -= pad
            yield bytes(pad)
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()
