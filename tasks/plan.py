"""The dry run: what a backlog run would do, from a listing and a probe, sending nothing."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from service.contract import PREFERRED_SAMPLE_RATE_HZ, WAV_HEADER_BYTES
from storage.sources import SourceFile, fetch_local, list_audio
from tasks.audio import probe_audio
from tasks.errors import AudioError

_BYTES_PER_MS = PREFERRED_SAMPLE_RATE_HZ * 2 / 1000  # 16 kHz mono s16le


@dataclass(frozen=True)
class Plan:
    """Files, audio and requests a run would make; `unprobed` could not be read."""

    files: int
    audio_ms: int
    chunks: int
    requests: int
    unprobed: int
    not_listed: int


def estimate_chunks(duration_ms: int, *, max_wav_bytes: int) -> int:
    """Chunks a recording of `duration_ms` needs under `max_wav_bytes` (at least 1)."""
    payload = max(1, max_wav_bytes - WAV_HEADER_BYTES)
    return max(1, math.ceil(duration_ms * _BYTES_PER_MS / payload))


def plan_backlog(
    *,
    source: str,
    max_wav_bytes: int,
    settle_s: float,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    storage_options: Mapping[str, Any] | None = None,
    workers: int = 4,
) -> Plan:
    """List and probe every file under `source`; raises SourceError for a bad source."""
    listing = list_audio(
        source, include=include, exclude=exclude, settle_s=settle_s, storage_options=storage_options
    )

    def duration(file: SourceFile) -> int | None:
        try:
            with fetch_local(file.uri, storage_options=storage_options) as path:
                return probe_audio(Path(path)).duration_ms
        except AudioError:
            return None

    with ThreadPoolExecutor(max_workers=workers) as pool:
        durations = list(pool.map(duration, listing.files))
    known = [d for d in durations if d is not None]
    chunks = sum(estimate_chunks(d, max_wav_bytes=max_wav_bytes) for d in known)
    return Plan(
        files=len(listing.files),
        audio_ms=sum(known),
        chunks=chunks,
        requests=chunks,
        unprobed=len(durations) - len(known),
        not_listed=len(listing.skipped),
    )
