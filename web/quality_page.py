"""The Quality page (`/quality`, any signed-in reviewer or admin) and its data (`/quality.json`).

Accuracy over time per department or language as a chart, the notes' accuracy as a
histogram, the groups' table and the top corrections, with the filters of `medasr
quality`. Figures are not patient data: reading them is no audit event. The corrections
are word pairs from the newest corrected notes still kept (tasks/review/quality_reading.py).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from audit.filters import parse_when
from config.errors import ConfigError
from storage.accuracy_records import AccuracyFilter
from storage.records import WebSessionRecord
from tasks.review.quality_reading import (
    QualityOverview,
    QualityQuestion,
    checked_language,
    read_overview,
)
from web.context import render, workstation
from web.quality_chart import HEIGHT, WIDTH, histogram_bars, line_chart

GROUPINGS = ("department", "language")
TOP_CORRECTIONS = 20
_MAX_MIN_NOTES = 100_000


async def quality_page(request: Request, session: WebSessionRecord) -> Response:
    """GET /quality: the charts, the table and the corrections, filtered."""
    try:
        filters, question = _question(request)
    except ConfigError as exc:
        return PlainTextResponse(str(exc), status_code=400)
    overview = await _read(request, question)
    context: dict[str, Any] = {
        "session": session,
        "filters": filters,
        "groupings": GROUPINGS,
        "overview": overview,
        "chart": line_chart(overview.points),
        "bars": histogram_bars(overview.histogram),
        "width": WIDTH,
        "height": HEIGHT,
    }
    return render(request, "quality.html", context)


async def quality_data(request: Request, session: WebSessionRecord) -> Response:
    """GET /quality.json: the same figures as data."""
    try:
        _, question = _question(request)
    except ConfigError as exc:
        return JSONResponse({"error": str(exc)}, status_code=400)
    overview = await _read(request, question)
    return JSONResponse(
        {
            "groups": [asdict(group) for group in overview.groups],
            "points": [asdict(point) for point in overview.points],
            "histogram": [asdict(b) for b in overview.histogram],
            "corrections": [asdict(c) for c in overview.corrections],
        }
    )


async def _read(request: Request, question: QualityQuestion) -> QualityOverview:
    store = workstation(request).store
    return await run_in_threadpool(read_overview, store, question, top=TOP_CORRECTIONS)


def _question(request: Request) -> tuple[dict[str, str], QualityQuestion]:
    """The filters as given (for the form) and the question they ask; raises ConfigError."""
    query = request.query_params
    filters = {name: (query.get(name) or "").strip()[:40] for name in _FILTERS}
    by = filters["by"] or "department"
    if by not in GROUPINGS:
        raise ConfigError(f"by takes {' or '.join(GROUPINGS)}")
    language = checked_language(filters["language"] or None)
    try:
        min_notes = int(filters["min_notes"] or "1")
    except ValueError:
        raise ConfigError("min_notes takes a whole number") from None
    selection = AccuracyFilter(
        since=parse_when(filters["since"], option="since") if filters["since"] else None,
        until=(
            parse_when(filters["until"], option="until", end_of_day=True)
            if filters["until"]
            else None
        ),
        language=language,
    )
    question = QualityQuestion(
        by=by, selection=selection, min_notes=max(1, min(min_notes, _MAX_MIN_NOTES))
    )
    return {**filters, "by": by}, question


_FILTERS = ("by", "since", "until", "language", "min_notes")
