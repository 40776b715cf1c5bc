"""Normalize a recording to 16 kHz mono s16le and split it at pauses under a byte cap.

`iter_chunks` streams: ffmpeg decodes from the path onto a pipe, chunks are cut as
samples arrive, and memory holds about two chunks whatever the recording's length.
Splitting follows DESIGN.md §4; the pause finder and its thresholds are in pauses.py
beside this module, ffmpeg handling in ffmpeg.py and decoder.py (one ffmpeg run per
file: it describes the input, then decodes it). Nothing is written to disk
except by `split_to_dir` (chunk_folder.py), into the directory it is given (0700, files 0600).

Errors (tasks/errors.py) found before the first sample (missing, empty, not audio,
unsupported, a WAV cut short per its header) are raised before the first chunk. A
truncated or damaged tail (ffmpeg's errors at the end of the decode, fewer samples than
the header promises, a compressed file shorter than its header says) does not throw
away what decodes: every readable chunk is yielded, then DamagedTail says where the
damage starts (or, when nothing readable holds speech, the CorruptAudio itself). A
recording in which every chunk is silent raises SilentAudio after its (silent) chunks.

Libraries: each chunk's WAV is tasks/audio/riff.py's header and the samples (the bytes
the standard library's `wave` writes; soundfile's writer gave them at ten times the CPU). pydub is
not used at run time: it holds the whole decoded recording in memory (gigabytes for a
long dictation) and calls ffprobe, which the imageio-ffmpeg wheel does not ship; only
bench/audio_bench.py imports it, as the reference to beat.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from tasks.audio.decoder_pool import DecoderPool
from tasks.audio.ffmpeg import (
    OUTPUT_SAMPLE_RATE_HZ,
    AudioInfo,
    find_ffmpeg,
    probe_audio,
    require_speech_rate,
)
from tasks.audio.native_wav import PcmReader, open_pcm_source
from tasks.audio.pauses import (
    FRAME_MS,
    FRAME_SAMPLES,
    LevelHistogram,
    Thresholds,
    choose_cut,
    count_speech_frames,
    frame_levels_db,
    is_silent,
    is_steady_sound,
)
from tasks.audio.riff import wav_header
from tasks.errors import CorruptAudio, DamagedTail, EmptyAudio, SilentAudio

__all__ = [
    "AudioInfo",
    "Chunk",
    "find_ffmpeg",
    "is_all_silent",
    "iter_chunks",
    "probe_audio",
]

_READ_SAMPLES = 128 * 1024
_MIN_CHUNK_SAMPLES = OUTPUT_SAMPLE_RATE_HZ  # a cap under one second of audio is a mistake
_PROBE_TIMEOUT_S = 60.0
_MIN_SPEECH_MS = 250  # shorter than one spoken syllable


def _wav_bytes(samples: npt.NDArray[np.int16]) -> bytes:
    """A complete 16 kHz mono PCM s16le WAV file holding `samples`."""
    pcm = samples.astype("<i2", copy=False).tobytes()
    return wav_header(data_bytes=len(pcm), rate_hz=OUTPUT_SAMPLE_RATE_HZ) + pcm


WAV_HEADER_BYTES = len(_wav_bytes(np.zeros(0, dtype=np.int16)))


@dataclass(frozen=True)
class Chunk:
    """One piece of the normalized signal, as a WAV file no larger than the cap."""

    index: int  # 1-based
    start_sample: int  # in the 16 kHz signal; end exclusive
    end_sample: int
    start_ms: int
    end_ms: int
    wav: bytes  # complete WAV, header included
    silent: bool  # no speech: the pipeline does not send it
    voiced_ms: int = 0  # its 20 ms frames at or above the speech threshold (quality gate)


def max_chunk_samples(max_bytes: int) -> int:
    """Samples that fit in a WAV of `max_bytes` with its header; ValueError under 1 s."""
    samples = (max_bytes - WAV_HEADER_BYTES) // 2
    if samples < _MIN_CHUNK_SAMPLES:
        smallest = WAV_HEADER_BYTES + 2 * _MIN_CHUNK_SAMPLES
        raise ValueError(f"max_bytes must be at least {smallest} (one second), got {max_bytes}")
    return samples


class _Cutter:
    """Holds the samples not yet emitted and decides where each chunk ends."""

    def __init__(
        self, *, cap_samples: int, min_pause_ms: int, cut_at_samples: Sequence[int] = ()
    ) -> None:
        self.cap_samples = cap_samples
        self.min_pause_ms = min_pause_ms
        self.cut_at = sorted(set(cut_at_samples), reverse=True)  # next one last
        self.buffer = np.empty(cap_samples + _READ_SAMPLES, dtype=np.int16)
        self.bytes_view = self.buffer.view(np.uint8).data
        self.fill_bytes = 0
        self.start = 0  # absolute sample index of buffer[0]
        self.levels = np.empty(0, dtype=np.float32)
        self.levels_first = 0  # frame index of levels[0]
        self.histogram = LevelHistogram()
        self.counted_frames = 0  # frames [0, counted_frames) are in the histogram
        self.index = 0
        self.heard_speech = False

    @property
    def fill(self) -> int:
        return self.fill_bytes // 2

    def free_view(self) -> memoryview:
        """Where the next read goes."""
        return self.bytes_view[self.fill_bytes :]

    def take(self, count_bytes: int) -> None:
        """Account for `count_bytes` just read and measure the frames they complete."""
        self.fill_bytes += count_bytes
        levels_end = self.levels_first + len(self.levels)
        frames_end = (self.start + self.fill) // FRAME_SAMPLES
        if frames_end > levels_end:
            lo = levels_end * FRAME_SAMPLES - self.start
            hi = frames_end * FRAME_SAMPLES - self.start
            fresh = frame_levels_db(self.buffer[lo:hi])
            self.levels = np.concatenate([self.levels, fresh])

    def _count_frames(self, upto_frame: int) -> None:
        """Add frames up to `upto_frame` to the histogram, once each."""
        if upto_frame > self.counted_frames:
            lo, hi = self.counted_frames - self.levels_first, upto_frame - self.levels_first
            self.histogram.add(self.levels[lo:hi])
            self.counted_frames = upto_frame

    def _next_cut_at(self) -> int | None:
        """The next required cut after the chunk's start, if any."""
        while self.cut_at and self.cut_at[-1] <= self.start:
            self.cut_at.pop()
        return self.cut_at[-1] if self.cut_at else None

    def _cut_required(self, *, available: int) -> Chunk | None:
        """The chunk up to a required cut within `available` samples (and the cap)."""
        required = self._next_cut_at()
        if required is None or required - self.start > min(available, self.cap_samples):
            return None
        self._count_frames(required // FRAME_SAMPLES)
        return self._emit(required)

    def cut_full(self) -> Chunk | None:
        """The next chunk if a required cut is buffered or more samples than fit in one;
        else None."""
        if (required := self._cut_required(available=self.fill)) is not None:
            return required
        if self.fill <= self.cap_samples:
            return None
        limit = self.start + self.cap_samples
        self._count_frames(limit // FRAME_SAMPLES)
        lo = self.start // FRAME_SAMPLES - self.levels_first
        hi = limit // FRAME_SAMPLES - self.levels_first
        thresholds = self.histogram.thresholds().for_chunk(self.levels[lo:hi])
        end = choose_cut(
            self.levels,
            first_frame=self.levels_first,
            start_sample=self.start,
            limit_sample=limit,
            quiet_below_db=thresholds.quiet_below_db,
            min_pause_ms=self.min_pause_ms,
        )
        return self._emit(end)

    def cut_rest(self) -> Chunk | None:
        """At the end of the stream: the next chunk up to a required cut, else everything
        still buffered; None when nothing is left."""
        if self.fill == 0:
            return None
        if (required := self._cut_required(available=self.fill - 1)) is not None:
            return required
        self._count_frames(self.levels_first + len(self.levels))
        return self._emit(self.start + self.fill)

    def _emit(self, end: int) -> Chunk:
        """Make the chunk [start, end), drop its samples, keep the rest."""
        local_end = end - self.start
        lo = self.start // FRAME_SAMPLES - self.levels_first
        hi = -(-end // FRAME_SAMPLES) - self.levels_first
        thresholds = self.histogram.thresholds()
        silent = is_silent(self.levels[lo:hi], thresholds)
        voiced = count_speech_frames(self.levels[lo:hi], speech_above_db=thresholds.speech_above_db)
        self.heard_speech = self.heard_speech or not silent
        self.index += 1
        chunk = Chunk(
            index=self.index,
            start_sample=self.start,
            end_sample=end,
            start_ms=self.start * 1000 // OUTPUT_SAMPLE_RATE_HZ,
            end_ms=end * 1000 // OUTPUT_SAMPLE_RATE_HZ,
            wav=_wav_bytes(self.buffer[:local_end]),
            silent=silent,
            voiced_ms=0 if silent else voiced * FRAME_MS,
        )
        rest_bytes = self.fill_bytes - 2 * local_end
        self.bytes_view[:rest_bytes] = self.bytes_view[2 * local_end : self.fill_bytes]
        self.fill_bytes = rest_bytes
        self.start = end
        drop = end // FRAME_SAMPLES - self.levels_first
        self.levels = self.levels[drop:]
        self.levels_first += drop
        return chunk


def _check_length(decoded_samples: int, *, info: AudioInfo, exact: bool, path: Path) -> None:
    """Raise EmptyAudio for no samples, CorruptAudio when more than a syllable
    (_MIN_SPEECH_MS) short of a duration read from the file (`exact`: FLAC's sample count,
    an mp3's Xing frames, an m4a's index, a WAV's or AIFF's size), which complete files
    match within tens of ms: a looser margin (5 % was one) let a cut of seconds pass as done."""
    if decoded_samples == 0:
        raise EmptyAudio(f"empty audio file: {path} (it decodes to no samples)", path=str(path))
    decoded_ms = decoded_samples * 1000 // OUTPUT_SAMPLE_RATE_HZ
    if exact and info.duration_ms is not None and decoded_ms < info.duration_ms - _MIN_SPEECH_MS:
        raise CorruptAudio(
            f"truncated or damaged audio file: {path} (the header promises "
            f"{info.duration_ms / 1000:.1f} s, only {decoded_ms / 1000:.1f} s decode)",
            path=str(path),
        )


def iter_chunks(
    path: Path,
    *,
    max_bytes: int,
    min_pause_ms: int = 250,
    timeout_s: float = 3600,
    cut_at_samples: Sequence[int] = (),
    decoders: DecoderPool | None = None,
) -> Generator[Chunk, None, None]:
    """Chunks of `path` as 16 kHz mono WAVs of at most `max_bytes`, cut at pauses, and
    at each of `cut_at_samples` (the edges of audio already answered,
    tasks/transcription/coverage.py).

    Raises AudioError subclasses (see the module docstring for when); ValueError for a
    cap under one second. `timeout_s` bounds the time spent waiting for ffmpeg.
    Closing the generator early kills ffmpeg (or the streaming worker). With `decoders`, a
    libav worker process decodes mp3/m4a/FLAC/Ogg/AIFF, whole up to 5 minutes, streamed beyond.
    """
    cutter = _Cutter(
        cap_samples=max_chunk_samples(max_bytes),
        min_pause_ms=min_pause_ms,
        cut_at_samples=cut_at_samples,
    )
    info, exact, source = _open_source(path, timeout_s=timeout_s, decoders=decoders)
    damage = yield from _cut_while_decoding(source, cutter, info=info, exact=exact, path=path)
    if info.truncated is not None:  # worded as the probe words it (tasks/audio/ffmpeg.py)
        damage = CorruptAudio(info.truncated, path=str(path))
    if damage is not None and cutter.start + cutter.fill == 0:
        raise damage
    while (last := cutter.cut_rest()) is not None:
        yield last
    if damage is not None:
        raise _damaged_tail(damage, heard_speech=cutter.heard_speech, samples=cutter.start)
    _check_heard_speech(cutter, path=path)


def _open_source(
    path: Path, *, timeout_s: float, decoders: DecoderPool | None
) -> tuple[AudioInfo, bool, PcmReader]:
    """open_pcm_source's (info, exact, reader), refused (CorruptAudio, the reader closed)
    when the header states a sample rate no recording has. A WAV already at 16 kHz mono
    s16le is read as it is: no ffmpeg process at all."""
    probe_timeout_s = min(timeout_s, _PROBE_TIMEOUT_S)
    opened = open_pcm_source(
        path, timeout_s=timeout_s, probe_timeout_s=probe_timeout_s, decoders=decoders
    )
    try:
        require_speech_rate(opened[0], path=path)
    except CorruptAudio:
        opened[2].close()
        raise
    return opened


def _check_heard_speech(cutter: _Cutter, *, path: Path) -> None:
    """Raise SilentAudio, saying how loud the file was, when no chunk held speech."""
    if not cutter.heard_speech:
        message = _silence_message(
            path, samples=cutter.start, thresholds=cutter.histogram.thresholds()
        )
        raise SilentAudio(message, path=str(path))


def _cut_while_decoding(
    source: PcmReader,
    cutter: _Cutter,
    *,
    info: AudioInfo,
    exact: bool,
    path: Path,
) -> Generator[Chunk, None, CorruptAudio | None]:
    """The full chunks as the decoder fills the cutter; returns the damage found at the
    end of decoding (a decoder's failure, a length short of the probe's), if any."""
    with source as decoder:
        while count := decoder.readinto(cutter.free_view()):
            cutter.take(count)
            while chunk := cutter.cut_full():
                yield chunk
        try:
            decoder.finish()
            _check_length(cutter.start + cutter.fill, info=info, exact=exact, path=path)
        except CorruptAudio as exc:
            return exc
    return None


def _damaged_tail(damage: CorruptAudio, *, heard_speech: bool, samples: int) -> CorruptAudio:
    """DamagedTail (keep the readable part) when speech was heard before the damage; else
    the damage itself (nothing worth keeping: the file fails as corrupt)."""
    if not heard_speech:
        return damage
    damaged_at_ms = samples * 1000 // OUTPUT_SAMPLE_RATE_HZ
    return DamagedTail(damage.message, path=damage.path, damaged_at_ms=damaged_at_ms)


def _silence_message(path: Path, *, samples: int, thresholds: Thresholds) -> str:
    """Why nothing was sent: too short for a word (under 1/4 s), a steady sound, or silence."""
    duration_ms = samples * 1000 // OUTPUT_SAMPLE_RATE_HZ
    if duration_ms < _MIN_SPEECH_MS:
        return (
            f"no speech in {path}: the recording lasts {duration_ms} ms, "
            "too short to hold a word (treated as silent)"
        )
    if is_steady_sound(thresholds):
        return (
            f"no speech in {path}: a steady tone, hum or noise at about "
            f"{thresholds.speech_db:.0f} dBFS with no variation in level"
        )
    return f"no speech in {path}: the whole recording is silent"


def is_all_silent(chunks: Iterable[Chunk]) -> bool:
    """True when there are no chunks or none of them holds speech."""
    return all(chunk.silent for chunk in chunks)
