"""How long a recording is, before any of it is decoded (the per-run audio cap).

A PCM or float WAV medasr reads itself is measured from its header, in-process; any
other file by one ffmpeg probe. A file whose length no header states is measured by its
size as 16 kHz 16-bit mono audio, which is at least as long as most compressed dictation is.
"""

from __future__ import annotations

from pathlib import Path

from tasks.audio.ffmpeg import probe_audio, read_head, require_speech_rate
from tasks.audio.native_wav import pcm_data_chunk

# 16 kHz, 2 bytes a sample: bytes of the normalized signal per ms.
_PCM_BYTES_PER_MS = 32


def audio_length_ms(path: Path, *, timeout_s: float = 60) -> int:
    """The recording's length in ms as its header says (see the module docstring for a
    file that says none); raises the AudioError subclasses of probe_audio."""
    head, size_bytes = read_head(path)
    data = pcm_data_chunk(head, size_bytes=size_bytes)
    if data is not None:  # a placeholder size: up to the end of the file (never less)
        return data.size_bytes // data.frame_bytes * 1000 // data.rate_hz
    info = probe_audio(path, timeout_s=timeout_s)
    require_speech_rate(info, path=path)  # a damaged header would take the whole budget
    duration_ms = info.duration_ms
    return duration_ms if duration_ms is not None else size_bytes // _PCM_BYTES_PER_MS
