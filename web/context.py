"""The workstation's shared parts (store, settings, templates) and the unit of work helper."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.templating import Jinja2Templates

from config.workstation import WebSettings
from storage.review_interface import ReviewStore, ReviewUnitOfWork
from tasks.review.peaks import PeaksCache
from tasks.review.recording_check import VerifiedFiles
from web.throttle import SignInThrottle, Verifications

HERE = Path(__file__).resolve().parent
T = TypeVar("T")


@dataclass(frozen=True)
class Workstation:
    """What every request of one `medasr web` shares."""

    store: ReviewStore
    web: WebSettings
    tls: bool
    templates: Jinja2Templates
    # The recordings' files this process has hashed and found unchanged (their identity).
    verified: VerifiedFiles = field(default_factory=VerifiedFiles)
    throttle: SignInThrottle = field(default_factory=SignInThrottle)
    verifications: Verifications = field(default_factory=Verifications)
    # A chunk longer than this shows its pauses on the waveform (MEDASR_REVIEW__SEGMENT_MAX_S).
    segment_max_s: float = 30.0
    peaks: PeaksCache = field(default_factory=PeaksCache)


def new_templates() -> Jinja2Templates:
    """Jinja2 templates with autoescaping on (every .html template)."""
    return Jinja2Templates(directory=str(HERE / "templates"))


def workstation(request: Request) -> Workstation:
    """The workstation serving this request."""
    found: Workstation = request.app.state.workstation
    return found


async def in_unit_of_work(
    request: Request, work: Callable[[ReviewUnitOfWork], T], *, read_only: bool = False
) -> T:
    """Run `work` in one unit of work (one transaction) off the event loop."""
    store = workstation(request).store

    def run() -> T:
        with store.unit_of_work(read_only=read_only) as uow:
            return work(uow)

    return await run_in_threadpool(run)


def render(
    request: Request, name: str, context: dict[str, Any], *, status_code: int = 200
) -> Response:
    """A template's page (autoescaped); the page's script learns the idle timeout from it."""
    found = workstation(request)
    context = {"idle_timeout_s": found.web.idle_timeout_s, **context}
    page: Response = found.templates.TemplateResponse(
        request, name, context, status_code=status_code
    )
    return page
