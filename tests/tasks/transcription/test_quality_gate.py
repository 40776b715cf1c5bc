"""The quality gate inside transcribe_file: real devserver faults, real ffmpeg, real SQLite."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile

from devserver.tone import encode_tone_dictation
from storage.interface import UnitOfWorkFactory
from tasks.audio import iter_chunks
from tasks.throttle.gate import RequestGate
from tests.helpers.audio import SR, speechlike
from tests.helpers.transcription import TEXT, item_of, run_once


@pytest.fixture
def dictation(tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    folder.mkdir()
    soundfile.write(folder / "note.wav", encode_tone_dictation(TEXT), SR, subtype="PCM_16")
    return folder


def test_speech_answered_with_no_words_waits_for_review_not_done(
    store: UnitOfWorkFactory, devserver_factory, tmp_path: Path
) -> None:
    # Speech-like sound that the tone engine cannot read: the service answers "" for it.
    rng = np.random.default_rng(3)
    gap = np.zeros(SR // 2)
    signal = np.concatenate([part for _ in range(8) for part in (speechlike(1.0, rng=rng), gap)])
    folder = tmp_path / "speech"
    folder.mkdir()
    soundfile.write(folder / "mumble.wav", signal, SR, subtype="PCM_16")
    server = devserver_factory(engine="tone")

    outcomes = run_once(store, server, folder)

    row = item_of(store)
    assert (row.status, row.text) == ("needs_review", "")
    assert row.flags == ["empty_text"]
    assert [o.outcome for o in outcomes] == ["needs_review"]


def test_a_clean_dictation_is_done_without_flags(
    store: UnitOfWorkFactory, devserver_factory, dictation: Path
) -> None:
    outcomes = run_once(store, devserver_factory(), dictation)

    row = item_of(store)
    assert (row.status, row.flags, row.text) == ("done", [], TEXT)
    assert [o.outcome for o in outcomes] == ["done"]


@pytest.mark.parametrize(
    ("fault", "flag"),
    [
        ({"p_empty": 1.0}, "empty_text"),
        ({"p_repeat": 1.0}, "repetition"),
        ({"p_wrong_script": 1.0}, "script_mismatch"),
    ],
    ids=["empty", "repeat", "wrong-script"],
)
def test_each_text_fault_of_the_devserver_is_caught(
    store: UnitOfWorkFactory, devserver_factory, dictation: Path, fault: dict[str, float], flag: str
) -> None:
    server = devserver_factory(**fault)

    run_once(store, server, dictation)

    row = item_of(store)
    assert row.status == "needs_review"
    assert flag in row.flags
    answers = [e for e in server.ledger.entries() if e.status == 200]
    assert answers
    assert all(e.text_fault is not None for e in answers)
    with store.unit_of_work(read_only=True) as uow:
        (item,) = uow.reviews.list_needs_review()
    quality = item.extras["quality"]
    assert quality["chunk_flags"]
    assert all(flag in f for f in quality["chunk_flags"].values())
    assert TEXT.split()[0] not in repr(quality)  # counts only, never the transcript


def test_a_needs_review_recording_is_not_claimed_again(
    store: UnitOfWorkFactory, devserver_factory, dictation: Path
) -> None:
    server = devserver_factory(p_repeat=1.0)
    run_once(store, server, dictation)
    sent = len(server.ledger)

    again = run_once(store, server, dictation)

    assert again == []
    assert len(server.ledger) == sent
    assert item_of(store).status == "needs_review"


def test_resend_sends_every_chunk_again_and_a_clean_answer_is_done(
    store: UnitOfWorkFactory, devserver_factory, dictation: Path
) -> None:
    looping = devserver_factory(p_repeat=1.0)
    run_once(store, looping, dictation)
    row = item_of(store)
    with store.unit_of_work() as uow:
        (flagged,) = uow.reviews.list_needs_review()
        uow.reviews.resend_review(flagged.id)
    healthy = devserver_factory()

    outcomes = run_once(store, healthy, dictation)

    assert [o.outcome for o in outcomes] == ["done"]
    sent_again = [e for e in healthy.ledger.entries() if e.status == 200]
    assert len(sent_again) == row.chunks  # not one chunk reused from the looping answers
    assert (item_of(store).status, item_of(store).text) == ("done", TEXT)


def test_voiced_ms_counts_each_chunks_speech_not_its_pauses(tmp_path: Path) -> None:
    text = "patient stable."  # 14 symbols of 50 ms, 12 gaps of 20 ms inside the words
    speech = encode_tone_dictation(text)
    path = tmp_path / "late.wav"
    soundfile.write(path, np.concatenate([np.zeros(6 * SR, dtype=np.int16), speech]), SR)

    chunks = list(iter_chunks(path, max_bytes=44 + 2 * 3 * SR))  # 3 s chunks

    assert [c.voiced_ms for c in chunks if c.silent] == [0, 0]
    voiced = sum(c.voiced_ms for c in chunks)
    symbols_ms, gaps_ms = 14 * 50, 12 * 20
    assert 0.8 * symbols_ms <= voiced <= symbols_ms + gaps_ms + 14 * 20  # a frame of edge each


def test_a_minute_of_speech_answered_with_a_few_words_waits_for_review(
    store: UnitOfWorkFactory, devserver_factory, tmp_path: Path
) -> None:
    # The hash engine answers 4-11 words whatever the length: far too few for a minute.
    rng = np.random.default_rng(8)
    gap = np.zeros(SR // 4)
    signal = np.concatenate([part for _ in range(40) for part in (speechlike(1.2, rng=rng), gap)])
    folder = tmp_path / "minute"
    folder.mkdir()
    soundfile.write(folder / "minute.wav", signal, SR, subtype="PCM_16")

    # The service's own 5 MB cap: one chunk per 2.6 minutes.
    run_once(
        store,
        devserver_factory(engine="hash"),
        folder,
        gate=RequestGate(concurrency=2),
        cap_bytes=None,
    )

    row = item_of(store)
    assert (row.status, row.flags) == ("needs_review", ["too_few_words"])
    assert 4 <= len(row.text.split()) <= 11
