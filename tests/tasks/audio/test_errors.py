"""Bad input: one typed error per kind, a one-line sentence naming the file, no traceback."""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import soundfile

from tasks.audio import iter_chunks, probe_audio
from tasks.audio.ffmpeg import summarize_stderr
from tasks.errors import (
    AudioError,
    AudioNotFound,
    CorruptAudio,
    DamagedTail,
    DecodeFailed,
    EmptyAudio,
    NotAudio,
    UnsupportedAudio,
)
from tests.helpers.audio import Dictation, ffmpeg


def _wav_header(*, format_tag: int, data_bytes: int, declared_bytes: int | None = None) -> bytes:
    declared = data_bytes if declared_bytes is None else declared_bytes
    fmt = struct.pack("<IHHIIHH", 16, format_tag, 1, 16000, 32000, 2, 16)
    riff = 4 + 8 + len(fmt) - 4 + 8 + declared
    return (
        b"RIFF"
        + struct.pack("<I", riff)
        + b"WAVE"
        + b"fmt "
        + fmt
        + b"data"
        + struct.pack("<I", declared)
    )


def _cut(source: Path, target: Path, *, keep: float) -> Path:
    data = source.read_bytes()
    target.write_bytes(data[: int(len(data) * keep)])
    return target


def _missing(tmp: Path, d: Dictation) -> Path:
    return tmp / "nowhere" / "missing.wav"


def _directory(tmp: Path, d: Dictation) -> Path:
    # As root chmod 000 does not stop a read; a directory is the unreadable path we can make.
    (tmp / "folder.wav").mkdir()
    return tmp / "folder.wav"


def _fifo(tmp: Path, d: Dictation) -> Path:
    os.mkfifo(tmp / "pipe.wav")  # opening it would block forever: must be refused, not read
    return tmp / "pipe.wav"


def _text(tmp: Path, d: Dictation) -> Path:
    path = tmp / "notes.wav"
    path.write_text("Patient notes, not a recording.\n" * 50)
    return path


def _png(tmp: Path, d: Dictation) -> Path:
    path = tmp / "scan.mp3"
    ffmpeg("-f", "lavfi", "-i", "testsrc=size=64x64:duration=1", "-frames:v", "1", "-f", "image2",
           "-c:v", "png", str(path))  # fmt: skip
    return path


def _video(tmp: Path, d: Dictation) -> Path:
    path = tmp / "clip.m4a"
    ffmpeg("-f", "lavfi", "-i", "testsrc=size=64x64:duration=1", "-c:v", "mpeg4", "-f", "mp4",
           str(path))  # fmt: skip
    return path


def _zero_bytes(tmp: Path, d: Dictation) -> Path:
    path = tmp / "zero.mp3"
    path.touch()
    return path


def _zero_samples(tmp: Path, d: Dictation) -> Path:
    path = tmp / "nothing.wav"
    soundfile.write(path, np.zeros(0, dtype=np.int16), 16000, subtype="PCM_16")
    return path


def _garbage(tmp: Path, d: Dictation) -> Path:
    path = tmp / "garbage.wav"
    path.write_bytes(np.random.default_rng(0).bytes(20_000))
    return path


def _unknown_codec(tmp: Path, d: Dictation) -> Path:
    path = tmp / "codec.wav"
    path.write_bytes(_wav_header(format_tag=0x1234, data_bytes=32_000) + bytes(32_000))
    return path


def _truncated_mp3(tmp: Path, d: Dictation) -> Path:
    return _cut(d.mp3, tmp / "cut.mp3", keep=0.5)


def _truncated_m4a(tmp: Path, d: Dictation) -> Path:
    return _cut(d.m4a, tmp / "cut.m4a", keep=0.5)  # the index at the end is gone


def _truncated_faststart_m4a(tmp: Path, d: Dictation) -> Path:
    return _cut(d.m4a_faststart, tmp / "cutfast.m4a", keep=0.5)


def _truncated_wav(tmp: Path, d: Dictation) -> Path:
    return _cut(d.wav, tmp / "cut.wav", keep=0.5)


def _header_only_m4a(tmp: Path, d: Dictation) -> Path:
    return _cut(d.m4a_faststart, tmp / "head.m4a", keep=0.004)


CASES: list[tuple[str, Callable[[Path, Dictation], Path], type[AudioError], str]] = [
    ("missing", _missing, AudioNotFound, "not found"),
    ("directory", _directory, AudioNotFound, "directory"),
    ("fifo", _fifo, AudioNotFound, "not a regular file"),
    ("text-named-wav", _text, NotAudio, "not an audio file"),
    ("png-named-mp3", _png, NotAudio, "no audio stream"),
    ("video-without-sound", _video, NotAudio, "no audio stream"),
    ("zero-bytes", _zero_bytes, EmptyAudio, "0 bytes"),
    ("zero-sample-wav", _zero_samples, EmptyAudio, "no samples"),
    ("random-bytes", _garbage, UnsupportedAudio, "unrecognized"),
    ("unknown-wav-codec", _unknown_codec, UnsupportedAudio, "unsupported audio codec"),
    ("truncated-mp3", _truncated_mp3, CorruptAudio, "truncated"),
    ("truncated-m4a", _truncated_m4a, CorruptAudio, "moov atom not found"),
    ("truncated-faststart-m4a", _truncated_faststart_m4a, CorruptAudio, "truncated"),
    ("truncated-wav", _truncated_wav, CorruptAudio, "truncated"),
    ("header-only-m4a", _header_only_m4a, CorruptAudio, "truncated"),
]


def _assert_human(error: AudioError, path: Path, expected: type[AudioError], words: str) -> None:
    assert type(error) is expected
    message = str(error)
    assert words in message
    assert message.count(str(path)) == 1  # ffmpeg's "Error opening input file PATH." dropped
    assert "\n" not in message
    assert "Traceback" not in message
    assert len(message) < 400
    assert error.transient is False
    assert error.path == str(path)


# Truncated, but what precedes the damage decodes: kept, then DamagedTail (issue 12).
READABLE_PART = (_truncated_mp3, _truncated_faststart_m4a)


@pytest.mark.parametrize(
    ("make", "expected", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_iter_chunks_raises_typed_error_before_any_chunk(
    tmp_path: Path,
    dictation: Dictation,
    make: Callable[[Path, Dictation], Path],
    expected: type[AudioError],
    words: str,
) -> None:
    path = make(tmp_path, dictation)
    chunks = iter_chunks(path, max_bytes=500_000, timeout_s=30)
    if make in READABLE_PART:  # the readable chunks come first, then where the damage is
        readable: list[object] = []
        with pytest.raises(DamagedTail) as damaged:
            readable.extend(chunks)
        assert readable
        assert isinstance(damaged.value, expected)
        _assert_human(damaged.value, path, DamagedTail, words)
        return
    with pytest.raises(AudioError) as caught:
        next(chunks)
    _assert_human(caught.value, path, expected, words)


@pytest.mark.parametrize(
    ("make", "expected", "words"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_probe_audio_raises_the_same_error(
    tmp_path: Path,
    dictation: Dictation,
    make: Callable[[Path, Dictation], Path],
    expected: type[AudioError],
    words: str,
) -> None:
    path = make(tmp_path, dictation)
    with pytest.raises(AudioError) as caught:
        probe_audio(path)
    _assert_human(caught.value, path, expected, words)


@pytest.mark.parametrize(
    ("make", "_expected", "_words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_the_decode_words_its_errors_exactly_as_the_probe(
    tmp_path: Path,
    dictation: Dictation,
    make: Callable[[Path, Dictation], Path],
    _expected: type[AudioError],
    _words: str,
) -> None:
    """iter_chunks reads the input's description from the decoding ffmpeg itself (no probe
    run): same type, same sentence as probe_audio, before any chunk."""
    path = make(tmp_path, dictation)
    with pytest.raises(AudioError) as probed:
        probe_audio(path)
    before: list[object] = []
    with pytest.raises(AudioError) as decoded:
        before.extend(iter_chunks(path, max_bytes=500_000, timeout_s=30))
    assert bool(before) == (make in READABLE_PART)  # chunks before the error only if readable
    expected_type = DamagedTail if make in READABLE_PART else type(probed.value)
    assert (type(decoded.value), str(decoded.value)) == (expected_type, str(probed.value))


def test_kinds_are_stable() -> None:
    kinds = {cls.kind for cls in (AudioNotFound, NotAudio, CorruptAudio, EmptyAudio,
                                  UnsupportedAudio, DecodeFailed)}  # fmt: skip
    assert kinds == {"audio_not_found", "not_audio", "corrupt_audio", "empty_audio",
                     "unsupported_audio", "decode_failed"}  # fmt: skip


def test_damage_found_only_by_decoding_is_raised_before_the_last_chunk(tmp_path: Path) -> None:
    """A FLAC whose header promises more samples than it holds probes fine."""
    source = tmp_path / "long.wav"
    rng = np.random.default_rng(3)
    soundfile.write(source, rng.normal(0, 0.1, 60 * 16000), 16000, subtype="PCM_16")
    flac = tmp_path / "long.flac"
    ffmpeg("-i", str(source), str(flac))
    cut = _cut(flac, tmp_path / "cut.flac", keep=0.5)
    probe_audio(cut)  # FLAC keeps no size to compare: only the decode can tell
    seen = []
    with pytest.raises(CorruptAudio, match=r"only .* s decode"):
        seen.extend(iter_chunks(cut, max_bytes=500_000))
    assert len(seen) >= 1  # sound chunks came before the damage was known


def test_stderr_summary_is_one_short_line() -> None:
    stderr = (
        "[in#0 @ 0x55] moov atom not found\n"
        "[in#0 @ 0x55] Error opening input: Invalid data found when processing input\n"
        "Error opening input file x.\n"
        + "[aac @ 0x1] Invalid data found when processing input\n"
        * 50
    )
    line = summarize_stderr(stderr)
    assert "\n" not in line
    assert line.startswith("moov atom not found; Error opening input")
    assert len(line) <= 200


def test_stderr_summary_drops_the_generic_open_lines_when_a_specific_one_exists() -> None:
    stderr = (
        "[in#0 @ 0x55] Error opening input: Permission denied\n"
        "Error opening input file file:/data/dictations/a.mp3.\n"
        "Error opening input files: Permission denied\n"
    )
    assert summarize_stderr(stderr) == "Error opening input: Permission denied"


def test_stderr_summary_keeps_the_generic_open_lines_when_nothing_else_is_said() -> None:
    stderr = "Error opening input file file:/x.mp3.\nError opening input files: I/O error\n"
    assert summarize_stderr(stderr) == (
        "Error opening input file file:/x.mp3.; Error opening input files: I/O error"
    )
