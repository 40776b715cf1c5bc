"""The dry run: what a backlog run would send, from the listing, the store and a decode.

Nothing is sent and nothing is written. A file the store holds with the same version
and size, finished (done, skipped or failed), is not read: the run will not claim it.
Every other file is read as the run reads it: fingerprinted (content already
transcribed costs no request), then split exactly as the run splits it, so silent
chunks, chunks finished by an earlier run and all-silent files are not counted as
requests. Reading costs a decode per file that would be sent, and no network.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from storage.errors import SourceError
from storage.interface import UnitOfWorkFactory
from storage.records import ChunkRecord, ItemRecord, ItemStatus, SourceFile
from storage.sources import SourceLocation, fetch_and_fingerprint, list_audio
from tasks.audio import iter_chunks
from tasks.errors import AudioError, DamagedTail, SilentAudio
from tasks.transcription.coverage import Coverage
from tasks.transcription.reuse import ReuseDecision, ReuseFacts, decide_reuse, read_reuse_facts

# Items in these states with the listed version are not claimed again by a run.
_FINISHED = (ItemStatus.DONE, ItemStatus.NEEDS_REVIEW, ItemStatus.SKIPPED, ItemStatus.FAILED)

Verdict = Literal["unchanged", "reused", "silent", "undecodable", "transcribe"]


@dataclass(frozen=True)
class Plan:
    """Files, audio and requests a run would make; each listed file lands in one bucket."""

    files: int  # listed
    unchanged: int  # finished earlier with this version: not claimed again
    reused: int  # same content as a finished transcript: nothing sent
    silent: int  # no speech anywhere: skipped, nothing sent
    undecodable: int  # cannot be read or decoded: would fail, nothing sent
    to_transcribe: int  # files with at least one chunk to send or reuse
    audio_ms: int  # audio of the files to transcribe
    chunks: int  # their chunks, silent and already finished ones included
    requests: int  # chunks that would be sent: not silent, not finished earlier
    not_listed: int  # skipped by the listing (still being written, unreadable)


@dataclass(frozen=True)
class FilePlan:
    """What the run would do with one listed file."""

    verdict: Verdict
    audio_ms: int = 0
    chunks: int = 0
    requests: int = 0


@dataclass(frozen=True)
class _Reader:
    """Reads one file the way the run would, against what the store already holds."""

    store: UnitOfWorkFactory | None
    language: str
    max_wav_bytes: int
    min_pause_ms: int
    storage_options: Mapping[str, Any] | None

    def plan(self, file: SourceFile, item: ItemRecord | None) -> FilePlan:
        if item is not None and _unchanged(item, file):
            return FilePlan("unchanged")
        try:
            with fetch_and_fingerprint(file.uri, storage_options=self.storage_options) as fetched:
                decision = self._decide(item, sha256=fetched.fingerprint.sha256)
                if decision.reuses_transcript:
                    return FilePlan("reused")
                return self._split(fetched.path, finished=decision.answered)
        except SilentAudio:
            return FilePlan("silent")
        except (AudioError, SourceError):
            return FilePlan("undecodable")

    def _split(self, path: Path, *, finished: Mapping[int, ChunkRecord]) -> FilePlan:
        chunks = requests = audio_ms = 0
        coverage = Coverage(finished)  # what the run reuses: answered audio, by range
        split = iter_chunks(
            path,
            max_bytes=self.max_wav_bytes,
            min_pause_ms=self.min_pause_ms,
            cut_at_samples=coverage.cut_points(),
        )
        with contextlib.suppress(DamagedTail):  # the run keeps the readable part
            for chunk in split:
                chunks, audio_ms = chunks + 1, chunk.end_ms
                reused = coverage.reused_text(chunk) is not None
                requests += not (chunk.silent or reused)
        if chunks == 0:
            return FilePlan("silent")
        return FilePlan("transcribe", audio_ms=audio_ms, chunks=chunks, requests=requests)

    def _decide(self, item: ItemRecord | None, *, sha256: str) -> ReuseDecision:
        """The run's own reuse decision (tasks/transcription/reuse.py), read in one transaction."""
        if self.store is None:
            return decide_reuse(item, sha256=sha256, facts=ReuseFacts())
        with self.store.unit_of_work(read_only=True) as uow:
            facts = read_reuse_facts(uow, item, sha256=sha256, language=self.language)
        return decide_reuse(item, sha256=sha256, facts=facts)


def plan_backlog(
    *,
    source: SourceLocation | str,
    language: str,
    store: UnitOfWorkFactory | None,
    max_wav_bytes: int,
    min_pause_ms: int,
    settle_s: float,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    storage_options: Mapping[str, Any] | None = None,
    workers: int = 4,
) -> Plan:
    """What a run over `source` would do; `store` None: nothing recorded yet.

    Raises SourceError for a bad source; never writes to the store.
    """
    listing = list_audio(
        source, include=include, exclude=exclude, settle_s=settle_s, storage_options=storage_options
    )
    known = _known_items(store, listing.files, language=language)
    reader = _Reader(store, language, max_wav_bytes, min_pause_ms, storage_options)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        plans = list(pool.map(lambda f: reader.plan(f, known.get(f.uri)), listing.files))
    return total_plan(plans, not_listed=len(listing.skipped))


def total_plan(plans: Sequence[FilePlan], *, not_listed: int) -> Plan:
    """Add up the plans of single files."""
    counts = {name: sum(p.verdict == name for p in plans) for name in get_args(Verdict)}
    return Plan(
        files=len(plans),
        unchanged=counts["unchanged"],
        reused=counts["reused"],
        silent=counts["silent"],
        undecodable=counts["undecodable"],
        to_transcribe=counts["transcribe"],
        audio_ms=sum(p.audio_ms for p in plans),
        chunks=sum(p.chunks for p in plans),
        requests=sum(p.requests for p in plans),
        not_listed=not_listed,
    )


def plan_rows(plan: Plan) -> dict[str, int | float]:
    """The plan as named numbers, in the order a person reads them (no names, no text)."""
    return {
        "files": plan.files,
        "files_unchanged": plan.unchanged,
        "files_same_content": plan.reused,
        "files_silent": plan.silent,
        "files_not_decodable": plan.undecodable,
        "files_not_listed": plan.not_listed,
        "files_to_transcribe": plan.to_transcribe,
        "audio_hours": round(plan.audio_ms / 3_600_000, 3),
        "chunks": plan.chunks,
        "requests": plan.requests,
    }


def _unchanged(item: ItemRecord, file: SourceFile) -> bool:
    same = (item.source_version, item.size_bytes) == (file.version, file.size_bytes)
    return same and item.status in _FINISHED


def _known_items(
    store: UnitOfWorkFactory | None, files: Sequence[SourceFile], *, language: str
) -> dict[str, ItemRecord]:
    """What the store holds for the listed files, by URI (one query per batch of URIs)."""
    if store is None:
        return {}
    with store.unit_of_work(read_only=True) as uow:
        return uow.items.find_items(source_uris=[file.uri for file in files], language=language)
