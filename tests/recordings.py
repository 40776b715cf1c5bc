"""Tone-dictation recordings on disk: files whose transcript the tone engine returns exactly."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import soundfile

from devserver.tone import encode_tone_dictation


def write_tone_wav(path: Path, text: str, *, sample_rate_hz: int = 16_000) -> None:
    """`text` as a 16-bit mono tone-dictation WAV at `path` (folders created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    samples = encode_tone_dictation(text, sample_rate_hz=sample_rate_hz)
    soundfile.write(path, samples, sample_rate_hz, subtype="PCM_16")


def write_tone_recordings(root: Path, texts: Mapping[str, str]) -> Path:
    """One WAV per {relative path: text} under `root`; returns `root`."""
    for name, text in texts.items():
        write_tone_wav(root / name, text)
    return root
