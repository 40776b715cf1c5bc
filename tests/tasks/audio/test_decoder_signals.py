"""ffmpeg ended by a signal is no verdict on the recording; a terminal's Ctrl-C never reaches it."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import numpy as np
import pytest
import soundfile

from tasks.audio.decoder import PcmDecoder
from tasks.errors import AudioError, DecoderInterrupted


@pytest.fixture
def long_flac(tmp_path: Path) -> Path:
    """A minute of noise at 48 kHz: more decoded bytes than ffmpeg's pipe holds."""
    path = tmp_path / "long.flac"
    rng = np.random.default_rng(0)
    soundfile.write(path, (rng.standard_normal(48_000 * 60) * 3000).astype(np.int16), 48_000)
    return path


def test_ffmpeg_runs_in_a_process_group_of_its_own(long_flac: Path) -> None:
    with PcmDecoder(long_flac, timeout_s=60) as decoder:
        pid = decoder._proc.pid
        assert os.getpgid(pid) == pid  # a terminal signals medasr's group, not this one
        assert os.getpgid(pid) != os.getpgrp()


def test_ffmpeg_killed_by_a_signal_is_an_interruption_not_a_decode_failure(
    long_flac: Path,
) -> None:
    buffer = memoryview(bytearray(1 << 16))
    with PcmDecoder(long_flac, timeout_s=60) as decoder:
        decoder.read_info(head=long_flac.read_bytes()[:4096], timeout_s=60)
        decoder.readinto(buffer)  # decoding has begun; ffmpeg waits on its full pipe
        os.kill(decoder._proc.pid, signal.SIGINT)
        while decoder.readinto(buffer):
            pass
        with pytest.raises(DecoderInterrupted) as raised:
            decoder.finish()
    assert not isinstance(raised.value, AudioError)
    assert raised.value.kind == "decoder_interrupted"
    assert "SIGINT" in str(raised.value)
    assert "stays pending" in str(raised.value)
