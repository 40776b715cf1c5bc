"""mp3, m4a, FLAC, Ogg and AIFF recordings of any length are decoded by a libav worker,
one longer than 5 minutes streamed back in pieces, as the ffmpeg command would decode
them; a worker that dies, hangs or finds the file unfit mid-stream hands it to ffmpeg,
which starts the file over and whose first samples must be the ones already taken.

The oracle is the naive script's own command, `ffmpeg -i F -ac 1 -ar 16000 out.wav`,
split by the same splitter: chunk for chunk, byte for byte.
"""

from __future__ import annotations

import hashlib
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
import soundfile

from devserver.tone import decode_wav_bytes, encode_tone_dictation
from tasks.audio import DecoderPool, iter_chunks
from tasks.audio import worker_stream as stream_module
from tasks.audio.decoder import PcmDecoder
from tasks.audio.ffmpeg import probe_with_confidence, read_head
from tasks.audio.native_wav import open_pcm_source
from tasks.audio.worker_stream import StreamedPcm, WorkerGone
from tasks.errors import AudioError, CorruptAudio
from tests.helpers.audio import (
    assert_no_child_left,
    children_pids,
    ffmpeg,
    no_ffmpeg,
    reference_pcm,
)
from tests.helpers.native_wav import TEXT

_CAP_BYTES = 1_000_000  # about 31 s a chunk: a 6-minute file is a dozen chunks
_ENCODERS = {
    ".mp3": ("-c:a", "libmp3lame", "-b:a", "64k"),
    ".m4a": ("-c:a", "aac", "-b:a", "48k", "-movflags", "+faststart"),
    ".flac": ("-c:a", "flac"),
    ".ogg": ("-c:a", "libvorbis"),
    ".opus": ("-c:a", "libopus", "-b:a", "32k"),
    ".aiff": ("-c:a", "pcm_s16be"),
}


@pytest.fixture
def decoders() -> Iterator[DecoderPool]:
    pool = DecoderPool(max_processes=2)
    yield pool
    pool.close()


def long_recording(path: Path, *, minutes: float, rate_hz: int = 44_100, channels: int = 2,
                   extra: tuple[str, ...] = ()) -> Path:  # fmt: skip
    """TEXT as tone dictation, then 4 s of quiet noise, again and again for `minutes`,
    encoded by `path`'s suffix at `rate_hz` and `channels` (and `extra` options)."""
    spoken = encode_tone_dictation(TEXT, sample_rate_hz=22_050).astype(np.float64)
    quiet = np.random.default_rng(7).normal(0, 60, 4 * 22_050)
    segment = path.with_suffix(".segment.wav")
    soundfile.write(segment, np.concatenate([spoken, quiet]).astype(np.int16), 22_050, "PCM_16")
    ffmpeg("-stream_loop", "-1", "-i", str(segment), "-t", str(minutes * 60), "-ar", str(rate_hz),
           "-ac", str(channels), *_ENCODERS[path.suffix], *extra, str(path))  # fmt: skip
    segment.unlink()
    return path


def ffmpeg_wav(path: Path) -> Path:
    """The ffmpeg command's own 16 kHz mono s16le WAV of `path` (the oracle)."""
    target = path.with_suffix(".ffmpeg.wav")
    ffmpeg("-i", str(path), "-ac", "1", "-ar", "16000", "-c:a", "pcm_s16le", str(target))
    return target


def chunk_digests(path: Path, *, decoders: DecoderPool | None) -> list[tuple[int, int, str]]:
    """(start, end, sha256 of the WAV) of every chunk of `path`."""
    return [
        (chunk.start_sample, chunk.end_sample, hashlib.sha256(chunk.wav).hexdigest())
        for chunk in iter_chunks(path, max_bytes=_CAP_BYTES, decoders=decoders)
    ]


def outcome(path: Path, *, decoders: DecoderPool | None) -> list[tuple[int, int, str]] | str:
    """The chunks, or the error word for word."""
    try:
        return chunk_digests(path, decoders=decoders)
    except AudioError as exc:
        return f"{type(exc).__name__}: {exc}"


def live_workers() -> list[int]:
    """This process's decoding workers, alive (zombies not counted)."""
    return [
        pid
        for pid in children_pids()
        if b"tasks.libav.worker" in _cmdline(pid) and _state(pid) not in ("Z", None)
    ]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def counting_ffmpeg(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The paths ffmpeg takes over from a worker, from now on."""
    started: list[Path] = []

    class Counted(PcmDecoder):
        def __init__(self, path: Path, *, timeout_s: float) -> None:
            started.append(path)
            super().__init__(path, timeout_s=timeout_s)

    monkeypatch.setattr(stream_module, "PcmDecoder", Counted)
    return started


def split_with_trouble(
    path: Path, decoders: DecoderPool, *, trouble: Callable[[int], None], timeout_s: float = 60
) -> list[tuple[int, int, str]]:
    """The chunks of `path`, `trouble(worker pid)` done once three chunks are out."""
    digests = []
    chunks = iter_chunks(path, max_bytes=_CAP_BYTES, decoders=decoders, timeout_s=timeout_s)
    for chunk in chunks:
        digest = hashlib.sha256(chunk.wav).hexdigest()
        digests.append((chunk.start_sample, chunk.end_sample, digest))
        if len(digests) == 3:
            [worker] = live_workers()
            trouble(worker)
    return digests


def test_a_six_minute_mp3_is_decoded_by_a_worker_not_by_ffmpeg(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, decoders: DecoderPool
) -> None:
    path = long_recording(tmp_path / "long.mp3", minutes=6)
    oracle = chunk_digests(ffmpeg_wav(path), decoders=None)
    monkeypatch.setattr(PcmDecoder, "__init__", no_ffmpeg)
    assert chunk_digests(path, decoders=decoders) == oracle
    assert decoders.decoded == 1
    chunks = iter_chunks(path, max_bytes=_CAP_BYTES, decoders=decoders)
    assert decode_wav_bytes(next(chunks).wav).startswith(TEXT)
    chunks.close()


@pytest.mark.parametrize("suffix", [".mp3", ".m4a"])
def test_six_minutes_give_the_ffmpeg_commands_chunks_byte_for_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, decoders: DecoderPool, suffix: str
) -> None:
    path = long_recording(tmp_path / f"long{suffix}", minutes=6)
    oracle = chunk_digests(ffmpeg_wav(path), decoders=None)
    monkeypatch.setattr(PcmDecoder, "__init__", no_ffmpeg)
    info, exact, source = open_pcm_source(path, timeout_s=60, probe_timeout_s=60,
                                          decoders=decoders)  # fmt: skip
    source.close()
    assert isinstance(source, StreamedPcm)
    assert (info, exact) == probe_with_confidence(path)
    assert chunk_digests(path, decoders=decoders) == oracle  # cut at the same pauses
    assert len(oracle) >= 12
    assert decoders.decoded == 1


@pytest.mark.parametrize(
    ("suffix", "rate_hz", "channels"),
    [(".flac", 44_100, 2), (".ogg", 22_050, 1), (".opus", 48_000, 1), (".aiff", 16_000, 1)],
)
def test_six_minutes_of_flac_ogg_opus_and_aiff_give_the_ffmpeg_commands_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, decoders: DecoderPool, suffix: str,
    rate_hz: int, channels: int,
) -> None:  # fmt: skip
    path = long_recording(tmp_path / f"long{suffix}", minutes=6, rate_hz=rate_hz,
                          channels=channels)  # fmt: skip
    oracle = chunk_digests(ffmpeg_wav(path), decoders=None)
    monkeypatch.setattr(PcmDecoder, "__init__", no_ffmpeg)
    assert chunk_digests(path, decoders=decoders) == oracle
    assert decoders.decoded == 1


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".mp3", ".m4a"])
def test_thirty_minutes_give_the_ffmpeg_commands_chunks_byte_for_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, decoders: DecoderPool, suffix: str
) -> None:
    path = long_recording(tmp_path / f"long{suffix}", minutes=30, rate_hz=22_050, channels=1)
    short = long_recording(tmp_path / f"short{suffix}", minutes=0.25)
    oracle = chunk_digests(ffmpeg_wav(path), decoders=None)
    monkeypatch.setattr(PcmDecoder, "__init__", no_ffmpeg)
    chunk_digests(short, decoders=decoders)  # the worker started, a short file decoded whole
    [worker] = live_workers()
    started_kb = peak_kb(worker)
    assert chunk_digests(path, decoders=decoders) == oracle
    assert decoders.decoded == 2
    # 57.6 MB of samples went through it, a piece at a time
    assert peak_kb(worker) - started_kb < 16_000


def peak_kb(pid: int) -> int:
    """The peak resident memory (VmHWM) of process `pid`."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(status.split("VmHWM:")[1].split()[0])


def test_an_mp3_whose_length_is_estimated_is_streamed_and_judged_as_ffmpeg_judges_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, decoders: DecoderPool
) -> None:
    path = long_recording(tmp_path / "no-xing.mp3", minutes=6, extra=("-write_xing", "0"))
    oracle = chunk_digests(ffmpeg_wav(path), decoders=None)
    monkeypatch.setattr(PcmDecoder, "__init__", no_ffmpeg)
    info, exact, source = open_pcm_source(path, timeout_s=60, probe_timeout_s=60,
                                          decoders=decoders)  # fmt: skip
    source.close()
    assert (info, exact) == probe_with_confidence(path)
    assert not exact  # "Estimating duration from bitrate": no length promised
    assert chunk_digests(path, decoders=decoders) == oracle


def test_a_worker_killed_mid_file_hands_the_rest_to_ffmpeg_from_the_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, decoders: DecoderPool
) -> None:
    path = long_recording(tmp_path / "long.m4a", minutes=6)
    oracle = chunk_digests(ffmpeg_wav(path), decoders=None)
    taken_over = counting_ffmpeg(monkeypatch)
    ours = split_with_trouble(path, decoders, trouble=lambda pid: os.kill(pid, signal.SIGKILL))
    assert ours == oracle  # the chunks cut before the kill are the ffmpeg command's too
    assert taken_over == [path]
    assert decoders.decoded == 0
    assert live_workers() == []  # the dead one reaped


def test_a_worker_that_hangs_mid_file_is_killed_and_ffmpeg_finishes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, decoders: DecoderPool
) -> None:
    path = long_recording(tmp_path / "long.mp3", minutes=6)
    oracle = chunk_digests(ffmpeg_wav(path), decoders=None)
    taken_over = counting_ffmpeg(monkeypatch)
    stopped: list[int] = []

    def hang(pid: int) -> None:
        os.kill(pid, signal.SIGSTOP)
        stopped.append(pid)

    assert split_with_trouble(path, decoders, trouble=hang, timeout_s=12) == oracle
    assert taken_over == [path]
    assert _state(stopped[0]) is None  # killed and reaped
    assert live_workers() == []


def _damaged(whole: Path) -> bytes:
    data = bytearray(whole.read_bytes())
    at = len(data) * 2 // 3
    data[at : at + 4096] = np.random.default_rng(1).bytes(4096)  # noise over a stretch
    return bytes(data)


def _cut_short(whole: Path) -> bytes:  # its STREAMINFO still promises 6 minutes
    return whole.read_bytes()[: whole.stat().st_size * 2 // 3]


@pytest.mark.parametrize(("suffix", "spoil"), [(".m4a", _damaged), (".flac", _cut_short)])
def test_a_file_found_unfit_mid_stream_meets_ffmpegs_own_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, decoders: DecoderPool, suffix: str,
    spoil: Callable[[Path], bytes],
) -> None:  # fmt: skip
    path = tmp_path / f"spoilt{suffix}"
    path.write_bytes(spoil(long_recording(tmp_path / f"whole{suffix}", minutes=6)))
    alone = outcome(path, decoders=None)
    taken_over = counting_ffmpeg(monkeypatch)
    assert outcome(path, decoders=decoders) == alone
    assert taken_over == [path]  # the worker streamed two thirds, then said unfit
    assert decoders.decoded == 0
    assert len(live_workers()) == 1  # the worker itself was fine: kept for the next file


def test_a_split_closed_mid_stream_leaves_no_worker_and_no_process(
    tmp_path: Path, decoders: DecoderPool
) -> None:
    path = long_recording(tmp_path / "long.mp3", minutes=6)
    before = children_pids()
    chunks = iter_chunks(path, max_bytes=_CAP_BYTES, decoders=decoders)
    next(chunks)
    assert len(live_workers()) == 1
    chunks.close()  # a cancelled run closes the split of the file it was sending
    assert live_workers() == []
    assert_no_child_left(before)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["long.mp3"]  # no temp file
    source = decoders.decode(path, head=read_head(path)[0], timeout_s=60)
    assert source is not None  # a new worker for the next file
    source[1].close()


def test_a_long_file_streaming_leaves_short_ones_a_worker(tmp_path: Path) -> None:
    long_path = long_recording(tmp_path / "long.mp3", minutes=6)
    short_path = long_recording(tmp_path / "short.m4a", minutes=0.25)
    pool = DecoderPool(max_processes=1)

    def decode(path: Path) -> tuple[object, StreamedPcm | object] | None:
        return pool.decode(path, head=read_head(path)[0], timeout_s=60)

    chunks = iter_chunks(long_path, max_bytes=_CAP_BYTES, decoders=pool)
    next(chunks)  # the one worker streams the long file, waiting on its pipe
    assert decode(short_path) is not None  # a second worker, not an ffmpeg process
    assert len(live_workers()) == 2
    assert len(list(chunks)) >= 11
    assert len(live_workers()) == 1  # no file streams: the spare one ended
    chunks = iter_chunks(long_path, max_bytes=_CAP_BYTES, decoders=pool)
    next(chunks)
    assert decode(short_path) is not None
    another = decode(long_path)
    assert another is not None
    assert decode(short_path) is None  # two workers streaming: twice the cap, ffmpeg's turn
    another[1].close()  # type: ignore[attr-defined]
    chunks.close()
    pool.close()
    assert live_workers() == []


class FakeWorker:
    """A worker's answers from a list (what no real worker is made to say): then it is gone."""

    def __init__(self, messages: list[bytes]) -> None:
        self.messages = messages
        self.released: list[dict[str, bool]] = []

    def answer(self, *, timeout_s: float) -> bytes:
        if not self.messages:
            raise WorkerGone("no more answers")
        return self.messages.pop(0)

    def release(self, **outcome: bool) -> None:
        self.released.append(outcome)


def read_all(source: StreamedPcm) -> bytes:
    out = bytearray()
    view = memoryview(bytearray(100_000))
    while count := source.readinto(view):
        out += view[:count]
    return bytes(out)


def test_samples_that_differ_from_ffmpegs_are_said_and_ffmpeg_gives_the_rest(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = long_recording(tmp_path / "long.mp3", minutes=6)
    reference = reference_pcm(path).tobytes()
    wrong = bytes(300_000)  # silence where ffmpeg has sound
    worker = FakeWorker([wrong])
    source = StreamedPcm(path, answers=worker, release=worker.release,
                         head=read_head(path)[0], timeout_s=60, exact=True)  # fmt: skip
    with caplog.at_level(logging.WARNING, logger=stream_module.__name__), source:
        pcm = read_all(source)
        source.finish()
    assert worker.released == [{"alive": False, "decoded": False}]
    assert pcm == wrong + reference[len(wrong) :]  # no sample lost or repeated
    assert ["differ from ffmpeg's" in r.getMessage() for r in caplog.records] == [True]
    assert str(path) not in caplog.text  # file names can carry patients' names


def test_a_file_ffmpeg_finds_truncated_after_a_worker_gave_up_fails_as_ffmpeg_words_it(
    tmp_path: Path,
) -> None:
    whole = long_recording(tmp_path / "whole.mp3", minutes=6).read_bytes()
    path = tmp_path / "cut.mp3"
    path.write_bytes(whole[: len(whole) // 2])  # its Xing header promises 6 minutes
    reference = reference_pcm(path).tobytes()
    worker = FakeWorker([reference[:200_000], b"", b"unfit"])
    source = StreamedPcm(path, answers=worker, release=worker.release,
                         head=read_head(path)[0], timeout_s=60, exact=True)  # fmt: skip
    with source:
        assert read_all(source) == reference
        with pytest.raises(CorruptAudio) as raised:
            source.finish()
    assert worker.released == [{"alive": True, "decoded": False}]
    assert outcome(path, decoders=None) == f"DamagedTail: {raised.value}"


def test_a_worker_stopped_halfway_through_writing_a_piece_is_timed_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, decoders: DecoderPool
) -> None:
    """A reader waiting on splitter and service leaves the worker blocked mid-piece in a
    full pipe; stopped there, the rest of that piece never comes: the timeout still holds."""
    path = long_recording(tmp_path / "long.mp3", minutes=6)
    oracle = chunk_digests(ffmpeg_wav(path), decoders=None)
    taken_over = counting_ffmpeg(monkeypatch)
    chunks = iter_chunks(path, max_bytes=_CAP_BYTES, decoders=decoders, timeout_s=12)
    digests = [next(chunks)]
    [worker] = live_workers()
    wait_for(lambda: "pipe_write" in Path(f"/proc/{worker}/wchan").read_text())
    os.kill(worker, signal.SIGSTOP)  # a piece half written: its length said, its bytes not
    rest = threading.Thread(target=lambda: digests.extend(chunks), daemon=True)
    rest.start()
    rest.join(timeout=120)
    hung = rest.is_alive()
    if hung:
        os.kill(worker, signal.SIGKILL)  # ends the read (end of file), ffmpeg finishes
        rest.join()
    assert not hung, "the read of a half-written piece outlived the 12 s timeout"
    assert [(c.start_sample, c.end_sample, hashlib.sha256(c.wav).hexdigest())
            for c in digests] == oracle  # fmt: skip
    assert taken_over == [path]
    assert live_workers() == []


def wait_for(condition: Callable[[], bool], *, timeout_s: float = 60) -> None:
    """Wait (polling, no fixed sleep) until `condition()` holds."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not met"
        time.sleep(0.05)


def mislabelled_mp3(path: Path, *, minutes: float) -> Path:
    """An mp3 without a Xing header whose first 20 s are at 320 kb/s and the rest at
    32 kb/s (two files joined, as a recorder appending to a file may write): libav
    estimates its length from the first frames' bitrate, far under 5 minutes."""
    parts = []
    for seconds, kbps in ((20, "320k"), (minutes * 60, "32k")):
        part = path.with_suffix(f".{kbps}.mp3")
        long_recording(part, minutes=seconds / 60, extra=("-b:a", kbps, "-write_xing", "0",
                                                          "-id3v2_version", "0"))  # fmt: skip
        parts.append(part.read_bytes())
        part.unlink()
    path.write_bytes(b"".join(parts))
    return path


def test_an_mp3_far_longer_than_its_estimated_length_is_not_held_whole(
    tmp_path: Path, decoders: DecoderPool
) -> None:
    path = mislabelled_mp3(tmp_path / "joined.mp3", minutes=15)
    short = long_recording(tmp_path / "short.mp3", minutes=0.25)
    info, _ = probe_with_confidence(path)
    assert info.duration_ms is not None
    assert info.duration_ms < 300_000  # "short": decoded whole
    oracle = chunk_digests(ffmpeg_wav(path), decoders=None)
    chunk_digests(short, decoders=decoders)  # the worker started, a short file decoded whole
    [worker] = live_workers()
    started_kb = peak_kb(worker)
    assert chunk_digests(path, decoders=decoders) == oracle  # no sample lost
    # 28.8 MB of samples: at most the ~9.6 MB a short file may hold, not the whole
    assert peak_kb(worker) - started_kb < 16_000
