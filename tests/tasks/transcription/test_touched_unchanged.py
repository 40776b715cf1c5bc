"""A file touched with its bytes unchanged (a backup restored, a copy) changes nothing:
its transcript, a reviewer's correction, its status and its retention clock stay.

Real parts: the devserver over a socket, a real WAV on disk, the store on SQLite.
"""

from __future__ import annotations

import os
from pathlib import Path

import soundfile

from devserver.tone import encode_tone_dictation
from storage.interface import UnitOfWorkFactory
from tasks.review.decisions import finalize
from tests.helpers.transcription import TEXT, run_once


def _only_item(store: UnitOfWorkFactory):
    with store.unit_of_work(read_only=True) as uow:
        item = uow.item_queries.get_item(1)
        assert item is not None
        return item


def _recording(tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    folder.mkdir()
    soundfile.write(folder / "note.wav", encode_tone_dictation(TEXT), 16000, subtype="PCM_16")
    return folder


def _touch(folder: Path) -> None:
    note = folder / "note.wav"
    later = note.stat().st_mtime + 3600
    os.utime(note, (later, later))


def test_a_touched_file_keeps_its_correction_status_and_clock(
    store: UnitOfWorkFactory, devserver_factory, tmp_path: Path
) -> None:
    server, folder = devserver_factory(), _recording(tmp_path)
    assert [o.outcome for o in run_once(store, server, folder)] == ["done"]
    before = _only_item(store)
    with store.unit_of_work() as uow:
        finalize(uow, item_id=before.id, text="corrected words", author="dr.a", base_revision=0)
    corrected = _only_item(store)
    requests = len(server.ledger.entries())
    _touch(folder)
    run_once(store, server, folder)
    after = _only_item(store)
    assert (after.status, after.text) == ("done", "corrected words")
    assert after.done_at == corrected.done_at
    assert after.extras.get("review") == corrected.extras.get("review")
    assert [e.path for e in server.ledger.entries()[requests:]] == []  # nothing bought again


def test_a_touched_file_is_not_sent_back_to_review_when_every_note_is_reviewed(
    store: UnitOfWorkFactory, devserver_factory, tmp_path: Path
) -> None:
    server, folder = devserver_factory(), _recording(tmp_path)
    run_once(store, server, folder, hold_all=True)
    held = _only_item(store)
    assert held.status == "needs_review"
    with store.unit_of_work() as uow:
        uow.reviews.accept_review(held.id, by="dr.a")
    accepted = _only_item(store)
    _touch(folder)
    run_once(store, server, folder, hold_all=True)
    after = _only_item(store)
    assert (after.status, after.done_at, after.text) == ("done", accepted.done_at, accepted.text)


def test_a_file_whose_bytes_changed_at_the_same_size_forgets_what_it_held(
    store: UnitOfWorkFactory, devserver_factory, tmp_path: Path
) -> None:
    server, folder = devserver_factory(), _recording(tmp_path)
    run_once(store, server, folder)
    with store.unit_of_work() as uow:
        finalize(uow, item_id=1, text="corrected words", author="dr.a", base_revision=0)
    corrected = _only_item(store)
    note = folder / "note.wav"
    data = bytearray(note.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 2000] = bytes(b ^ 0x55 for b in data[middle : middle + 2000])
    note.write_bytes(bytes(data))
    _touch(folder)
    run_once(store, server, folder)
    after = _only_item(store)
    assert (after.status, after.sha256 != corrected.sha256) == ("done", True)
    assert after.text != "corrected words"
    assert "review" not in after.extras
    assert after.machine_text is None
    assert after.done_at != corrected.done_at
