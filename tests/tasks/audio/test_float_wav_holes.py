"""A float WAV holding NaN or infinite samples (a plug-in's or a converter's fault) is
read as the speech it holds: a NaN went through the resampler's filter into every
sample near it, so the whole recording was called silent and skipped."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
import soundfile

from devserver.tone import decode_wav_bytes, encode_tone_dictation
from tests.flows.prefect_server import MEDASR

TEXT = "float samples with holes. every word kept."


@pytest.mark.parametrize(("rate_hz", "subtype"), [(44_100, "DOUBLE"), (16_000, "FLOAT")])
def test_medasr_split_reads_the_speech_around_nan_and_infinite_samples(
    tmp_path: Path, rate_hz: int, subtype: str
) -> None:
    samples = encode_tone_dictation(TEXT, sample_rate_hz=rate_hz) / 32768.0
    samples[::997] = np.nan
    samples[500::1999] = np.inf
    samples[700::2003] = -np.inf
    path = tmp_path / "holes.wav"
    soundfile.write(path, samples, rate_hz, subtype=subtype)
    out = tmp_path / "chunks"

    done = subprocess.run(
        [MEDASR, "split", str(path), "--out", str(out)], capture_output=True, text=True, timeout=120
    )

    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr
    wavs = [Path(json.loads(line)["path"]).read_bytes() for line in done.stdout.splitlines()]
    assert " ".join(decode_wav_bytes(wav) for wav in wavs) == TEXT
