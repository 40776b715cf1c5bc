"""The decoder's own paths, driven by a fake ffmpeg: a decode that hangs after a good start
is killed on its timeout and reaped; one that fails says ffmpeg's words; one ffmpeg
process per file describes the input and decodes it."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile

import tasks.audio.ffmpeg
from devserver.tone import encode_tone_dictation
from tasks.audio import WAV_HEADER_BYTES, iter_chunks
from tasks.audio.decoder import FfmpegLog
from tasks.errors import DecodeFailed
from tests.helpers.audio import (
    Dictation,
    assert_no_child_left,
    children_pids,
    process_state,
    reference_pcm,
)

# Talks like ffmpeg 7+ on stderr (with `-loglevel level+info` it tags each line with its
# level, at `-loglevel error` it prints errors only); the input is a healthy 3 s WAV.
# A run without an output ("ffmpeg -i PATH", the probe) ends there, a decode goes on
# with DECODE.
FAKE = """\
#!{python} -I
import os, sys, time
args = sys.argv[1:]
level = args[args.index("-loglevel") + 1] if "-loglevel" in args else "info"
with open({pid_file!r}, "a") as handle:
    handle.write(f"{{os.getpid()}}\\n")

def say(kind, text):
    if level.endswith("error") and kind not in ("error", "fatal"):
        return
    sys.stderr.write((f"[{{kind}}] " if level.startswith("level+") else "") + text + "\\n")
    sys.stderr.flush()

say("info", f"Input #0, wav, from '{{args[args.index('-i') + 1]}}':")
say("info", "  Duration: 00:00:03.00, bitrate: 256 kb/s")
say("info", "  Stream #0:0: Audio: pcm_s16le ([1][0][0][0] / 0x0001), 16000 Hz, mono, "
            "s16, 256 kb/s")
if "pipe:1" not in args:
    say("fatal", "At least one output file must be specified")
    sys.exit(1)
{decode}
"""
MAPPING = """\
say("info", "Stream mapping:")
say("info", "  Stream #0:0 -> #0:0 (pcm_s16le (native) -> pcm_s16le (native))")
"""
HANG = MAPPING + "time.sleep(120)"
FAIL = (
    MAPPING
    + """\
sys.stdout.buffer.write(bytes(6400))
sys.stdout.flush()
say("error", "[pcm_s16le @ 0x5] the tape deck caught fire at 0.2 s")
say("error", "Conversion failed!")
sys.exit(1)
"""
)


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    """A 3 s 8 kHz A-law WAV: not PCM, so it goes through ffmpeg."""
    path = tmp_path / "in.wav"
    soundfile.write(path, np.zeros(3 * 8000, dtype=np.int16), 8000, subtype="ALAW")
    return path


def _install_fake(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, decode: str
) -> tuple[Path, Path]:
    """Write the fake and make tasks.audio.ffmpeg use it; (script, file of the pids it ran as)."""
    pid_file = tmp_path / "fake-pids.txt"
    script = tmp_path / "ffmpeg"
    script.write_text(FAKE.format(python=sys.executable, pid_file=str(pid_file), decode=decode))
    script.chmod(0o700)
    # find_ffmpeg is functools.cache'd; replacing the module attribute bypasses the cache.
    monkeypatch.setattr(tasks.audio.ffmpeg, "find_ffmpeg", lambda: str(script))
    return script, pid_file


def _pids(pid_file: Path) -> list[int]:
    return [int(line) for line in pid_file.read_text().split()]


def test_a_hanging_decode_is_killed_on_its_timeout_and_reaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recording: Path
) -> None:
    _, pid_file = _install_fake(tmp_path, monkeypatch, decode=HANG)
    before = children_pids()
    with pytest.raises(DecodeFailed) as caught:
        list(iter_chunks(recording, max_bytes=500_000, timeout_s=1.5))
    assert str(caught.value) == (
        f"ffmpeg did not finish decoding {recording} within 1.5 s"  # not "probing"
    )
    decoder_pid = _pids(pid_file)[-1]
    assert process_state(decoder_pid) is None  # killed and reaped: no zombie
    assert_no_child_left(before)


def test_a_failing_decode_raises_decode_failed_with_ffmpeg_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recording: Path
) -> None:
    _, pid_file = _install_fake(tmp_path, monkeypatch, decode=FAIL)
    before = children_pids()
    with pytest.raises(DecodeFailed) as caught:
        list(iter_chunks(recording, max_bytes=500_000, timeout_s=30))
    message = str(caught.value)
    assert message == (
        f"ffmpeg failed to decode {recording} (exit 1: the tape deck caught fire at 0.2 s; "
        "Conversion failed!)"
    )
    assert caught.value.kind == "decode_failed"
    assert all(process_state(pid) is None for pid in _pids(pid_file))
    assert_no_child_left(before)


def test_one_ffmpeg_run_describes_and_decodes_a_compressed_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dictation: Dictation
) -> None:
    """No separate probe run: one process start per file (~10-20 ms of CPU each)."""
    pid_file = tmp_path / "pids.txt"
    wrapper = tmp_path / "ffmpeg"
    real = tasks.audio.ffmpeg.find_ffmpeg()
    wrapper.write_text(f'#!/bin/sh\necho $$ >> "{pid_file}"\nexec "{real}" "$@"\n')
    wrapper.chmod(0o700)
    monkeypatch.setattr(tasks.audio.ffmpeg, "find_ffmpeg", lambda: str(wrapper))
    chunks = list(iter_chunks(dictation.mp3, max_bytes=2_000_000))
    pcm = np.concatenate([np.frombuffer(c.wav[WAV_HEADER_BYTES:], np.int16) for c in chunks])
    assert len(_pids(pid_file)) == 1
    assert np.array_equal(pcm, reference_pcm(dictation.mp3))


def test_samples_written_before_the_end_of_the_description_are_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recording: Path
) -> None:
    """An ffmpeg that starts writing samples without printing "Stream mapping:" first."""
    samples = np.zeros(3 * 16000, dtype="<i2")  # the 3 s the fake's header promises
    tone = encode_tone_dictation("early samples", sample_rate_hz=16000)[: len(samples)]
    samples[: len(tone)] = tone
    raw = tmp_path / "samples.raw"
    raw.write_bytes(samples.tobytes())
    write = f"sys.stdout.buffer.write(open({str(raw)!r}, 'rb').read())\n"
    _install_fake(tmp_path, monkeypatch, decode=write)
    chunks = list(iter_chunks(recording, max_bytes=500_000, timeout_s=30))
    pcm = np.concatenate([np.frombuffer(c.wav[WAV_HEADER_BYTES:], np.int16) for c in chunks])
    assert np.array_equal(pcm, samples)


def test_log_keeps_the_description_and_only_error_lines_both_bounded() -> None:
    log = FfmpegLog()
    log.feed(b"[info] Input #0, mp3, from 'file:/x.mp3':\n[info]   Metadata:\n")
    for number in range(5000):  # a long tag list: far past the header budget
        log.feed(b"[info]     comment-%d     : " % number + b"x" * 40 + b"\n")
    log.feed(b"[info]   Duration: 00:00:15.00, start: 0.0, bitrate: 64 kb/s\n[info]   Str")
    log.feed(b"eam #0:0: Audio: mp3 (mp3float), 44100 Hz, stereo, fltp, 64 kb/s\n")
    log.feed(b"[mp3float @ 0x5] [error] Header missing\n[warning] not kept\n")
    log.feed(b"[info] Stream mapping:\n[info] Output #0, s16le, to 'pipe:1':\n")
    log.feed(b"[fatal] Conversion failed!\n[info] size=     469KiB\r")
    log.close()
    header = log.header.decode()
    assert log.header_done
    assert len(header) <= 2 * 64 * 1024
    assert "  Duration: 00:00:15.00" in header
    assert "  Stream #0:0: Audio: mp3 (mp3float), 44100 Hz" in header
    assert "[error]" not in header
    assert "Output #0" not in header
    assert log.errors.decode() == "[mp3float @ 0x5] Header missing\nConversion failed!\n"
