"""Short mp3 and m4a files are decoded by libav worker processes, as the ffmpeg command
would decode them; whatever is not plainly well-formed, and whatever goes wrong with a
worker, still goes to ffmpeg and meets the same errors.

The oracle is the naive script's own command, `ffmpeg -i F -ac 1 -ar 16000`.
"""

from __future__ import annotations

import fcntl
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import soundfile

from devserver.tone import encode_tone_dictation
from tasks.audio import DecoderPool, iter_chunks, probe_audio
from tasks.audio import decoder_pool as pool_module
from tasks.audio import native_wav as sources
from tasks.audio.decoder_pool import DecodedPcm
from tasks.audio.ffmpeg import read_head
from tasks.errors import AudioError
from tasks.libav.decode import MAX_WHOLE_MS
from tests.helpers.audio import ffmpeg, no_ffmpeg, reference_pcm
from tests.helpers.native_wav import TEXT, pcm_of

_ENCODERS = {
    ".mp3": ("-c:a", "libmp3lame", "-b:a", "64k"),
    ".m4a": ("-c:a", "aac", "-b:a", "48k", "-movflags", "+faststart"),
    ".ogg": ("-c:a", "libvorbis"),
    ".opus": ("-c:a", "libopus", "-b:a", "32k"),
    ".flac": ("-c:a", "flac"),
    ".aiff": ("-c:a", "pcm_s16be"),
    ".aifc": ("-c:a", "pcm_s24be", "-f", "aiff"),
}


@pytest.fixture
def decoders() -> Iterator[DecoderPool]:
    pool = DecoderPool(max_processes=2)
    yield pool
    pool.close()


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


def _decode(pool: DecoderPool, path: Path) -> tuple[object, DecodedPcm] | None:
    head, _ = read_head(path)
    return pool.decode(path, head=head, timeout_s=60)


def _workers() -> list[int]:
    """This process's live decoding workers."""
    found = []
    for name in os.listdir("/proc"):
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
            command = Path(f"/proc/{name}/cmdline").read_bytes()
        except (OSError, ValueError):
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == os.getpid() and b"tasks.libav.worker" in command and " Z " not in stat:
            found.append(int(name))
    return found


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
def test_short_mp3_and_m4a_are_decoded_by_a_worker_as_ffmpeg_decodes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, decoders: DecoderPool, suffix: str,
    rate_hz: int, channels: int,
) -> None:  # fmt: skip
    path = _encode(tmp_path / f"note-{rate_hz}-{channels}{suffix}", rate_hz=rate_hz,
                   channels=channels, pad_s=3.0)  # fmt: skip

    monkeypatch.setattr(sources, "PcmDecoder", no_ffmpeg)
    info, exact, source = sources.open_pcm_source(
        path, timeout_s=60, probe_timeout_s=60, decoders=decoders
    )
    source.close()
    assert isinstance(source, DecodedPcm)
    assert exact
    assert info == probe_audio(path)  # codec, container, rate, channels, duration
    ours, text = pcm_of(path, max_bytes=100_000, decoders=decoders)  # several chunks
    assert text.strip() == TEXT  # the quiet noise before it is heard as a pause
    # libav's decoders and resampler both ways, an m4a's padding cut where ffmpeg cuts it
    assert np.array_equal(ours, reference_pcm(path))
    assert decoders.decoded == 2


@pytest.mark.parametrize(
    ("suffix", "rate_hz", "channels"),
    [(".flac", 44_100, 2), (".flac", 16_000, 1), (".ogg", 22_050, 1), (".ogg", 48_000, 2),
     (".opus", 48_000, 1), (".opus", 16_000, 2), (".aiff", 44_100, 2), (".aifc", 8_000, 1)],
)  # fmt: skip
def test_flac_ogg_opus_and_aiff_are_decoded_by_a_worker_as_ffmpeg_decodes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, decoders: DecoderPool, suffix: str,
    rate_hz: int, channels: int,
) -> None:  # fmt: skip
    path = _encode(tmp_path / f"note{suffix}", rate_hz=rate_hz, channels=channels, pad_s=2.0)

    monkeypatch.setattr(sources, "PcmDecoder", no_ffmpeg)
    info, exact, source = sources.open_pcm_source(
        path, timeout_s=60, probe_timeout_s=60, decoders=decoders
    )
    source.close()
    assert isinstance(source, DecodedPcm)
    assert exact
    assert info == probe_audio(path)
    ours, text = pcm_of(path, max_bytes=100_000, decoders=decoders)
    assert np.array_equal(ours, reference_pcm(path))  # the ffmpeg command's bytes exactly
    if suffix != ".opus":  # 32 kb/s Opus blurs the tones, for ffmpeg's decode as for ours
        assert text.strip() == TEXT


@pytest.mark.parametrize(("rate_hz", "channels"), [(44_100, 2), (22_050, 1)])
def test_an_mp3_without_a_xing_header_is_the_ffmpeg_commands_bytes_to_its_last_sample(
    tmp_path: Path, decoders: DecoderPool, rate_hz: int, channels: int
) -> None:
    """Its duration is guessed from the bitrate: nothing says where the stream ends, and
    ffmpeg keeps every decoded sample (cut at the guess, the last one or two were lost)."""
    source = _encode(tmp_path / "note.m4a", rate_hz=rate_hz, channels=channels, pad_s=1.0)
    path = tmp_path / "no-xing.mp3"
    ffmpeg("-i", str(source), "-c:a", "libmp3lame", "-b:a", "64k", "-write_xing", "0", str(path))
    assert _decode(decoders, path) is not None
    ours, _ = pcm_of(path, max_bytes=100_000, decoders=decoders)
    assert len(ours) == len(reference_pcm(path))
    assert np.array_equal(ours, reference_pcm(path))
    assert decoders.decoded == 2


def _cut(source: Path, target: Path, *, keep: float) -> Path:
    data = source.read_bytes()
    target.write_bytes(data[: int(len(data) * keep)])
    return target


def _truncated_mp3(tmp: Path) -> Path:  # its Xing header still promises the whole length
    return _cut(_encode(tmp / "whole.mp3", pad_s=6.0), tmp / "cut.mp3", keep=0.5)


def _truncated_m4a(tmp: Path) -> Path:  # the index at the start promises what is gone
    return _cut(_encode(tmp / "whole.m4a", pad_s=6.0), tmp / "cut.m4a", keep=0.5)


def _truncated_long_mp3(tmp: Path) -> Path:  # streamed if whole: its size betrays it first
    return _cut(_encode(tmp / "long.mp3", pad_s=MAX_WHOLE_MS / 1000), tmp / "cut.mp3", keep=0.5)


def _truncated_flac(tmp: Path) -> Path:  # its STREAMINFO still promises the whole length
    return _cut(_encode(tmp / "whole.flac", pad_s=6.0), tmp / "cut.flac", keep=0.5)


def _damaged_m4a(tmp: Path) -> Path:  # a stretch of the audio overwritten with noise
    data = bytearray(_encode(tmp / "whole.m4a", pad_s=6.0).read_bytes())
    middle = len(data) // 2
    data[middle : middle + 4096] = np.random.default_rng(1).bytes(4096)
    (tmp / "damaged.m4a").write_bytes(bytes(data))
    return tmp / "damaged.m4a"


def _looks_like_mp3(tmp: Path) -> Path:
    (tmp / "notes.mp3").write_bytes(b"ID3" + bytes(range(256)) * 40)
    return tmp / "notes.mp3"


@pytest.mark.parametrize(
    "make",
    [
        _truncated_mp3,
        _truncated_m4a,
        _truncated_long_mp3,
        _truncated_flac,
        _damaged_m4a,
        _looks_like_mp3,
    ],
)
def test_what_is_not_plainly_well_formed_goes_to_ffmpeg(
    tmp_path: Path, decoders: DecoderPool, make: Callable[[Path], Path]
) -> None:
    path = make(tmp_path)
    assert _decode(decoders, path) is None
    # the same chunks, or the same error word for word, as ffmpeg alone gives
    assert _outcome(path, decoders=decoders) == _outcome(path, decoders=None)
    assert decoders.decoded == 0


def _outcome(path: Path, *, decoders: DecoderPool | None) -> tuple[str, ...]:
    try:
        return tuple(chunk.wav.hex()[:64] + str(len(chunk.wav)) for chunk in iter_chunks(
            path, max_bytes=200_000, decoders=decoders
        ))  # fmt: skip
    except AudioError as exc:
        return (type(exc).__name__, str(exc))


def test_a_killed_worker_costs_one_file_an_ffmpeg_run_and_is_replaced(
    tmp_path: Path, decoders: DecoderPool
) -> None:
    path = _encode(tmp_path / "note.mp3")
    assert _decode(decoders, path) is not None
    [worker] = _workers()
    os.kill(worker, signal.SIGKILL)
    ours, _ = pcm_of(path, decoders=decoders)  # decoded by ffmpeg this once
    assert np.array_equal(ours, reference_pcm(path))
    assert decoders.decoded == 1
    assert _decode(decoders, path) is not None  # a new worker
    assert _workers() != [worker]


def test_a_worker_that_does_not_answer_in_time_is_killed(
    tmp_path: Path, decoders: DecoderPool
) -> None:
    path = _encode(tmp_path / "note.m4a")
    assert _decode(decoders, path) is not None
    [worker] = _workers()
    os.kill(worker, signal.SIGSTOP)  # a decode that hangs
    head, _ = read_head(path)
    started = time.monotonic()
    assert decoders.decode(path, head=head, timeout_s=0.5) is None
    assert time.monotonic() - started < 5
    assert worker not in _workers()


def test_no_more_workers_than_asked_and_none_after_close(tmp_path: Path) -> None:
    paths = [_encode(tmp_path / f"note-{n}.m4a") for n in range(3)] * 4
    pool = DecoderPool(max_processes=2)
    most = 0

    def decode(path: Path) -> bool:
        nonlocal most
        decoded = _decode(pool, path)
        most = max(most, len(_workers()))
        return decoded is not None

    with ThreadPoolExecutor(max_workers=4) as threads:
        outcomes = list(threads.map(decode, paths))
    assert most == 2  # four threads at once: two workers, the others left to ffmpeg
    assert outcomes.count(True) == pool.decoded >= 2
    processes = [worker.process for worker in pool._idle]
    pool.close()
    assert _workers() == []
    assert [process.returncode for process in processes] == [0, 0]  # ended, not killed
    assert _decode(pool, paths[0]) is None  # closed: ffmpeg decodes


def test_a_worker_gets_no_secret_of_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, decoders: DecoderPool
) -> None:
    monkeypatch.setenv("MEDASR_TOKEN", "tok-do-not-leak")
    monkeypatch.setenv("MEDASR_DATABASE_URL", "postgresql://u:pw-do-not-leak@db/medasr")
    assert _decode(decoders, _encode(tmp_path / "note.mp3")) is not None
    [worker] = _workers()
    environment = Path(f"/proc/{worker}/environ").read_bytes()
    assert b"do-not-leak" not in environment
    assert b"PATH=" in environment


def test_without_pyav_ffmpeg_decodes_everything_and_the_pool_stops_trying(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(pool_module, "_LAUNCH", "import sys; sys.exit(1)")  # av not found
    path = _encode(tmp_path / "note.mp3")
    pool = DecoderPool(max_processes=2)
    with caplog.at_level(logging.INFO, logger=pool_module.__name__):
        assert _decode(pool, path) is None
        assert _decode(pool, path) is None
        ours, _ = pcm_of(path, decoders=pool)
    assert np.array_equal(ours, reference_pcm(path))
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1
    assert "ffmpeg decodes every file" in said[0]
    pool.close()


def test_a_worker_ends_when_its_parent_dies(tmp_path: Path) -> None:
    path = _encode(tmp_path / "note.mp3")
    parent = (
        "import os, sys; from pathlib import Path; from tasks.audio import DecoderPool;"
        "from tasks.audio.ffmpeg import read_head; pool = DecoderPool(max_processes=1);"
        "path = Path(sys.argv[1]); head, _ = read_head(path);"
        "assert pool.decode(path, head=head, timeout_s=60) is not None;"
        "worker, = [w.process.pid for w in pool._idle]; print(worker, flush=True); os._exit(0)"
    )
    said = subprocess.run([sys.executable, "-c", parent, str(path)], capture_output=True,
                          text=True, check=True, timeout=60)  # fmt: skip
    worker = int(said.stdout)
    deadline = time.monotonic() + 10
    while Path(f"/proc/{worker}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{worker}").exists()  # no orphan: it read the end of its pipe


def test_a_dictations_samples_cross_the_answer_pipe_in_one_piece(
    tmp_path: Path, decoders: DecoderPool
) -> None:
    """The answer pipe holds a 15 s dictation's 480 KB: Linux's default 64 KB pipe passed
    it in pieces, each a wake-up of both processes."""
    path = _encode(tmp_path / "note.mp3", rate_hz=22_050, channels=1)
    assert _decode(decoders, path) is not None
    [worker] = decoders._idle
    pipe_bytes = fcntl.fcntl(worker._answers.fileno(), fcntl.F_GETPIPE_SZ)
    assert pipe_bytes >= 16_000 * 2 * 15
