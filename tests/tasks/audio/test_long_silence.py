"""Speech is found wherever it is: after a long quiet lead-in, between two long gaps, or
35 dB quieter late in the file; only the chunks holding it are marked for sending."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from devserver.tone import decode_wav_bytes
from tasks.audio import Chunk, iter_chunks
from tasks.errors import SilentAudio
from tests.tasks.audio.room_noise import SR, place, room_noise, tone_speech, write_recording

CAP_BYTES = 30 * 2 * SR + 44  # 30 s chunks: a silent stretch is many chunks
FIRST = "patient seen on the ward. chest clear. plan to review in the morning."
SECOND = "addendum. bloods came back normal. discharge tomorrow."


def _spoken(chunks: list[Chunk]) -> tuple[str, float]:
    """The text of the chunks marked for sending, and their audio in seconds."""
    sent = [c for c in chunks if not c.silent]
    text = " ".join(t for t in (decode_wav_bytes(c.wav) for c in sent) if t)
    return text, sum(c.end_ms - c.start_ms for c in sent) / 1000


def _sent_share_bound(speech_s: float, regions: int) -> float:
    """At most the speech plus two chunk caps per speech region is sent."""
    return speech_s + regions * 2 * 30


@pytest.mark.parametrize("suffix", [".wav", ".mp3"])
def test_speech_after_ten_minutes_of_room_noise_is_found(tmp_path: Path, suffix: str) -> None:
    speech = tone_speech(FIRST)
    signal = place([(600.0, speech)], total_s=600 + len(speech) / SR + 2, seed=1)
    path = write_recording(tmp_path / f"lead-in{suffix}", signal)

    chunks = list(iter_chunks(path, max_bytes=CAP_BYTES))

    text, sent_s = _spoken(chunks)
    assert text == FIRST
    assert sent_s <= _sent_share_bound(len(speech) / SR, 1)
    assert sum(c.silent for c in chunks) >= 15  # the lead-in is not sent


def test_speech_at_both_ends_of_a_twenty_minute_gap_is_found(tmp_path: Path) -> None:
    first, second = tone_speech(FIRST), tone_speech(SECOND)
    gap_end_s = len(first) / SR + 1200
    total_s = gap_end_s + len(second) / SR + 1
    path = write_recording(
        tmp_path / "gap.wav", place([(0.0, first), (gap_end_s, second)], total_s=total_s, seed=2)
    )

    chunks = list(iter_chunks(path, max_bytes=CAP_BYTES))

    text, sent_s = _spoken(chunks)
    assert text == f"{FIRST} {SECOND}"
    assert sent_s <= _sent_share_bound((len(first) + len(second)) / SR, 2)


def test_speech_35_db_quieter_late_in_the_file_is_found(tmp_path: Path) -> None:
    loud, quiet = tone_speech(FIRST), tone_speech(SECOND, gain_db=-35)
    total_s = 400 + len(quiet) / SR + 1
    path = write_recording(
        tmp_path / "quieter.wav", place([(0.0, loud), (400.0, quiet)], total_s=total_s, seed=3)
    )

    chunks = list(iter_chunks(path, max_bytes=CAP_BYTES))

    text, _ = _spoken(chunks)
    assert text == f"{FIRST} {SECOND}"


def test_room_noise_alone_is_silent_over_the_whole_file(tmp_path: Path) -> None:
    path = write_recording(tmp_path / "noise.wav", room_noise(300, seed=4))

    with pytest.raises(SilentAudio) as caught:
        list(iter_chunks(path, max_bytes=CAP_BYTES))

    assert "steady tone, hum or noise" in caught.value.message


def test_decisions_do_not_depend_on_the_cap_history(tmp_path: Path) -> None:
    """The same file split twice gives the same chunks, and nothing is lost or repeated."""
    speech = tone_speech(FIRST)
    path = write_recording(tmp_path / "again.wav", place([(200.0, speech)], total_s=230, seed=5))
    first = list(iter_chunks(path, max_bytes=CAP_BYTES))
    second = list(iter_chunks(path, max_bytes=CAP_BYTES))
    assert [(c.start_sample, c.end_sample, c.silent) for c in first] == [
        (c.start_sample, c.end_sample, c.silent) for c in second
    ]
    assert first[0].start_sample == 0
    assert all(a.end_sample == b.start_sample for a, b in itertools.pairwise(first))
    assert first[-1].end_sample == len(np.clip(place([], total_s=230, seed=5), -1, 1))
