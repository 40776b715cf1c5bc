"""A long chunk's pauses on the recording's waveform: peaks computed by medasr on
demand (cached per recording), served like the audio (session, no-store, identity check,
an audit event), and marks the reviewer jumps to in Debian's chromium."""

from __future__ import annotations

import os
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import soundfile
from playwright.sync_api import expect

import tasks.review.peaks as peaks_module
from storage.review_interface import ReviewStore
from tests.helpers.review import LANG, Segment, add_transcribed, audit_events, file_fingerprint
from tests.web.test_browser import PLAYER, signed_in_page, wait_player
from tests.web.test_pages import client_of
from tests.web.workstation import Served, serve, write_tone_wav

pytestmark = pytest.mark.xdist_group("browser")

RATE_HZ = 16_000
SILENCES_S = [(12.0, 12.6), (25.0, 25.6), (41.0, 41.6), (55.0, 55.6)]
CHUNKS = [Segment(0, 70_000, "one long chunk"), Segment(70_000, 80_000, "a short one")]
MAX_MS = 30_000  # MEDASR_REVIEW__SEGMENT_MAX_S's default


def write_dictation(path: Path) -> Path:
    """80 s of tone with a pause at each of SILENCES_S."""
    t = np.arange(80 * RATE_HZ) / RATE_HZ
    signal = 0.3 * np.sin(2 * np.pi * 300 * t)
    for start, end in SILENCES_S:
        signal[int(start * RATE_HZ) : int(end * RATE_HZ)] = 0
    soundfile.write(path, signal, RATE_HZ, subtype="PCM_16")
    return path


@pytest.fixture
def dictation(review_store: ReviewStore, tmp_path: Path) -> int:
    folder = tmp_path / "ward"
    folder.mkdir()
    wav = write_dictation(folder / "long.wav")
    with review_store.unit_of_work() as uow:
        uow.runs.start_run(source=str(tmp_path), language=LANG)
    return add_transcribed(review_store, str(wav), segments=CHUNKS, **file_fingerprint(wav))


@pytest.fixture
def served(review_store: ReviewStore, accounts, dictation) -> Iterator[Served]:
    with serve(review_store) as running:
        yield running


def in_a_pause(at_ms: int) -> bool:
    return any(start * 1000 <= at_ms <= end * 1000 for start, end in SILENCES_S)


def test_the_pauses_of_a_long_chunk_are_marks_within_the_bound(
    served: Served, dictation: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoded = []
    compute = peaks_module.compute_peaks
    monkeypatch.setattr(
        peaks_module, "compute_peaks", lambda **given: decoded.append(given) or compute(**given)
    )
    with httpx.Client(base_url=served.url) as anonymous:
        assert anonymous.get(f"/items/{dictation}/peaks").status_code == 401  # the page fetches it
    with client_of(served, "ann") as ann:
        answer = ann.get(f"/items/{dictation}/peaks")
        again = ann.get(f"/items/{dictation}/peaks")
    assert answer.status_code == 200
    assert "no-store" in answer.headers["cache-control"]
    found = answer.json()
    assert found["duration_ms"] >= 80_000
    marks = [mark["at_ms"] for mark in found["marks"]]
    assert all(mark["segment"] == 1 for mark in found["marks"])  # the short chunk has none
    assert marks
    assert all(in_a_pause(at) for at in marks), marks
    edges = [0, *marks, 70_000]
    assert max(b - a for a, b in pairwise(edges)) <= MAX_MS
    assert again.json() == found
    assert len(decoded) == 1  # the second answer came from the cache
    served_events = [e for e in audit_events(served.store) if e.action == "audio_served"]
    assert [e.detail.get("waveform") for e in served_events] == ["peaks", "peaks"]
    assert all("long chunk" not in str(e.detail) for e in served_events)


def test_no_peaks_for_a_recording_that_changed_on_disk(
    served: Served, dictation: int, tmp_path: Path
) -> None:
    other = write_tone_wav(tmp_path / "other-patient.wav", seconds=80.0, rate_hz=8_000)
    os.replace(other, tmp_path / "ward" / "long.wav")
    with client_of(served, "ann") as ann:
        refused = ann.get(f"/items/{dictation}/peaks")
    assert refused.status_code == 409
    assert "peaks" not in refused.text
    assert audit_events(served.store)[-1].action == "audio_changed"


def test_the_reviewer_jumps_to_a_pause_from_the_waveform(
    browser: Any, served: Served, dictation: int
) -> None:
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    try:
        page = signed_in_page(context, served)
        page.goto(f"{served.url}/items/{dictation}")
        waveform = page.get_by_test_id("waveform")
        expect(waveform).to_have_attribute("data-ready", "true")
        marks = page.get_by_test_id("sub-segment-mark")
        expect(marks.first).to_be_visible()
        last = marks.nth(marks.count() - 1)
        at_s = int(last.get_attribute("data-at-ms") or 0) / 1000
        last.click()
        wait_player(page, f"!p.paused && p.currentTime >= {at_s - 0.05}")
        page.evaluate(f"() => {{ {PLAYER}.pause(); {PLAYER}.currentTime = 1; }}")
        page.keyboard.press("F2")  # the next stop is the first pause, not the next chunk
        first_s = int(marks.first.get_attribute("data-at-ms") or 0) / 1000
        wait_player(page, f"!p.paused && p.currentTime >= {first_s - 0.05} && p.currentTime < 60")
    finally:
        context.close()


def test_an_unreadable_recording_has_an_empty_waveform(
    served: Served, review_store: ReviewStore, tmp_path: Path
) -> None:
    # ffmpeg decodes nothing of it: no peaks, so no pauses (the marks used to raise: a 500).
    broken = tmp_path / "ward" / "broken.mp3"
    broken.write_bytes(b"not audio at all\n" * 64)
    fingerprint = file_fingerprint(broken)
    item_id = add_transcribed(review_store, str(broken), segments=CHUNKS, **fingerprint)
    with client_of(served, "ann") as ann:
        answer = ann.get(f"/items/{item_id}/peaks")
    assert answer.status_code == 200, answer.text[:200]
    assert (answer.json()["peaks"], answer.json()["marks"]) == ([], [])
