"""The workstation's Starlette application: routes, static files, security headers."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.convertors import IntegerConvertor, register_url_convertor
from starlette.middleware import Middleware
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from config.workstation import ReviewSettings, WebSettings
from storage.review_interface import ReviewStore
from web import admin, audio_stream, pages, quality_page, review_actions, sessions, waveform
from web.context import HERE, Workstation, new_templates
from web.limits import BodyLimit
from web.security import SecurityHeaders
from web.sessions import signed_in


class _RowIdConvertor(IntegerConvertor):
    """A row id: at most 18 digits (past a 64-bit integer the store cannot look it up)."""

    regex = "[0-9]{1,18}"


def build_app(
    store: ReviewStore, *, web: WebSettings, tls: bool, review: ReviewSettings | None = None
) -> Starlette:
    """The review workstation over `store` (opened by the caller, disposed by it too)."""
    register_url_convertor("id", _RowIdConvertor())
    routes = [
        Route("/login", sessions.login_page, methods=["GET"]),
        Route("/login", sessions.login, methods=["POST"]),
        Route("/logout", signed_in(sessions.logout), methods=["POST"]),
        Route("/keepalive", signed_in(sessions.keep_alive), methods=["POST"]),
        Route("/", signed_in(pages.queue_page), methods=["GET"]),
        Route("/items", signed_in(pages.search_page), methods=["GET"]),
        Route("/items/{item_id:id}", signed_in(pages.item_page), methods=["GET"]),
        Route("/items/{item_id:id}/audio", signed_in(audio_stream.audio), methods=["GET"]),
        Route("/items/{item_id:id}/peaks", signed_in(waveform.peaks), methods=["GET"]),
        Route("/items/{item_id:id}/draft", signed_in(review_actions.save_draft), methods=["POST"]),
        Route("/items/{item_id:id}/finalize", signed_in(review_actions.finalize), methods=["POST"]),
        Route("/items/{item_id:id}/accept", signed_in(review_actions.accept), methods=["POST"]),
        Route(
            "/items/{item_id:id}/send-back", signed_in(review_actions.send_back), methods=["POST"]
        ),
        Route("/quality", signed_in(quality_page.quality_page), methods=["GET"]),
        Route("/quality.json", signed_in(quality_page.quality_data), methods=["GET"]),
        Route(
            "/items/{item_id:id}/language",
            signed_in(review_actions.change_language),
            methods=["POST"],
        ),
        Route("/admin", signed_in(admin.admin_page), methods=["GET"]),
        Route("/admin/reviewers", signed_in(admin.add_account), methods=["POST"]),
        Route("/admin/unlock", signed_in(admin.unlock_account), methods=["POST"]),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    middleware = [Middleware(SecurityHeaders, tls=tls), Middleware(BodyLimit)]
    app = Starlette(routes=routes, middleware=middleware)
    segment_max_s = (review or ReviewSettings()).segment_max_s
    app.state.workstation = Workstation(
        store=store, web=web, tls=tls, templates=new_templates(), segment_max_s=segment_max_s
    )
    return app
