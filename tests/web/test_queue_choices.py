"""The queue's filters choose from what waits, the waiting time shows only for what
waits, and the pages carry a favicon (over a real socket, httpx)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest

from storage.review_interface import ReviewStore
from tests.helpers.review import add_transcribed
from tests.web.conftest import SEGMENTS
from tests.web.test_pages import client_of
from tests.web.workstation import Served


@pytest.fixture
def ann(served: Served) -> Iterator[httpx.Client]:
    with client_of(served, "ann") as client:
        yield client


def options(page: str, testid: str) -> list[str]:
    found = re.search(rf'<select name="\w+" data-testid="{testid}">(.*?)</select>', page, re.S)
    assert found is not None, f"{testid} is not a choice"
    return re.findall(r'<option value="([^"]*)"', found.group(1))


def test_the_filters_offer_the_languages_and_flags_that_wait(
    review_store: ReviewStore, ann: httpx.Client, recording: int
) -> None:
    add_transcribed(
        review_store, "/src/ta/1.wav", segments=SEGMENTS, language="ta", flags=["script_mismatch"]
    )
    filed = add_transcribed(review_store, "/src/fr/1.wav", segments=SEGMENTS, language="fr",
                            flags=["empty_text"])  # fmt: skip
    with review_store.unit_of_work() as uow:
        uow.reviews.accept_review(filed)  # filed: no longer a choice
    page = ann.get("/").text
    assert options(page, "filter-language") == ["", "en-IN", "ta"]
    assert options(page, "filter-flag") == ["", "repetition", "script_mismatch"]
    chosen = ann.get("/?language=ta").text
    assert '<option value="ta" selected>' in chosen


def test_the_waiting_time_shows_only_for_recordings_that_wait(
    review_store: ReviewStore, ann: httpx.Client, recording: int
) -> None:
    filed = add_transcribed(review_store, "/src/ward/filed.wav", segments=SEGMENTS)
    with review_store.unit_of_work() as uow:
        uow.reviews.accept_review(filed)
    found = ann.get("/items?search=ward/").text
    cells = dict(
        re.findall(
            r'href="/items/(\d+)"[^<]*</a></td>\s*(?:<td>[^<]*</td>){3}\s*<td>([^<]*)</td>', found
        )
    )
    assert cells == {str(recording): "0 min", str(filed): ""}


def test_every_page_names_a_favicon_that_is_served(ann: httpx.Client) -> None:
    link = re.search(r'<link rel="icon" href="([^"]+)"', ann.get("/").text)
    assert link is not None
    icon = ann.get(link.group(1))
    assert icon.status_code == 200
    assert icon.headers["content-type"].startswith("image/svg+xml")
