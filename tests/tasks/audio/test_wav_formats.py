"""What recorders write is read without ffmpeg: 8/16/24/32-bit PCM and 32/64-bit float
WAVs, plain or WAVE_FORMAT_EXTENSIBLE, mono or stereo, 8-96 kHz.

The oracle is the naive script's own command, `ffmpeg -i F -ac 1 -ar 16000`: at 16 kHz
mono medasr sends ffmpeg's bytes exactly; at any other rate or in stereo, the same number
of samples within a fraction of a step of ffmpeg's (tasks/audio/resampler.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile

from devserver.tone import encode_tone_dictation
from tasks.audio.decoder import PcmDecoder
from tasks.audio.length import audio_length_ms
from tasks.audio.native_wav import open_pcm_source
from tasks.errors import DecodeFailed
from tests.helpers.audio import assert_close_to_reference, ffmpeg, reference_pcm
from tests.helpers.native_wav import TEXT, pcm_of

SUBTYPES = ("PCM_U8", "PCM_16", "PCM_24", "PCM_32", "FLOAT", "DOUBLE")
_FFMPEG_CODECS = {"PCM_U8": "pcm_u8", "PCM_16": "pcm_s16le", "PCM_24": "pcm_s24le",
                  "PCM_32": "pcm_s32le", "FLOAT": "pcm_f32le", "DOUBLE": "pcm_f64le"}  # fmt: skip


def _write(path: Path, *, subtype: str, rate_hz: int, channels: int, by: str) -> None:
    """TEXT as a tone dictation at 0.9 of full scale; the second channel differs from the
    first (a downmix that took one channel fails). `by`: soundfile or ffmpeg, whose WAV
    muxer writes WAVE_FORMAT_EXTENSIBLE for more than 16 bits or 48 kHz."""
    mono = encode_tone_dictation(TEXT, sample_rate_hz=rate_hz).astype(np.float64) * 0.9 / 32768
    frames = np.stack([mono, 0.6 * mono[::-1]], axis=1)[:, :channels]
    if by == "soundfile":
        soundfile.write(path, frames, rate_hz, subtype=subtype)
        return
    source = path.with_suffix(".source.wav")
    soundfile.write(source, frames, rate_hz, subtype="DOUBLE")
    ffmpeg("-i", str(source), "-c:a", _FFMPEG_CODECS[subtype], str(path))
    source.unlink()


def _opened(path: Path) -> object:
    _, exact, source = open_pcm_source(path, timeout_s=60, probe_timeout_s=60)
    source.close()
    assert exact
    return source


@pytest.mark.parametrize("by", ["soundfile", "ffmpeg"])
@pytest.mark.parametrize("subtype", SUBTYPES)
def test_16k_mono_of_any_sample_format_is_ffmpegs_bytes_exactly(
    tmp_path: Path, subtype: str, by: str
) -> None:
    path = tmp_path / "note.wav"
    _write(path, subtype=subtype, rate_hz=16_000, channels=1, by=by)
    assert not isinstance(_opened(path), PcmDecoder)  # no ffmpeg process
    pcm, text = pcm_of(path, max_bytes=100_000)
    assert np.array_equal(pcm, reference_pcm(path))
    assert text == TEXT


@pytest.mark.parametrize(
    ("rate_hz", "channels", "by"),
    [(8_000, 1, "soundfile"), (16_000, 2, "soundfile"), (44_100, 2, "ffmpeg"),
     (48_000, 2, "soundfile"), (48_000, 1, "ffmpeg"), (96_000, 2, "ffmpeg")],
)  # fmt: skip
@pytest.mark.parametrize("subtype", SUBTYPES)
def test_other_rates_and_stereo_agree_with_ffmpeg_sample_for_sample(
    tmp_path: Path, subtype: str, rate_hz: int, channels: int, by: str
) -> None:
    path = tmp_path / "note.wav"
    _write(path, subtype=subtype, rate_hz=rate_hz, channels=channels, by=by)
    assert not isinstance(_opened(path), PcmDecoder)
    pcm, text = pcm_of(path, max_bytes=100_000)  # several chunks: blocks fall mid-stream
    assert_close_to_reference(pcm, path)
    assert abs(audio_length_ms(path) - len(pcm) * 1000 // 16_000) <= 1
    if channels == 1:  # the reversed second channel is no dictation
        assert text == TEXT


def test_an_unusual_speaker_mask_goes_to_ffmpeg_and_meets_its_verdict(tmp_path: Path) -> None:
    path = tmp_path / "rear.wav"
    _write(path, subtype="PCM_24", rate_hz=16_000, channels=2, by="ffmpeg")
    raw = bytearray(path.read_bytes())
    mask_at = raw.index(b"fmt ") + 8 + 20
    raw[mask_at : mask_at + 4] = (0x1 | 0x4).to_bytes(4, "little")  # front left and centre
    path.write_bytes(bytes(raw))
    assert isinstance(_opened(path), PcmDecoder)
    with pytest.raises(DecodeFailed, match=r"FL\+FC.* is not supported"):  # ffmpeg's own
        pcm_of(path)
