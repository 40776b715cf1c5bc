"""A header whose sample rate no recorder writes (a damaged one: 1 Hz) is refused before
any chunk: ffmpeg takes it at its word, and a few seconds of samples became hours of
audio, hundreds of chunks a run would pay for."""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import pytest

from devserver.tone import encode_tone_dictation
from tasks.audio import iter_chunks
from tasks.audio.ffmpeg import MIN_SPEECH_RATE_HZ
from tasks.audio.length import audio_length_ms
from tasks.errors import CorruptAudio
from tests.flows.prefect_server import MEDASR

SAMPLES = encode_tone_dictation("a rate. of one.", sample_rate_hz=8_000).astype("<i2").tobytes()


def _wav(path: Path, *, rate_hz: int) -> Path:
    """A dictation of 2.9 s at 8 kHz, its header saying `rate_hz`."""
    fmt = struct.pack("<HHIIHH", 1, 1, rate_hz, rate_hz * 2, 2, 16)
    body = b"WAVEfmt " + struct.pack("<I", len(fmt)) + fmt
    body += b"data" + struct.pack("<I", len(SAMPLES)) + SAMPLES
    path.write_bytes(b"RIFF" + struct.pack("<I", len(body)) + body)
    return path


def test_a_one_hertz_header_fails_as_damaged_before_any_chunk(tmp_path: Path) -> None:
    path = _wav(tmp_path / "one-hertz.wav", rate_hz=1)

    with pytest.raises(CorruptAudio) as raised:
        next(iter_chunks(path, max_bytes=5_000_000, timeout_s=60))

    assert "1 Hz" in raised.value.message
    assert str(path) in raised.value.message


def test_split_of_a_one_hertz_header_writes_no_chunk_and_says_why(tmp_path: Path) -> None:
    path, out = _wav(tmp_path / "one-hertz.wav", rate_hz=1), tmp_path / "chunks"

    done = subprocess.run(
        [MEDASR, "split", str(path), "--out", str(out)], capture_output=True, text=True, timeout=120
    )

    assert done.returncode == 1, done.stdout[-500:]
    assert "sample rate of 1 Hz" in done.stderr
    assert not out.exists() or not list(out.glob("chunk-*.wav"))


@pytest.mark.parametrize("rate_hz", [MIN_SPEECH_RATE_HZ, 5_512, 8_000])
def test_low_rates_recorders_do_write_are_still_read(tmp_path: Path, rate_hz: int) -> None:
    path = _wav(tmp_path / f"{rate_hz}.wav", rate_hz=rate_hz)

    chunks = list(iter_chunks(path, max_bytes=5_000_000, timeout_s=60))

    assert sum(chunk.end_ms - chunk.start_ms for chunk in chunks) == pytest.approx(
        len(SAMPLES) // 2 * 1000 / rate_hz, abs=2
    )


def test_the_run_s_audio_cap_does_not_count_a_one_hertz_header_as_hours(tmp_path: Path) -> None:
    """Measured for the cap (MEDASR_PIPELINE__MAX_AUDIO_HOURS_PER_RUN), it fails as
    damaged: counted as hours it would be put back every night, never sent nor failed."""
    path = _wav(tmp_path / "one-hertz.wav", rate_hz=1)

    with pytest.raises(CorruptAudio, match="sample rate of 1 Hz"):
        audio_length_ms(path, timeout_s=60)
