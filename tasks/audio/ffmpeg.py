"""ffmpeg as a subprocess: probe a file, word its failures (the binary: ffmpeg_binary.py).

There is no ffprobe: `probe_audio` parses what `ffmpeg -i PATH` prints (`parse_probe`,
also used on the decode's own stderr by tasks/audio/decoder.py, which streams the decode).
Inputs are always read from a path (``file:`` protocol, so a name like ``concat:x`` is
just a name): an m4a whose index sits at the end decodes to 0 s through a pipe. Every
ffmpeg process is waited for; its failures become one-line tasks/errors.py errors.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

from tasks.audio.ffmpeg_binary import find_ffmpeg as find_ffmpeg
from tasks.audio.formats import unsupported_format_sentence
from tasks.audio.sniff import check_wav_header, looks_like_audio, looks_like_text
from tasks.errors import (
    AudioError,
    AudioNotFound,
    CorruptAudio,
    DecodeFailed,
    DecoderInterrupted,
    EmptyAudio,
    NotAudio,
    UnsupportedAudio,
    UnsupportedFormat,
    signal_name,
)

OUTPUT_SAMPLE_RATE_HZ = 16_000
_HEAD_BYTES = 64 * 1024
_GENERIC_LINE = re.compile(r"Error opening (input|output) file(s: | .*\.$)")

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
    # Why the file holds less audio than its header promises (found by the probe), if so.
    truncated: str | None = None


# Below this no recorder writes speech (telephony is 8 kHz, the oldest codecs 5.5): a
# header saying less is damaged, and read at its word it stretches a few seconds of
# samples into hours of audio to send and pay for.
MIN_SPEECH_RATE_HZ = 4_000


def require_speech_rate(info: AudioInfo, *, path: Path) -> None:
    """Raise CorruptAudio when `info` states a sample rate no recording has."""
    rate_hz = info.sample_rate_hz
    if rate_hz is None or rate_hz >= MIN_SPEECH_RATE_HZ:
        return
    raise CorruptAudio(
        f"damaged header in {path}: it declares a sample rate of {rate_hz} Hz, under the "
        f"{MIN_SPEECH_RATE_HZ:,} Hz any recorder writes speech at (read as it says, its "
        "samples would last many times the recording); nothing was sent",
        path=str(path),
    )


def input_arg(path: Path) -> str:
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
    """ffmpeg's stderr as one short line: prefixes, repeats and generic wrap-ups dropped."""
    seen: list[str] = []
    for raw in stderr.splitlines():
        line = re.sub(r"^(\[[^\]]*\]\s*)+", "", raw).strip()
        if line and line not in seen and not line.startswith(("Consider increasing", "To ignore")):
            seen.append(line)
    # "Error opening input file file:/x.wav." repeats the path the message already names,
    # and "Error opening input files: ..." repeats the line before it.
    specific = [line for line in seen if not _GENERIC_LINE.match(line)]
    text = "; ".join(specific or seen) or "no message"
    return text if len(text) <= limit_chars else text[: limit_chars - 3] + "..."


def probe_audio(path: Path, *, timeout_s: float = 60) -> AudioInfo:
    """Format, codec, rate, channels and duration of `path`; raises AudioError subclasses."""
    return probe_with_confidence(path, timeout_s=timeout_s)[0]


def probe_with_confidence(path: Path, *, timeout_s: float = 60) -> tuple[AudioInfo, bool]:
    """probe_audio, and whether the duration is read from the file rather than guessed."""
    head, size_bytes = read_head(path)
    check_wav_header(head, size_bytes=size_bytes, path=path)
    command = [find_ffmpeg(), "-nostdin", "-hide_banner", "-i", input_arg(path)]
    try:
        done = subprocess.run(  # its own process group: a Ctrl-C is medasr's to judge
            command,
            capture_output=True,
            timeout=timeout_s,
            stdin=subprocess.DEVNULL,
            process_group=0,
        )
    except subprocess.TimeoutExpired as exc:
        raise DecodeFailed(
            f"ffmpeg did not finish probing {path} within {timeout_s:g} s", path=str(path)
        ) from exc
    except OSError as exc:
        raise DecodeFailed(f"cannot run ffmpeg to probe {path}: {exc}", path=str(path)) from exc
    stderr = done.stderr.decode("utf-8", errors="replace")
    received = re.search(r"received signal (\d+)", stderr)  # ffmpeg caught it, exit 255
    if done.returncode < 0 or received:
        signum = int(received.group(1)) if received else -done.returncode
        raise DecoderInterrupted(
            f"ffmpeg was stopped by {signal_name(-signum)} while probing {path}; "
            "the recording stays pending",
            path=str(path),
        )
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
    return UnsupportedFormat(unsupported_format_sentence(head, path=path), path=where)


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


def parse_probe(stderr: str, *, path: Path, head: bytes, keep_truncated: bool = False) -> AudioInfo:
    """AudioInfo from `ffmpeg -i` stderr; raises the AudioError the stderr describes.

    With `keep_truncated`, a file shorter than its header promises is not an error: the
    reason is returned in `truncated`, so that its readable part can still be decoded.
    """
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
    shortfall = _size_shortfall(stderr, info=info, path=path)
    if shortfall is None:
        return info
    if keep_truncated:
        return replace(info, truncated=shortfall)
    raise CorruptAudio(shortfall, path=str(path))


def _size_shortfall(stderr: str, *, info: AudioInfo, path: Path) -> str | None:
    """Why the file holds far less audio than its header promises; None if it does not."""
    if info.container not in _SIZE_CHECKED_CONTAINERS or info.duration_ms is None:
        return None
    file_kbps = re.search(r"Duration: [^\n]*bitrate: (\d+) kb/s", stderr)
    stream_kbps = re.search(r"Stream #0:\d+\S*: Audio: [^\n]*?(\d+) kb/s", stderr)
    if not file_kbps or not stream_kbps or "Estimating duration" in stderr:
        return None
    ratio = int(file_kbps.group(1)) / max(1, int(stream_kbps.group(1)))
    if ratio >= 0.9 or info.duration_ms <= 1000:
        return None
    promised_s = info.duration_ms / 1000
    return (
        f"truncated audio file: {path} (the header promises {promised_s:.1f} s, "
        f"the file holds about {promised_s * ratio:.1f} s)"
    )
