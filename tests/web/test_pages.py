"""The queue, the search, a recording's page and its decisions, over a real socket (httpx)."""

from __future__ import annotations

import html
import io
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import numpy as np
import pytest
import soundfile

from storage.review_interface import ReviewStore
from tests.helpers.review import Segment, add_transcribed, audit_actions, audit_events, get_item
from tests.web.conftest import SEGMENTS
from tests.web.workstation import Served, csrf_of, sign_in

_ROW = re.compile(r'data-testid="queue-item" href="/items/(\d+)[^"]*">([^<]*)<')
_BASE = re.compile(r'name="base_revision" value="(\d+)"')


@contextmanager
def client_of(served: Served, name: str = "ann") -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served.url) as http:
        assert sign_in(http, name).status_code == 303
        yield http


@pytest.fixture
def ann(served: Served) -> Iterator[httpx.Client]:
    with client_of(served) as http:
        yield http


def rows(page: str) -> list[tuple[int, str]]:
    return [(int(i), html.unescape(name)) for i, name in _ROW.findall(page)]


def post_edit(client: httpx.Client, item_id: int, action: str, text: str) -> httpx.Response:
    page = client.get(f"/items/{item_id}").text
    found = _BASE.search(page)
    assert found is not None
    data = {"text": text, "base_revision": found.group(1), "csrf_token": csrf_of(page)}
    return client.post(f"/items/{item_id}/{action}", data=data)


def test_the_queue_pages_oldest_first_fifty_at_a_time(
    review_store: ReviewStore, ann: httpx.Client, recording: int
) -> None:
    ids = [recording] + [
        add_transcribed(review_store, f"/src/night/{n:03d}.wav", segments=SEGMENTS)
        for n in range(104)
    ]
    first = ann.get("/")
    assert [i for i, _ in rows(first.text)] == ids[:50]
    next_link = re.search(r'data-testid="next-page" href="([^"]+)"', first.text)
    assert next_link is not None
    second = ann.get(html.unescape(next_link.group(1)))
    assert [i for i, _ in rows(second.text)] == ids[50:100]
    third_link = re.search(r'data-testid="next-page" href="([^"]+)"', second.text)
    assert third_link is not None
    third = ann.get(html.unescape(third_link.group(1)))
    assert [i for i, _ in rows(third.text)] == ids[100:]
    assert 'data-testid="next-page"' not in third.text
    assert "Waiting for review: 105" in first.text


def test_the_queue_filters_by_language_and_flag(
    review_store: ReviewStore, ann: httpx.Client, recording: int
) -> None:
    tamil = add_transcribed(
        review_store, "/src/ta/1.wav", segments=SEGMENTS, language="ta", flags=["script_mismatch"]
    )
    empty = add_transcribed(review_store, "/src/en/2.wav", segments=SEGMENTS, flags=["empty_text"])
    assert [i for i, _ in rows(ann.get("/?language=ta").text)] == [tamil]
    assert [i for i, _ in rows(ann.get("/?flag=empty_text").text)] == [empty]
    assert [i for i, _ in rows(ann.get("/?flag=repetition&language=en-IN").text)] == [recording]


def test_a_recording_page_shows_segments_editor_machine_text_and_diff(
    served: Served, ann: httpx.Client, recording: int
) -> None:
    page = ann.get(f"/items/{recording}").text
    segments = re.findall(
        r'data-testid="segment" data-index="(\d+)" data-start-ms="(\d+)" data-end-ms="(\d+)"', page
    )
    assert segments == [("1", "0", "3000"), ("2", "3000", "6000"), ("3", "6000", "9000")]
    assert page.count('data-testid="segment-play"') == 3
    assert 'data-testid="player"' in page
    machine = " ".join(s.text for s in SEGMENTS)
    assert f'spellcheck="true" maxlength="500000">{machine}</textarea>' in page
    assert f'data-testid="machine-text">{machine}</div>' in page
    for hook in ("diff", "save-draft", "finalize", "accept", "send-back", "notice"):
        assert f'data-testid="{hook}"' in page
    assert audit_actions(served.store) == ["login", "transcript_viewed"]
    viewed = audit_events(served.store)[-1]
    assert (viewed.actor, viewed.item_id, viewed.path) == ("ann", recording, "ward/a.wav")


def test_text_is_escaped_in_the_page(review_store: ReviewStore, ann: httpx.Client) -> None:
    item = add_transcribed(
        review_store, "/src/x.wav", segments=[Segment(0, 1000, "<script>x()</script>")]
    )
    page = ann.get(f"/items/{item}").text
    assert "<script>x()" not in page
    assert "&lt;script&gt;x()" in page


def test_draft_then_finalize_signs_the_correction_off(
    served: Served, ann: httpx.Client, recording: int
) -> None:
    saved = post_edit(ann, recording, "draft", "metformin 500 twice daily")
    assert saved.status_code == 303
    page = ann.get(saved.headers["location"]).text
    assert "Draft saved" in page
    assert "revision 1 (draft) by ann" in page
    assert get_item(served.store, recording).status == "needs_review"

    done = post_edit(ann, recording, "finalize", "metformin 500 mg twice daily")
    assert done.status_code == 303
    item = get_item(served.store, recording)
    assert (item.status, item.text) == ("done", "metformin 500 mg twice daily")
    assert item.machine_text == " ".join(s.text for s in SEGMENTS)
    assert item.extras["review"]["by"] == "ann"
    actions = audit_actions(served.store)
    assert actions.count("revision_saved") == 2
    assert actions.count("finalized") == 1
    assert "metformin" not in repr(audit_events(served.store))


def test_the_second_save_of_a_stale_version_is_refused(served: Served, recording: int) -> None:
    with client_of(served, "ann") as ann, client_of(served, "bob") as bob:
        ann_page, bob_page = (
            ann.get(f"/items/{recording}").text,
            bob.get(f"/items/{recording}").text,
        )
        for client, page, text in ((ann, ann_page, "ann's words"), (bob, bob_page, "bob's words")):
            data = {"text": text, "base_revision": "0", "csrf_token": csrf_of(page)}
            last = client.post(f"/items/{recording}/finalize", data=data)
    assert last.status_code == 409
    assert "revision 1 by ann was saved after the version you edited" in html.unescape(last.text)
    assert "bob&#39;s words</textarea>" in last.text  # kept on the page, not lost
    assert get_item(served.store, recording).text == "ann's words"


def test_accept_and_send_back(review_store: ReviewStore, ann: httpx.Client, recording: int) -> None:
    other = add_transcribed(review_store, "/src/b.wav", segments=SEGMENTS)
    page = ann.get(f"/items/{recording}").text
    form = {"csrf_token": csrf_of(page), "base_revision": "0"}
    accepted = ann.post(f"/items/{recording}/accept", data=form)
    assert accepted.status_code == 303
    assert get_item(review_store, recording).status == "done"
    sent = ann.post(f"/items/{other}/send-back", data=form)
    assert sent.status_code == 303
    assert get_item(review_store, other).status == "pending"
    again = ann.post(f"/items/{other}/accept", data=form)
    assert again.status_code == 400
    assert "not needs_review" in again.text


def test_a_recording_corrected_after_filing_is_found_by_its_path(
    ann: httpx.Client, recording: int
) -> None:
    post_edit(ann, recording, "finalize", "filed text")
    assert recording not in [i for i, _ in rows(ann.get("/").text)]
    found = ann.get("/items?search=ward/a")
    assert [i for i, _ in rows(found.text)] == [recording]
    again = post_edit(ann, recording, "finalize", "corrected after filing")
    assert again.status_code == 303


def dominant_hz(wav: bytes) -> float:
    samples, rate = soundfile.read(io.BytesIO(wav))
    spectrum = np.abs(np.fft.rfft(samples * np.hanning(len(samples))))
    return float(np.fft.rfftfreq(len(samples), 1 / rate)[int(np.argmax(spectrum))])


def test_a_segment_is_served_from_its_offset(ann: httpx.Client, recording: int) -> None:
    # The recording's pitch is 200 + 20 t Hz: the stretch 6-7 s sounds at about 330 Hz.
    served = ann.get(f"/items/{recording}/audio?start_ms=6000&end_ms=7000")
    assert served.status_code == 200
    assert served.headers["content-type"] == "audio/wav"
    assert served.headers["accept-ranges"] == "bytes"
    assert len(served.content) == 44 + 2 * 16_000 == int(served.headers["content-length"])
    assert abs(dominant_hz(served.content) - 330) < 15


def test_a_range_request_gets_exactly_those_bytes(ann: httpx.Client, recording: int) -> None:
    whole = ann.get(f"/items/{recording}/audio").content
    assert len(whole) == 44 + 2 * 9 * 16_000
    part = ann.get(f"/items/{recording}/audio", headers={"Range": "bytes=100001-160000"})
    assert part.status_code == 206
    assert part.headers["content-range"] == f"bytes 100001-160000/{len(whole)}"
    assert part.content == whole[100001:160001]
    head = ann.get(f"/items/{recording}/audio", headers={"Range": "bytes=0-9"})
    assert head.content == whole[:10]
    past = ann.get(f"/items/{recording}/audio", headers={"Range": f"bytes={len(whole)}-"})
    assert past.status_code == 416


@pytest.mark.parametrize(
    "query",
    ["start_ms=5000&end_ms=4000", "start_ms=-1&end_ms=10", "start_ms=0&end_ms=99999", "start_ms=x"],
)
def test_a_bad_stretch_is_refused(ann: httpx.Client, recording: int, query: str) -> None:
    refused = ann.get(f"/items/{recording}/audio?{query}")
    assert refused.status_code == 400


def test_a_missing_file_is_404(
    review_store: ReviewStore, ann: httpx.Client, tmp_path: Path
) -> None:
    gone = add_transcribed(review_store, str(tmp_path / "gone.wav"), segments=SEGMENTS)
    assert ann.get(f"/items/{gone}/audio").status_code == 404
