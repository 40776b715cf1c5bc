"""Hand-made PCM WAV files, and what reading one in chunks gives."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

from devserver.tone import decode_wav_bytes
from tasks.audio import WAV_HEADER_BYTES, DecoderPool, iter_chunks

TEXT = "native wav needs no decoder. every sample kept, 100% of them."


def raw_wav(
    samples: np.ndarray,
    *,
    extra_chunk: bytes = b"",
    declared: int | None = None,
    trailer: bytes = b"",
) -> bytes:
    """A hand-made PCM WAV: optional chunks before and after `data`, optional data size."""
    data = samples.astype("<i2").tobytes()
    fmt = struct.pack("<HHIIHH", 1, 1, 16_000, 32_000, 2, 16)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + extra_chunk
    body += b"data" + struct.pack("<I", len(data) if declared is None else declared) + data
    return b"RIFF" + struct.pack("<I", len(body + trailer)) + body + trailer


def pcm_of(
    path: Path, *, max_bytes: int = 200_000, decoders: DecoderPool | None = None
) -> tuple[np.ndarray, str]:
    chunks = list(iter_chunks(path, max_bytes=max_bytes, decoders=decoders))
    pcm = np.concatenate([np.frombuffer(c.wav[WAV_HEADER_BYTES:], dtype=np.int16) for c in chunks])
    return pcm, " ".join(decode_wav_bytes(c.wav) for c in chunks)
