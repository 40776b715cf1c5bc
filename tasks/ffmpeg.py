"""ffmpeg as a subprocess: find it, probe a file, stream its decode to 16 kHz mono s16le.

There is no ffprobe: `probe_audio` parses what `ffmpeg -i PATH` prints. Inputs are
always read from a path (``file:`` protocol, so a name like ``concat:x`` is just a
name): an m4a whose index sits at the end decodes to 0 s through a pipe. Every
ffmpeg process is waited for; a decode that outlives its time budget, or whose reader
goes away, is killed. ffmpeg's failures become tasks/errors.py errors with one line.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import re
import selectors
import shutil
import stat
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import imageio_ffmpeg

from tasks.errors import (
    AudioError,
    AudioNotFound,
    CorruptAudio,
    DecodeFailed,
    EmptyAudio,
    NotAudio,
    UnsupportedAudio,
)
from tasks.sniff import check_wav_header, looks_like_audio, looks_like_text

OUTPUT_SAMPLE_RATE_HZ = 16_000
_HEAD_BYTES = 64 * 1024
_STDERR_KEEP_BYTES = 16 * 1024
_PIPE_BYTES = 1 << 20  # a bigger pipe means fewer wake-ups per second of audio
_F_SETPIPE_SZ = 1031

_CHANNELS_OF_LAYOUT = {"mono": 1, "stereo": 2, "quad": 4, "hexagonal": 6, "octagonal": 8}
# Containers whose "bitrate" is file size / header duration while the stream's bitrate
# is measured from the frames: a big gap means the file is shorter than its header says.
_SIZE_CHECKED_CONTAINERS = ("mp3", "mov,mp4,m4a,3gp,3g2,mj2")


@dataclass(frozen=True)
class AudioInfo:
    """What ffmpeg says about a file's first audio stream; None when it does not say."""

    duration_ms: int | None
    sample_rate_hz: int | None
    channels: int | None
    codec: str | None
    container: str | None


@functools.cache
def find_ffmpeg() -> str:
    """The ffmpeg executable: the system one on PATH if present, else imageio_ffmpeg's."""
    return shutil.which("ffmpeg") or imageio_ffmpeg.get_ffmpeg_exe()


def _input_arg(path: Path) -> str:
    """The path as an ffmpeg input that no protocol prefix or leading dash can hijack."""
    return "file:" + str(path.absolute())


def read_head(path: Path) -> tuple[bytes, int]:
    """First 64 KiB and the size in bytes; raises AudioNotFound or EmptyAudio."""
    # Look before opening: open() on a FIFO or a device would block or never end.
    try:
        mode = path.stat().st_mode
    except FileNotFoundError as exc:
        raise AudioNotFound(f"audio file not found: {path}", path=str(path)) from exc
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise AudioNotFound(f"cannot read audio file {path}: {reason}", path=str(path)) from exc
    if stat.S_ISDIR(mode):
        raise AudioNotFound(f"not a file but a directory: {path}", path=str(path))
    if not stat.S_ISREG(mode):
        raise AudioNotFound(f"not a regular file: {path}", path=str(path))
    try:
        with path.open("rb") as handle:
            size_bytes = os.fstat(handle.fileno()).st_size
            head = handle.read(_HEAD_BYTES)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise AudioNotFound(f"cannot read audio file {path}: {reason}", path=str(path)) from exc
    if size_bytes == 0:
        raise EmptyAudio(f"empty audio file: {path} (0 bytes)", path=str(path))
    return head, size_bytes


def summarize_stderr(stderr: str, *, limit_chars: int = 200) -> str:
    """ffmpeg's stderr as one short line: component prefixes dropped, repeats removed."""
    seen: list[str] = []
    for raw in stderr.splitlines():
        line = re.sub(r"^(\[[^\]]*\]\s*)+", "", raw).strip()
        if line and line not in seen and not line.startswith(("Consider increasing", "To ignore")):
            seen.append(line)
    text = "; ".join(seen) or "no message"
    return text if len(text) <= limit_chars else text[: limit_chars - 3] + "..."


def probe_audio(path: Path, *, timeout_s: float = 60) -> AudioInfo:
    """Format, codec, rate, channels and duration of `path`; raises AudioError subclasses."""
    return probe_with_confidence(path, timeout_s=timeout_s)[0]


def probe_with_confidence(path: Path, *, timeout_s: float = 60) -> tuple[AudioInfo, bool]:
    """probe_audio, and whether the duration is read from the file rather than guessed."""
    head, size_bytes = read_head(path)
    check_wav_header(head, size_bytes=size_bytes, path=path)
    command = [find_ffmpeg(), "-nostdin", "-hide_banner", "-i", _input_arg(path)]
    try:
        done = subprocess.run(
            command, capture_output=True, timeout=timeout_s, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired as exc:
        raise DecodeFailed(
            f"ffmpeg did not finish probing {path} within {timeout_s:g} s", path=str(path)
        ) from exc
    except OSError as exc:
        raise DecodeFailed(f"cannot run ffmpeg to probe {path}: {exc}", path=str(path)) from exc
    stderr = done.stderr.decode("utf-8", errors="replace")
    info = parse_probe(stderr, path=path, head=head)
    return info, "Estimating duration" not in stderr


def _open_failure(stderr: str, *, path: Path, head: bytes) -> AudioError:
    """The error for a file ffmpeg could not open at all."""
    summary = summarize_stderr(stderr)
    where = str(path)
    if re.search(r"No such file|Permission denied|Is a directory", stderr):
        return AudioNotFound(f"cannot read audio file {path} (ffmpeg: {summary})", path=where)
    if looks_like_text(head):
        return NotAudio(f"not an audio file: {path} (it holds text)", path=where)
    if looks_like_audio(head):
        return CorruptAudio(f"damaged or truncated audio file: {path} ({summary})", path=where)
    return UnsupportedAudio(
        f"unsupported or unrecognized audio format: {path} ({summary})", path=where
    )


def _channels(layout: str) -> int | None:
    """Channel count of an ffmpeg layout name: mono, stereo, 5.1(side), 6 channels."""
    if layout in _CHANNELS_OF_LAYOUT:
        return _CHANNELS_OF_LAYOUT[layout]
    if match := re.fullmatch(r"(\d+) channels", layout):
        return int(match.group(1))
    if match := re.match(r"(\d+)\.(\d+)", layout):
        return int(match.group(1)) + int(match.group(2))
    return None


def _duration_ms(stderr: str) -> int | None:
    """The input's Duration line in milliseconds, None for N/A."""
    match = re.search(r"Duration: (\d+):(\d\d):(\d\d(?:\.\d+)?)", stderr)
    if not match:
        return None
    hours, minutes, seconds = int(match.group(1)), int(match.group(2)), float(match.group(3))
    return round((hours * 3600 + minutes * 60 + seconds) * 1000)


def parse_probe(stderr: str, *, path: Path, head: bytes) -> AudioInfo:
    """AudioInfo from `ffmpeg -i` stderr; raises the AudioError the stderr describes."""
    container_match = re.search(r"^Input #0, (.+?), from ", stderr, re.MULTILINE)
    if not container_match:
        raise _open_failure(stderr, path=path, head=head)
    stream = re.search(r"Stream #0:\d+\S*: Audio: (.*)$", stderr, re.MULTILINE)
    if not stream:
        kinds = sorted(set(re.findall(r"Stream #0:\d+\S*: (\w+):", stderr)))
        found = f"; it holds {', '.join(kinds).lower()}" if kinds else ""
        raise NotAudio(
            f"not an audio file: {path} (ffmpeg found no audio stream{found})", path=str(path)
        )
    fields = [f.strip() for f in stream.group(1).split(",")]
    codec = fields[0].split(" ")[0]
    if codec == "none" or "unknown codec" in stderr:
        raise UnsupportedAudio(f"unsupported audio codec in {path} ({fields[0]})", path=str(path))
    rate = next((int(f[:-3]) for f in fields if re.fullmatch(r"\d+ Hz", f)), None)
    rate_index = next((i for i, f in enumerate(fields) if f.endswith(" Hz")), None)
    channels = _channels(fields[rate_index + 1]) if rate_index is not None else None
    info = AudioInfo(
        duration_ms=_duration_ms(stderr),
        sample_rate_hz=rate,
        channels=channels if channels is not None and len(fields) > 1 else None,
        codec=codec,
        container=container_match.group(1),
    )
    _check_size_against_duration(stderr, info=info, path=path)
    return info


def _check_size_against_duration(stderr: str, *, info: AudioInfo, path: Path) -> None:
    """Raise CorruptAudio when the file holds far less audio than its header promises."""
    if info.container not in _SIZE_CHECKED_CONTAINERS or info.duration_ms is None:
        return
    file_kbps = re.search(r"Duration: [^\n]*bitrate: (\d+) kb/s", stderr)
    stream_kbps = re.search(r"Stream #0:\d+\S*: Audio: [^\n]*?(\d+) kb/s", stderr)
    if not file_kbps or not stream_kbps or "Estimating duration" in stderr:
        return
    ratio = int(file_kbps.group(1)) / max(1, int(stream_kbps.group(1)))
    if ratio < 0.9 and info.duration_ms > 1000:
        promised_s = info.duration_ms / 1000
        raise CorruptAudio(
            f"truncated audio file: {path} (the header promises {promised_s:.1f} s, "
            f"the file holds about {promised_s * ratio:.1f} s)",
            path=str(path),
        )


class PcmDecoder:
    """One ffmpeg decoding a file to 16 kHz mono s16le on a pipe; use as a context manager.

    `timeout_s` bounds the time spent waiting for ffmpeg, not the time the caller
    spends between reads. Leaving the context kills a still-running ffmpeg and reaps it.
    """

    def __init__(self, path: Path, *, timeout_s: float) -> None:
        self.path = path
        self._budget_s = timeout_s
        self._timeout_s = timeout_s
        self._stderr = bytearray()
        self._stdout_open = True
        command = [
            find_ffmpeg(), "-nostdin", "-hide_banner", "-nostats", "-loglevel", "error",
            "-threads", "1", "-i", _input_arg(path), "-map", "0:a:0", "-vn", "-sn", "-dn",
            "-ac", "1", "-ar", str(OUTPUT_SAMPLE_RATE_HZ), "-c:a", "pcm_s16le", "-f", "s16le",
            "-flush_packets", "0",
            "pipe:1",
        ]  # fmt: skip
        try:
            self._proc = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
        except OSError as exc:
            raise DecodeFailed(
                f"cannot run ffmpeg to decode {path}: {exc}", path=str(path)
            ) from exc
        stdout, stderr = self._proc.stdout, self._proc.stderr
        if stdout is None or stderr is None:  # impossible with PIPE; keeps mypy honest
            raise DecodeFailed(f"ffmpeg gave no pipes for {path}", path=str(path))
        self._stdout_fd = stdout.fileno()
        self._stderr_fd = stderr.fileno()
        with contextlib.suppress(OSError):  # a bigger pipe is an optimization, not a need
            fcntl.fcntl(self._stdout_fd, _F_SETPIPE_SZ, _PIPE_BYTES)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._stdout_fd, selectors.EVENT_READ)
        self._selector.register(self._stderr_fd, selectors.EVENT_READ)

    def __enter__(self) -> PcmDecoder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Kill ffmpeg if it still runs, reap it, close the pipes; safe to call twice."""
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()
        self._selector.close()
        for pipe in (self._proc.stdout, self._proc.stderr):
            if pipe is not None:
                pipe.close()

    def _wait_ready(self) -> list[int]:
        """File descriptors ready to read; raises DecodeFailed when the budget is spent."""
        started = time.monotonic()
        events = self._selector.select(timeout=max(0.0, self._budget_s))
        self._budget_s -= time.monotonic() - started
        if not events and self._budget_s <= 0:
            self.close()
            raise DecodeFailed(
                f"ffmpeg did not finish decoding {self.path} within {self._timeout_s:g} s",
                path=str(self.path),
            )
        return [int(key.fd) for key, _ in events]

    def _drain_stderr(self) -> None:
        """Read what ffmpeg wrote to stderr, keeping the first 16 KiB."""
        data = os.read(self._stderr_fd, 65536)
        if not data:
            self._selector.unregister(self._stderr_fd)
        elif len(self._stderr) < _STDERR_KEEP_BYTES:
            self._stderr += data[: _STDERR_KEEP_BYTES - len(self._stderr)]

    def readinto(self, view: memoryview) -> int:
        """Fill the start of `view` with PCM bytes; 0 at the end of the stream."""
        while self._stdout_open:
            for fd in self._wait_ready():
                if fd == self._stderr_fd:
                    self._drain_stderr()
                    continue
                count = os.readv(self._stdout_fd, [view])
                if count:
                    return count
                self._stdout_open = False
                self._selector.unregister(self._stdout_fd)
        return 0

    def finish(self) -> None:
        """After the last read: wait for ffmpeg's exit; raises the error its stderr names."""
        while self._selector.get_map():
            if self._stderr_fd in self._wait_ready():
                self._drain_stderr()
        self._proc.wait()
        if self._proc.returncode != 0:
            raise self._exit_failure(self._proc.returncode)

    def _exit_failure(self, returncode: int) -> AudioError:
        """The error for ffmpeg exiting non-zero during the decode."""
        stderr = self._stderr.decode("utf-8", errors="replace")
        summary = summarize_stderr(stderr)
        where = str(self.path)
        if "matches no streams" in stderr:
            return NotAudio(
                f"not an audio file: {self.path} (ffmpeg found no audio stream)", path=where
            )
        if re.search(r"no decoder found|Decoder .* not found|unknown codec", stderr, re.I):
            return UnsupportedAudio(
                f"unsupported audio codec in {self.path} ({summary})", path=where
            )
        if re.search(
            r"Invalid data|partial file|corrupt|truncat|error while decoding", stderr, re.I
        ):
            return CorruptAudio(
                f"damaged or truncated audio file: {self.path} ({summary})", path=where
            )
        return DecodeFailed(
            f"ffmpeg failed to decode {self.path} (exit {returncode}: {summary})", path=where
        )
