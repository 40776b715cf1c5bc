"""Copies of one recording (hard links, re-exports) cost one answer, in the run and the plan."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import soundfile

from service.devserver.tone import encode_tone_dictation
from storage.database import Store
from tasks.transcription import plan as planning
from tasks.transcription.plan import plan_backlog
from tests.tasks.transcription.test_transcribe import CAP_BYTES, TEXT, item_of, run_once

COPIES = 10


def linked_copies(folder: Path, *, copies: int = COPIES) -> Path:
    """`copies` names in day folders for one recording's content (hard links)."""
    original = folder / "2024" / "01" / "01" / "note.wav"
    original.parent.mkdir(parents=True)
    soundfile.write(original, encode_tone_dictation(TEXT), 16000, subtype="PCM_16")
    for i in range(1, copies):
        link = folder / "2024" / "01" / f"{i + 1:02d}" / "note.wav"
        link.parent.mkdir(parents=True)
        os.link(original, link)
    return folder


def test_copies_in_flight_at_once_are_sent_once(
    store: Store, devserver_factory, tmp_path: Path
) -> None:
    folder = linked_copies(tmp_path / "in")
    server = devserver_factory()

    outcomes = run_once(store, server, folder, concurrency=4)

    assert [o.outcome for o in outcomes] == ["done"] * COPIES
    answered = sum(1 for e in server.ledger.entries() if e.status == 200)
    with store.repository() as repo:
        rows = list(repo.export_rows())
    assert {row.text for row in rows} == {TEXT}
    chunks = {row.chunks for row in rows}
    assert answered == len(server.ledger) == chunks.pop()  # one file's chunks, once
    assert item_of(store).text == TEXT


def test_the_dry_run_plans_one_file_for_its_copies(store: Store, tmp_path: Path) -> None:
    folder = linked_copies(tmp_path / "in")
    plans = [
        plan_backlog(
            source=str(folder),
            language="en-IN",
            store=maybe,
            max_wav_bytes=CAP_BYTES,
            min_pause_ms=300,
            settle_s=0,
        )
        for maybe in (None, store)
    ]
    for plan in plans:
        assert (plan.files, plan.to_transcribe, plan.reused) == (COPIES, 1, COPIES - 1)
        assert plan.requests == plan.chunks > 1  # one file's chunks


def test_bounded_map_pulls_only_a_window_ahead_of_its_consumer() -> None:
    pulled: list[int] = []

    def source():  # endless: a map that materialised it would never return
        for i in itertools.count():
            pulled.append(i)
            yield i

    results = planning.bounded_map(lambda x: x * 2, source(), workers=2, ahead=8)
    assert [next(results) for _ in range(5)] == [0, 2, 4, 6, 8]
    assert len(pulled) <= 5 + 8
