"""Part 1: dictations after long silence are transcribed, not skipped as "silent".

The real `medasr run` against the tone devserver over loopback, real ffmpeg for mp3 and
m4a. Every word comes back; the quiet stretches are not sent (requests are counted in
the devserver's ledger); a truly silent file and a steady tone are skipped with their
reason.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.reliability.corpus import age_files
from tests.reliability.evidence import items
from tests.tasks.audio.room_noise import SR, place, room_noise, tone_speech, write_recording

FIRST = "patient seen on the ward. chest clear. plan to review in the morning."
SECOND = "addendum. bloods came back normal. discharge tomorrow."
LONG = " ".join([FIRST, SECOND, "history of type-2 diabetes on metformin 500mg bd.", FIRST, SECOND])
FORMATS = (".wav", ".mp3", ".m4a")
CAP_S = 156  # the default cap: 5 MB of 16 kHz s16


def _lead_in(lead_s: float, text: str, *, seed: int) -> np.ndarray:
    speech = tone_speech(text)
    return place([(lead_s, speech)], total_s=lead_s + len(speech) / SR + 2, seed=seed)


def _gap(gap_s: float, *, seed: int) -> np.ndarray:
    first, second = tone_speech(FIRST), tone_speech(SECOND)
    second_at = len(first) / SR + gap_s
    return place(
        [(0.0, first), (second_at, second)], total_s=second_at + len(second) / SR + 1, seed=seed
    )


def _quieter_late(*, seed: int) -> np.ndarray:
    loud, quiet = tone_speech(FIRST), tone_speech(SECOND, gain_db=-35)
    return place([(0.0, loud), (400.0, quiet)], total_s=400 + len(quiet) / SR + 1, seed=seed)


def _steady_tone(seconds: float) -> np.ndarray:
    t = np.arange(round(seconds * SR), dtype=np.float32) / SR
    return 0.1 * np.sin(2 * np.pi * 440 * t)


def _run(tmp_path: Path, tone_devserver, medasr_for, files: dict[str, np.ndarray], **env: str):
    root = tmp_path / "ward"
    root.mkdir()
    for name, signal in files.items():
        write_recording(root / name, signal)
    age_files(root)
    database_url = f"sqlite:///{tmp_path / 'medasr.db'}"
    server = tone_devserver()
    done = medasr_for(server, database_url, **env).run("run", str(root), "--language", "en-IN")
    rows = {Path(r["source_uri"]).name: r for r in items(database_url)}
    return done, rows, server


def _assert_transcribed(rows: dict, name: str, text: str, done) -> None:
    row = rows.get(name)
    assert row is not None, (name, sorted(rows), done.describe())
    assert (row["status"], row["text"]) == ("done", text), (name, row, done.describe())


def test_speech_after_ten_minutes_of_noise_quieter_speech_silence_and_tone(
    tmp_path: Path, tone_devserver, medasr_for, figures, prefect_api
) -> None:
    files = {f"lead-in-10min{s}": _lead_in(600, FIRST, seed=i) for i, s in enumerate(FORMATS)}
    files["quieter-late.wav"] = _quieter_late(seed=7)
    files["silent.wav"] = np.zeros(60 * SR, dtype=np.float32)
    files["steady-tone.wav"] = _steady_tone(30)
    files["room-noise.wav"] = room_noise(200, seed=8)

    done, rows, server = _run(tmp_path, tone_devserver, medasr_for, files, **prefect_api)

    for suffix in FORMATS:
        _assert_transcribed(rows, f"lead-in-10min{suffix}", FIRST, done)
    _assert_transcribed(rows, "quieter-late.wav", f"{FIRST} {SECOND}", done)
    for name, says in [
        ("silent.wav", "the whole recording is silent"),
        ("steady-tone.wav", "a steady tone"),
        ("room-noise.wav", "a steady tone, hum or noise"),
    ]:
        row = rows[name]
        assert (row["status"], row["error_kind"]) == ("skipped", "silent_audio"), row
        assert says in row["error_message"]
    # The 10-minute lead-ins are not sent: at most two chunks per stretch of speech.
    assert len(server.ledger) <= 2 * 3 + 2 * 2, [e.filename for e in server.ledger.entries()]
    figures("long-silence", files=len(files), requests=len(server.ledger), lost=0)


@pytest.mark.slow
def test_thirty_minutes_of_noise_then_a_minute_and_a_twenty_minute_gap(
    tmp_path: Path, tone_devserver, medasr_for, figures
) -> None:
    files = {f"lead-in-30min{s}": _lead_in(1800, LONG, seed=10 + i) for i, s in enumerate(FORMATS)}
    files |= {f"gap-20min{s}": _gap(1200, seed=20 + i) for i, s in enumerate(FORMATS)}

    done, rows, server = _run(tmp_path, tone_devserver, medasr_for, files)

    assert done.returncode == 0, done.describe()
    for suffix in FORMATS:
        _assert_transcribed(rows, f"lead-in-30min{suffix}", LONG, done)
        _assert_transcribed(rows, f"gap-20min{suffix}", f"{FIRST} {SECOND}", done)
    audio_s = sum(r["duration_ms"] for r in rows.values()) / 1000
    assert len(server.ledger) <= 6 * 2 + 3, len(server.ledger)
    assert audio_s > 20 * CAP_S  # most of it silence, not sent
    figures("long-silence-slow", files=len(files), requests=len(server.ledger), lost=0)
