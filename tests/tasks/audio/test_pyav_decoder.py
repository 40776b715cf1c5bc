"""Short mp3 and m4a files are decoded in this process (PyAV), as the ffmpeg command would;
whatever is not plainly well-formed still goes to ffmpeg and meets the same errors.

The oracle is the naive script's own command, `ffmpeg -i F -ac 1 -ar 16000`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile

from service.devserver.tone import encode_tone_dictation
from tasks.audio import iter_chunks, probe_audio
from tasks.audio import native_wav as sources
from tasks.audio.ffmpeg import read_head
from tasks.audio.pyav_decoder import MAX_DURATION_MS, DecodedPcm, decode_in_process
from tasks.errors import AudioError
from tests.helpers.audio import ffmpeg, reference_pcm
from tests.helpers.native_wav import TEXT, pcm_of

_ENCODERS = {
    ".mp3": ("-c:a", "libmp3lame", "-b:a", "64k"),
    ".m4a": ("-c:a", "aac", "-b:a", "48k", "-movflags", "+faststart"),
    ".ogg": ("-c:a", "libvorbis"),
}


def _encode(path: Path, *, rate_hz: int = 22_050, channels: int = 1, pad_s: float = 0.0) -> Path:
    """TEXT as a tone dictation (after `pad_s` of quiet noise), encoded by `path`'s suffix."""
    mono = encode_tone_dictation(TEXT, sample_rate_hz=rate_hz).astype(np.float64)
    noise = np.random.default_rng(5).normal(0, 200, int(pad_s * rate_hz))
    # Loud to its last sample: the resampler's last outputs depend on where the input ends.
    t = np.arange(int(0.4 * rate_hz)) / rate_hz
    ending = 12_000 * np.sin(2 * np.pi * (300 + 400 * t) * t)
    mono = np.concatenate([noise, mono, ending])
    frames = np.stack([mono, 0.6 * mono], axis=1)[:, :channels]
    wav = path.with_suffix(".source.wav")
    soundfile.write(wav, np.clip(frames, -32768, 32767).astype(np.int16), rate_hz, "PCM_16")
    ffmpeg("-i", str(wav), *_ENCODERS[path.suffix], str(path))
    wav.unlink()
    return path


def _in_process(path: Path) -> tuple[object, object] | None:
    head, _ = read_head(path)
    return decode_in_process(path, head=head)


@pytest.mark.parametrize(
    ("suffix", "rate_hz", "channels"),
    [
        (".mp3", 44_100, 2),
        (".mp3", 8_000, 1),
        (".m4a", 22_050, 2),
        (".m4a", 16_000, 1),
        (".m4a", 11_025, 1),
        (".m4a", 48_000, 2),
    ],
)
def test_short_mp3_and_m4a_are_decoded_here_as_ffmpeg_decodes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str, rate_hz: int, channels: int
) -> None:
    path = _encode(tmp_path / f"note-{rate_hz}-{channels}{suffix}", rate_hz=rate_hz,
                   channels=channels, pad_s=3.0)  # fmt: skip

    def no_ffmpeg(*args: object, **kwargs: object) -> None:
        raise AssertionError("an ffmpeg process was started")

    monkeypatch.setattr(sources, "PcmDecoder", no_ffmpeg)
    info, exact, source = sources.open_pcm_source(path, timeout_s=60, probe_timeout_s=60)
    source.close()
    assert isinstance(source, DecodedPcm)
    assert exact
    assert info == probe_audio(path)  # codec, container, rate, channels, duration
    ours, text = pcm_of(path, max_bytes=100_000)  # several chunks
    reference = reference_pcm(path)
    assert text.strip() == TEXT  # the quiet noise before it is heard as a pause
    # libav's decoders and resampler both ways, an m4a's padding cut where ffmpeg cuts it
    assert np.array_equal(ours, reference)


def _cut(source: Path, target: Path, *, keep: float) -> Path:
    data = source.read_bytes()
    target.write_bytes(data[: int(len(data) * keep)])
    return target


def _truncated_mp3(tmp: Path) -> Path:  # its Xing header still promises the whole length
    return _cut(_encode(tmp / "whole.mp3", pad_s=6.0), tmp / "cut.mp3", keep=0.5)


def _truncated_m4a(tmp: Path) -> Path:  # the index at the start promises what is gone
    return _cut(_encode(tmp / "whole.m4a", pad_s=6.0), tmp / "cut.m4a", keep=0.5)


def _too_long_mp3(tmp: Path) -> Path:
    return _encode(tmp / "long.mp3", pad_s=MAX_DURATION_MS / 1000)


def _ogg(tmp: Path) -> Path:
    return _encode(tmp / "note.ogg")


def _damaged_m4a(tmp: Path) -> Path:  # a stretch of the audio overwritten with noise
    data = bytearray(_encode(tmp / "whole.m4a", pad_s=6.0).read_bytes())
    middle = len(data) // 2
    data[middle : middle + 4096] = np.random.default_rng(1).bytes(4096)
    (tmp / "damaged.m4a").write_bytes(bytes(data))
    return tmp / "damaged.m4a"


@pytest.mark.parametrize(
    "make", [_truncated_mp3, _truncated_m4a, _too_long_mp3, _ogg, _damaged_m4a]
)
def test_what_is_not_plainly_well_formed_goes_to_ffmpeg(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make
) -> None:
    path = make(tmp_path)
    assert _in_process(path) is None
    with_pyav = _outcome(path)
    monkeypatch.setattr(sources, "decode_in_process", lambda path, *, head: None)
    assert with_pyav == _outcome(path)  # the same chunks, or the same error, word for word


def _outcome(path: Path) -> tuple[str, ...]:
    try:
        return tuple(chunk.wav.hex()[:64] + str(len(chunk.wav)) for chunk in iter_chunks(
            path, max_bytes=200_000
        ))  # fmt: skip
    except AudioError as exc:
        return (type(exc).__name__, str(exc))


def test_a_file_that_only_looks_like_mp3_is_left_to_ffmpeg(tmp_path: Path) -> None:
    path = tmp_path / "notes.mp3"
    path.write_bytes(b"ID3" + bytes(range(256)) * 40)
    assert _in_process(path) is None
    with pytest.raises(AudioError):
        list(iter_chunks(path, max_bytes=200_000))
