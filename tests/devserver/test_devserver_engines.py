"""Deterministic engines behind one interface: tone decoding, hash words, and the fallback."""

from __future__ import annotations

import io

import numpy as np
import pytest
import soundfile

from config.errors import ConfigError
from devserver.engines import (
    DefaultEngine,
    Engine,
    HashEngine,
    ToneEngine,
    UnreadableAudio,
    make_engine,
    read_wav,
)
from devserver.tone import decode_tone_dictation
from tests.servers import make_tone_wav_bytes, make_wav_bytes

TEXT = "bp 130/85, pulse 72. review in 3 days"


def test_every_engine_fits_the_interface() -> None:
    engines: list[Engine] = [make_engine(name) for name in ("default", "tone", "hash")]
    assert [type(e) for e in engines] == [DefaultEngine, ToneEngine, HashEngine]
    with pytest.raises(ConfigError, match="unknown engine"):
        make_engine("whisper")


def test_tone_engine_decodes_exactly() -> None:
    assert ToneEngine().transcribe(make_tone_wav_bytes(TEXT), language="en-IN") == TEXT


@pytest.mark.parametrize("sample_rate_hz", [8_000, 44_100])
def test_tone_engine_at_other_rates_and_in_stereo(sample_rate_hz: int) -> None:
    wav = make_tone_wav_bytes("stat dose", sample_rate_hz=sample_rate_hz)
    samples, rate = soundfile.read(io.BytesIO(wav), dtype="int16")
    stereo = io.BytesIO()
    soundfile.write(stereo, np.stack([samples, samples], axis=1), rate, format="WAV")
    assert ToneEngine().transcribe(stereo.getvalue(), language="hi") == "stat dose"


def test_hash_engine_is_deterministic_and_tells_audio_apart() -> None:
    engine = HashEngine()
    one, other = make_wav_bytes(seconds=0.2, seed=1), make_wav_bytes(seconds=0.2, seed=2)
    text = engine.transcribe(one, language="en-IN")
    assert text == engine.transcribe(one, language="ta")
    assert text != engine.transcribe(other, language="en-IN")
    assert 4 <= len(text.split()) <= 11


def test_default_engine_prefers_tone_and_falls_back_to_hash() -> None:
    engine, noise = DefaultEngine(), make_wav_bytes(seconds=0.5)
    assert engine.transcribe(make_tone_wav_bytes(TEXT), language="en-IN") == TEXT
    assert engine.transcribe(noise, language="en-IN") == HashEngine().transcribe(
        noise, language="x"
    )
    assert ToneEngine().transcribe(noise, language="en-IN") == ""


@pytest.mark.parametrize("payload", [b"", b"RIFF\x00\x00", b"\x00" * 100], ids=repr)
def test_unreadable_audio_is_a_typed_error(payload: bytes) -> None:
    with pytest.raises(UnreadableAudio):
        read_wav(payload)


@pytest.mark.parametrize("sample_rate_hz", [1, 100, 7_999])
def test_rates_below_8_khz_are_unreadable_for_every_engine(sample_rate_hz: int) -> None:
    buffer = io.BytesIO()
    soundfile.write(buffer, np.zeros(800, dtype=np.int16), sample_rate_hz, format="WAV")
    with pytest.raises(UnreadableAudio, match="at least 8000 Hz"):
        read_wav(buffer.getvalue())
    for name in ("default", "tone"):
        with pytest.raises(UnreadableAudio):
            make_engine(name).transcribe(buffer.getvalue(), language="en-IN")
    with pytest.raises(ValueError, match="at least 8000 Hz"):
        decode_tone_dictation(np.zeros(800, dtype=np.int16), sample_rate_hz=sample_rate_hz)
