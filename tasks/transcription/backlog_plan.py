"""The dry run: what a backlog run would send, from the listing, the store and a decode.

Nothing is sent and nothing is written. A file the store holds with the same version
and size, finished (done, skipped or failed), is not read: the run will not claim it.
Every other file is read as the run reads it: fingerprinted (content already
transcribed costs no request), then split exactly as the run splits it, so silent
chunks, chunks finished by an earlier run and all-silent files are not counted as
requests; a copy of content the plan already sends is reused, as the run's copies wait
for the answer in flight. Reading costs a decode per file that would be sent, and no
network. The listing streams and at most a few files per worker are read at once.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from service.contract import is_supported_language
from storage.errors import SourceError
from storage.interface import UnitOfWorkFactory
from storage.records import ChunkRecord, ItemRecord, ItemStatus, SkippedFile, SourceFile
from storage.sources import SourceLocation, fetch_and_fingerprint, iter_audio
from tasks.audio import iter_chunks
from tasks.discovery.languages import FileLanguages
from tasks.errors import AudioError, DamagedTail, SilentAudio
from tasks.transcription.billing import MS_PER_MIN, billed_ms, cost_of
from tasks.transcription.coverage import Coverage
from tasks.transcription.reuse import ReuseDecision, ReuseFacts, decide_reuse, read_reuse_facts

# Items in these states with the listed version are not claimed again by a run.
_FINISHED = (
    ItemStatus.DONE,
    ItemStatus.NEEDS_REVIEW,
    ItemStatus.SKIPPED,
    ItemStatus.FAILED,
    ItemStatus.PURGED,
)

# Listed files whose store records are read in one query.
LOOKUP_BATCH = 500
# Files not decodable the plan names (URIs); the rest are only counted.
NAMED_UNDECODABLE = 10
T = TypeVar("T")
R = TypeVar("R")

Verdict = Literal[
    "unchanged", "reused", "silent", "undecodable", "language_not_taken", "transcribe"
]


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
    undecodable_uris: tuple[str, ...] = ()  # the first NAMED_UNDECODABLE of them
    billed_ms: int = 0  # the requests' audio as billed (each at least the billed minimum)
    # Its language (the manifest's, else --language) is not one the service takes: the
    # run fails it (metadata_invalid) before reading it; the first ones named.
    language_not_taken: int = 0
    language_not_taken_uris: tuple[str, ...] = ()
    # The first files the listing left out, and the reason of each in words.
    not_listed_uris: tuple[str, ...] = ()
    not_listed_reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class FilePlan:
    """What the run would do with one listed file."""

    verdict: Verdict
    audio_ms: int = 0
    chunks: int = 0
    requests: int = 0
    uri: str | None = None  # named for a file not decodable or in a language not taken
    billed_ms: int = 0


class _PlannedContent:
    """Content the plan already sends, by sha256: its copies are planned as reused, as the
    run makes a copy wait for the answer in flight. 8 bytes of the digest per entry (a
    collision is 2^-64 per pair) keep 10^6 distinct recordings near 60 MB."""

    def __init__(self) -> None:
        self._keys: set[int] = set()
        self._lock = threading.Lock()

    def __contains__(self, sha256: str) -> bool:
        return int(sha256[:16], 16) in self._keys

    def claim(self, sha256: str) -> bool:
        """True for the first plan of this content; False for a copy."""
        key = int(sha256[:16], 16)
        with self._lock:
            if key in self._keys:
                return False
            self._keys.add(key)
            return True


@dataclass(frozen=True)
class _Reader:
    """Reads one file the way the run would, against what the store already holds."""

    store: UnitOfWorkFactory | None
    languages: FileLanguages
    max_wav_bytes: int
    min_pause_ms: int
    storage_options: Mapping[str, Any] | None
    billed_min_ms: int = 0
    planned: _PlannedContent = field(default_factory=_PlannedContent)

    def plan(self, file: SourceFile, item: ItemRecord | None) -> FilePlan:
        language = self.languages.of(file.uri)
        if not is_supported_language(language):  # the run's check, before a byte is read
            return FilePlan("language_not_taken", uri=file.uri)
        try:
            with fetch_and_fingerprint(file.uri, storage_options=self.storage_options) as fetched:
                sha256 = fetched.fingerprint.sha256
                decision = self._decide(item, sha256=sha256, language=language)
                if decision.stays_purged or decision.stays_as_was:  # touched, same bytes
                    return FilePlan("unchanged")
                if decision.reuses_transcript or sha256 in self.planned:
                    return FilePlan("reused")
                planned = self._split(fetched.path, finished=decision.answered)
        except SilentAudio:
            return FilePlan("silent")
        except (AudioError, SourceError):
            return FilePlan("undecodable", uri=file.uri)
        # Copies decoded at the same moment: the first to finish is the one sent.
        if planned.verdict == "transcribe" and not self.planned.claim(sha256):
            return FilePlan("reused")
        return planned

    def _split(self, path: Path, *, finished: Mapping[int, ChunkRecord]) -> FilePlan:
        chunks = requests = audio_ms = billed = 0
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
                if chunk.silent or coverage.reused_text(chunk) is not None:
                    continue
                requests += 1
                billed += billed_ms(
                    audio_ms=chunk.end_ms - chunk.start_ms, billed_min_ms=self.billed_min_ms
                )
        if chunks == 0:
            return FilePlan("silent")
        return FilePlan(
            "transcribe", audio_ms=audio_ms, chunks=chunks, requests=requests, billed_ms=billed
        )

    def _decide(self, item: ItemRecord | None, *, sha256: str, language: str) -> ReuseDecision:
        """The run's own reuse decision (tasks/transcription/reuse.py), read in one transaction."""
        if self.store is None:
            return decide_reuse(item, sha256=sha256, facts=ReuseFacts())
        with self.store.unit_of_work(read_only=True) as uow:
            facts = read_reuse_facts(uow, item, sha256=sha256, language=language)
        return decide_reuse(item, sha256=sha256, facts=facts)


def plan_backlog(
    *,
    source: SourceLocation | str,
    language: str | None,
    store: UnitOfWorkFactory | None,
    max_wav_bytes: int,
    min_pause_ms: int,
    settle_s: float,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    storage_options: Mapping[str, Any] | None = None,
    workers: int = 4,
    billed_min_ms: int = 0,
    metadata: Mapping[str, Mapping[str, str]] | None = None,
) -> Plan:
    """What a run over `source` would do; `store` None: nothing recorded yet.

    The listing streams: the store is read `LOOKUP_BATCH` files at a time and at most
    `workers` * 4 files are being read at once, so memory does not grow with the
    archive. Raises SourceError for a bad source; never writes to the store.
    """
    stream = iter_audio(
        source, include=include, exclude=exclude, settle_s=settle_s, storage_options=storage_options
    )
    languages = FileLanguages(metadata, default=language)  # the manifest's, else `language`
    reader = _Reader(store, languages, max_wav_bytes, min_pause_ms, storage_options, billed_min_ms)
    totals = _Totals()
    known = _with_known_items(store, stream.files, languages=languages)
    to_read = _counting_settled(known, totals=totals)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for file_plan in bounded_map(
            lambda pair: reader.plan(*pair), to_read, pool=pool, ahead=4 * workers
        ):
            totals.add(file_plan)
    return totals.plan(skipped=stream.skipped)


def bounded_map(
    call: Callable[[T], R],
    values: Iterable[T],
    *,
    ahead: int,
    workers: int = 1,
    pool: Executor | None = None,
) -> Iterator[R]:
    """`pool.map` that takes at most `ahead` values beyond what was consumed, in order.

    Executor.map submits every value at once (the whole archive); this keeps memory flat.
    Without `pool`, one of `workers` threads is made for the iteration.
    """
    if pool is None:
        with ThreadPoolExecutor(max_workers=workers) as own:
            yield from bounded_map(call, values, ahead=ahead, pool=own)
        return
    pending: deque[Future[R]] = deque()
    for value in values:
        pending.append(pool.submit(call, value))
        if len(pending) >= ahead:
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()


@dataclass
class _Totals:
    """The plan added up one file at a time (no list of every file's plan)."""

    counts: Counter[str] = field(default_factory=Counter)
    audio_ms: int = 0
    chunks: int = 0
    requests: int = 0
    billed_ms: int = 0
    named: dict[str, list[str]] = field(default_factory=dict)  # URIs by verdict

    def add(self, file_plan: FilePlan) -> None:
        self.counts[file_plan.verdict] += 1
        named = self.named.setdefault(file_plan.verdict, [])
        if file_plan.uri is not None and len(named) < NAMED_UNDECODABLE:
            named.append(file_plan.uri)
        self.audio_ms += file_plan.audio_ms
        self.chunks += file_plan.chunks
        self.requests += file_plan.requests
        self.billed_ms += file_plan.billed_ms

    def plan(self, *, skipped: Sequence[SkippedFile]) -> Plan:
        """The totals, and `skipped`: what the listing left out."""
        named_skipped = skipped[:NAMED_UNDECODABLE]
        return Plan(
            files=sum(self.counts.values()),
            unchanged=self.counts["unchanged"],
            reused=self.counts["reused"],
            silent=self.counts["silent"],
            undecodable=self.counts["undecodable"],
            to_transcribe=self.counts["transcribe"],
            audio_ms=self.audio_ms,
            chunks=self.chunks,
            requests=self.requests,
            not_listed=len(skipped),
            undecodable_uris=tuple(self.named.get("undecodable", ())),
            billed_ms=self.billed_ms,
            language_not_taken=self.counts["language_not_taken"],
            language_not_taken_uris=tuple(self.named.get("language_not_taken", ())),
            not_listed_uris=tuple(s.uri for s in named_skipped),
            not_listed_reasons=tuple(s.reason for s in named_skipped),
        )


def plan_rows(plan: Plan, *, price_per_audio_min: float = 0.0) -> dict[str, int | float]:
    """The plan as named numbers, in the order a person reads them (no names, no text):
    the billed minutes and their cost bill each planned request once (no retries)."""
    return {
        "files": plan.files,
        "files_unchanged": plan.unchanged,
        "files_same_content": plan.reused,
        "files_silent": plan.silent,
        "files_not_decodable": plan.undecodable,
        "files_language_not_taken": plan.language_not_taken,
        "files_not_listed": plan.not_listed,
        "files_to_transcribe": plan.to_transcribe,
        "audio_hours": round(plan.audio_ms / 3_600_000, 3),
        "chunks": plan.chunks,
        "requests": plan.requests,
        "billed_minutes": round(plan.billed_ms / MS_PER_MIN, 2),
        "estimated_cost": cost_of(
            billed_ms=plan.billed_ms, price_per_audio_min=price_per_audio_min
        ),
    }


def _counting_settled(
    known: Iterator[tuple[SourceFile, ItemRecord | None, bool]], *, totals: _Totals
) -> Iterator[tuple[SourceFile, ItemRecord | None]]:
    """The files to read; settled ones are counted unchanged here, not read."""
    for file, item, settled in known:
        if settled:
            totals.add(FilePlan("unchanged"))
        else:
            yield file, item


def _with_known_items(
    store: UnitOfWorkFactory | None, files: Iterator[SourceFile], *, languages: FileLanguages
) -> Iterator[tuple[SourceFile, ItemRecord | None, bool]]:
    """Each streamed file with what the store holds for it, and whether it is settled:
    finished earlier with this version, so a run will not claim it. Two queries per
    LOOKUP_BATCH files; whole records only for the files that are not settled."""
    while batch := list(itertools.islice(files, LOOKUP_BATCH)):
        if store is None:
            for file in batch:
                yield file, None, False
            continue
        to_read: set[str] = set()
        known: dict[str, ItemRecord] = {}
        with store.unit_of_work(read_only=True) as uow:
            for language, files_in_language in languages.grouped(batch):
                unsettled = uow.item_queries.find_unsettled(
                    files_in_language, language=language, settled=_FINISHED
                )
                known |= uow.item_queries.find_items(source_uris=unsettled, language=language)
                to_read.update(unsettled)
        for file in batch:
            yield file, known.get(file.uri), file.uri not in to_read
