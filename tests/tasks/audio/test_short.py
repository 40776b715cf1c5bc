"""A recording too short for any word is skipped as silent, and the message says why."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile

from devserver.tone import encode_tone_dictation
from tasks.audio import iter_chunks
from tasks.errors import SilentAudio


@pytest.mark.parametrize(
    ("samples", "expected_ms"),
    [(encode_tone_dictation("a")[4800:4816], 1), (np.zeros(1600, dtype=np.int16), 100)],
    ids=["1-ms-of-tone", "100-ms-of-nothing"],
)
def test_too_short_recording_is_silent_with_its_length_in_the_message(
    tmp_path: Path, samples: np.ndarray, expected_ms: int
) -> None:
    path = tmp_path / "blip.wav"
    soundfile.write(path, samples, 16000, subtype="PCM_16")

    with pytest.raises(SilentAudio) as caught:
        list(iter_chunks(path, max_bytes=500_000))

    assert str(path) in caught.value.message
    assert f"lasts {expected_ms} ms, too short" in caught.value.message


def test_long_silence_is_still_called_silent(tmp_path: Path) -> None:
    path = tmp_path / "quiet.wav"
    soundfile.write(path, np.zeros(16000 * 2, dtype=np.int16), 16000, subtype="PCM_16")

    with pytest.raises(SilentAudio) as caught:
        list(iter_chunks(path, max_bytes=500_000))

    assert "the whole recording is silent" in caught.value.message


def test_a_loud_steady_tone_is_not_called_silent(tmp_path: Path) -> None:
    """3 s of 440 Hz at -21 dBFS peak: plenty of sound, no speech; still SilentAudio."""
    path = tmp_path / "tone.wav"
    t = np.arange(3 * 16000) / 16000
    soundfile.write(path, 10 ** (-21 / 20) * np.sin(2 * np.pi * 440 * t), 16000, subtype="PCM_16")

    with pytest.raises(SilentAudio) as caught:
        list(iter_chunks(path, max_bytes=500_000))

    assert caught.value.message == (
        f"no speech in {path}: a steady tone, hum or noise at about -24 dBFS "
        "with no variation in level"
    )
    assert caught.value.kind == "silent_audio"
