"""The workstation's Starlette application: routes, static files, security headers."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from config.workstation import WebSettings
from storage.review_interface import ReviewStore
from web import admin, audio_stream, pages, quality_page, review_actions, sessions
from web.context import HERE, Workstation, new_templates
from web.security import SecurityHeaders
from web.sessions import signed_in


def build_app(store: ReviewStore, *, web: WebSettings, tls: bool) -> Starlette:
    """The review workstation over `store` (opened by the caller, disposed by it too)."""
    routes = [
        Route("/login", sessions.login_page, methods=["GET"]),
        Route("/login", sessions.login, methods=["POST"]),
        Route("/logout", signed_in(sessions.logout), methods=["POST"]),
        Route("/keepalive", signed_in(sessions.keep_alive), methods=["POST"]),
        Route("/", signed_in(pages.queue_page), methods=["GET"]),
        Route("/items", signed_in(pages.search_page), methods=["GET"]),
        Route("/items/{item_id:int}", signed_in(pages.item_page), methods=["GET"]),
        Route("/items/{item_id:int}/audio", signed_in(audio_stream.audio), methods=["GET"]),
        Route("/items/{item_id:int}/draft", signed_in(review_actions.save_draft), methods=["POST"]),
        Route(
            "/items/{item_id:int}/finalize", signed_in(review_actions.finalize), methods=["POST"]
        ),
        Route("/items/{item_id:int}/accept", signed_in(review_actions.accept), methods=["POST"]),
        Route(
            "/items/{item_id:int}/send-back", signed_in(review_actions.send_back), methods=["POST"]
        ),
        Route("/quality", signed_in(quality_page.quality_page), methods=["GET"]),
        Route("/quality.json", signed_in(quality_page.quality_data), methods=["GET"]),
        Route(
            "/items/{item_id:int}/language",
            signed_in(review_actions.change_language),
            methods=["POST"],
        ),
        Route("/admin", signed_in(admin.admin_page), methods=["GET"]),
        Route("/admin/reviewers", signed_in(admin.add_account), methods=["POST"]),
        Route("/admin/unlock", signed_in(admin.unlock_account), methods=["POST"]),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    app = Starlette(routes=routes, middleware=[Middleware(SecurityHeaders, tls=tls)])
    app.state.workstation = Workstation(store=store, web=web, tls=tls, templates=new_templates())
    return app
