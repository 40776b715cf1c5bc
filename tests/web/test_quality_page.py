"""The Quality page in Debian's chromium: the chart shows the points of the data served.

A history of figures over three months and two departments, plus two real corrections,
in a real SQLite store; the workstation served on a loopback port.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from storage.accuracy_records import NoteAccuracy
from storage.review_interface import ReviewStore
from storage.sources import SourceFile
from tests.helpers.quality import add_reviewed
from tests.helpers.review import PASSWORD, add_account
from tests.web.workstation import Served, serve, sign_in

pytestmark = pytest.mark.xdist_group("browser")

# (department, month, words, errors) of each note, worked into points below by hand
HISTORY = [
    ("cardio", 9, 100, 1), ("cardio", 9, 300, 9), ("cardio", 10, 200, 2),
    ("cardio", 11, 100, 0), ("neuro", 9, 100, 10), ("neuro", 11, 50, 1), ("neuro", 11, 150, 3),
]  # fmt: skip
EXPECTED = {  # 1 - errors / words per department and month
    ("cardio", "2026-09"): 1 - 10 / 400, ("cardio", "2026-10"): 1 - 2 / 200,
    ("cardio", "2026-11"): 1.0, ("neuro", "2026-09"): 0.9, ("neuro", "2026-11"): 1 - 4 / 200,
}  # fmt: skip


@pytest.fixture
def history(review_store: ReviewStore) -> None:
    uris = [f"/h/{n}.wav" for n in range(len(HISTORY))]
    with review_store.unit_of_work() as uow:
        uow.items.register_items([SourceFile(uri, 1, "v1") for uri in uris], language="en-IN")
        found = uow.item_queries.find_items(source_uris=uris, language="en-IN")
        for uri, (dept, month, words, errors) in zip(uris, HISTORY, strict=True):
            uow.accuracy.record_accuracy(
                NoteAccuracy(
                    found[uri].id, 1, "ann", datetime(2026, month, 3, tzinfo=UTC), "en-IN",
                    "dr-x", dept, words, errors, 0, 0, 1 - errors / words,
                )
            )  # fmt: skip
    add_account(review_store, "ann")


@pytest.fixture
def served(review_store: ReviewStore, history: None) -> Iterator[Served]:
    with serve(review_store) as running:
        yield running


def test_the_chart_shows_the_points_of_the_data_served(browser: Any, served: Served) -> None:
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(f"{served.url}/login")
        page.get_by_test_id("login-user").fill("ann")
        page.get_by_test_id("login-password").fill(PASSWORD)
        page.get_by_test_id("login-submit").click()
        page.wait_for_url(f"{served.url}/")
        page.get_by_test_id("quality-link").click()
        page.wait_for_url(f"{served.url}/quality")

        chart = page.get_by_test_id("quality-chart")
        served_points = json.loads(chart.get_attribute("data-points") or "[]")
        assert {(p["series"], p["month"]): p["accuracy"] for p in served_points} == pytest.approx(
            {key: round(value, 4) for key, value in EXPECTED.items()}
        )
        drawn = page.evaluate(
            """() => [...document.querySelectorAll('[data-testid=quality-chart] circle')]
                .map(c => ({series: c.dataset.series, month: c.dataset.month,
                            accuracy: Number(c.dataset.accuracy),
                            y: c.getBoundingClientRect().y,
                            visible: c.getBoundingClientRect().width > 0}))"""
        )
        assert {(d["series"], d["month"]): d["accuracy"] for d in drawn} == pytest.approx(
            {(p["series"], p["month"]): p["accuracy"] for p in served_points}
        )
        assert all(d["visible"] for d in drawn)
        by_height = [d["accuracy"] for d in sorted(drawn, key=lambda d: d["y"])]
        assert by_height == sorted(by_height, reverse=True)  # higher accuracy drawn higher

        data = page.request.get(f"{served.url}/quality.json").json()
        assert {(p["series"], p["month"]) for p in data["points"]} == set(EXPECTED)
        rows = page.get_by_test_id("quality-table").locator("tbody tr")
        assert rows.count() == 2
        assert page.get_by_test_id("corrections-table").is_visible()
    finally:
        context.close()


def test_the_corrections_table_and_the_filters(review_store: ReviewStore, served: Served) -> None:
    for n in range(2):
        add_reviewed(
            review_store, f"/c/{n}.wav", machine="takes met for men daily",
            final="takes metformin daily", metadata={"department": "cardio"},
        )  # fmt: skip
    with httpx.Client(base_url=served.url) as client:
        assert client.get("/quality").status_code == 303  # a session first
        sign_in(client, "ann")
        page = client.get("/quality", params={"by": "language"})
        assert page.status_code == 200
        assert page.headers["cache-control"] == "no-store"
        assert 'data-testid="corrections-table"' in page.text
        assert "<td>met for men</td><td>metformin</td><td>2</td>" in page.text
        data = client.get("/quality.json", params={"by": "language"}).json()
        assert [g["group"] for g in data["groups"]] == ["en-IN"]
        assert client.get("/quality", params={"by": "patient"}).status_code == 400
        assert client.get("/quality", params={"since": "soon"}).status_code == 400


@pytest.mark.parametrize(
    ("path", "query"),
    [
        ("/quality", {"since": "9999-12-31"}),
        ("/quality", {"since": "0001-01-01"}),
        ("/quality", {"until": "9999-12-31"}),
        ("/quality", {"since": "0001-01-01", "until": "9999-12-31"}),
        ("/quality.json", {"since": "9999-12-31"}),
    ],
)
def test_dates_at_the_ends_of_the_calendar_are_answered(
    served: Served, path: str, query: dict[str, str]
) -> None:
    # The period before the selection (or the day after --until) falls off the calendar:
    # that was an OverflowError, a 500 and a dropped connection.
    with httpx.Client(base_url=served.url) as client:
        sign_in(client, "ann")
        assert client.get(path, params=query).status_code == 200
        assert client.get("/quality").status_code == 200  # the connection still serves
