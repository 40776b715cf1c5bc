"""Deterministic transcription engines behind one small interface (a real one can plug in)."""

from __future__ import annotations

import hashlib
import io
from typing import Final, Protocol

import numpy as np
import soundfile

from config.errors import ConfigError
from devserver.tone import MIN_SAMPLE_RATE_HZ, decode_tone_dictation

_WAV_FORMATS: Final = frozenset({"WAV", "WAVEX"})

# Words for the hash engine: plausible dictation, no meaning, stable forever.
_VOCABULARY: Final = (
    "patient", "presents", "with", "mild", "chest", "pain", "no", "fever", "blood",
    "pressure", "normal", "heart", "rate", "regular", "lungs", "clear", "abdomen", "soft",
    "tender", "history", "of", "diabetes", "hypertension", "prescribed", "metformin",
    "amlodipine", "twice", "daily", "follow", "up", "in", "two", "weeks", "review",
    "labs", "ecg", "shows", "sinus", "rhythm", "advised", "rest", "fluids", "cough",
    "since", "three", "days", "allergies", "none", "known", "plan", "continue", "current",
    "medication", "refer", "cardiology", "x-ray", "unremarkable", "pulse", "oximetry",
    "ninety", "eight", "percent", "discharge", "stable",
)  # fmt: skip


class UnreadableAudio(ValueError):
    """The upload is not a WAV file that libsndfile can read."""


class Engine(Protocol):
    """Turns one uploaded WAV into text."""

    def transcribe(self, wav: bytes, *, language: str) -> str:
        """The text of `wav`; raises UnreadableAudio when it is not a readable WAV."""
        ...


def read_wav(wav: bytes) -> tuple[np.ndarray, int]:
    """(int16 mono samples, sample rate Hz >= 8000) of a WAV; raises UnreadableAudio."""
    try:
        with soundfile.SoundFile(io.BytesIO(wav)) as sound:
            if sound.format not in _WAV_FORMATS:
                raise UnreadableAudio(f"the upload is {sound.format}, not WAV")
            samples = sound.read(dtype="int16", always_2d=True)
            sample_rate_hz = int(sound.samplerate)
    except (RuntimeError, TypeError) as exc:  # LibsndfileError is a RuntimeError
        raise UnreadableAudio("the upload is not a WAV file this server can read") from exc
    if sample_rate_hz < MIN_SAMPLE_RATE_HZ:
        raise UnreadableAudio(
            f"the upload's sample rate is {sample_rate_hz} Hz; "
            f"this server needs at least {MIN_SAMPLE_RATE_HZ} Hz"
        )
    if samples.shape[1] == 1:
        return samples[:, 0], sample_rate_hz
    mixed = np.rint(samples.astype(np.float64).mean(axis=1))
    return mixed.astype(np.int16), sample_rate_hz


class HashEngine:
    """Words picked by the audio's sha256: the same audio always gives the same text."""

    def transcribe(self, wav: bytes, *, language: str) -> str:
        """4-11 vocabulary words derived from sha256(wav)."""
        digest = hashlib.sha256(wav).digest()
        count = 4 + digest[0] % 8
        return " ".join(_VOCABULARY[byte % len(_VOCABULARY)] for byte in digest[1 : 1 + count])


class ToneEngine:
    """Decodes synthetic tone dictation back to its text exactly."""

    def transcribe(self, wav: bytes, *, language: str) -> str:
        """The decoded text ('' when the audio holds no tone symbols)."""
        samples, sample_rate_hz = read_wav(wav)
        return decode_tone_dictation(samples, sample_rate_hz=sample_rate_hz)


class DefaultEngine:
    """Tone decoding, falling back to the hash engine's words when no tone text is found."""

    def __init__(self) -> None:
        self._tone = ToneEngine()
        self._hash = HashEngine()

    def transcribe(self, wav: bytes, *, language: str) -> str:
        """Tone text if any, else hash words."""
        text = self._tone.transcribe(wav, language=language)
        return text if text.strip() else self._hash.transcribe(wav, language=language)


def make_engine(name: str) -> Engine:
    """The engine called `name` ("default", "tone", "hash"); raises ConfigError otherwise."""
    engines: dict[str, type[DefaultEngine] | type[ToneEngine] | type[HashEngine]] = {
        "default": DefaultEngine,
        "tone": ToneEngine,
        "hash": HashEngine,
    }
    if name not in engines:
        raise ConfigError(f"devserver: unknown engine {name!r} (use {sorted(engines)})")
    return engines[name]()
