"""Answers kept on local disk until the store has them: a journal, one file per answer.

Transcription keeps paid chunk answers (PaidChunk), delivery keeps accepted uploads
(AcceptedDelivery: the receiver filed the document; recording it again would file it
twice). After an HTTP 200 the text is paid for. A delivery's store write is retried with
backoff (`record_paid_chunk`); if the store stays down, the answer goes to
`<data dir>/journal/<item>-<chunk>-<random>.json` (file 0600, folder 0700, written to a
temporary name and renamed, so a crash leaves a whole entry or none), and the next run
records it (`replay_journal`) before it sends anything. A chunk answer is journaled at
once, without fsync, and its entry removed when its group commit is in
(tasks/work/paid_answers.py says what a crash and a power loss cost). The transcript text is in the
entry and nowhere else: no log line, message or exception carries it.

Workers on one host share the folder, so a worker starting up also replays the entries
of one still running: the row it writes is the one the writer's commit writes (an
upsert), and whichever of the two removes the file second finds it gone, which is fine.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import secrets
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_delay
from tenacity.wait import wait_random_exponential

from config.errors import ConfigError
from config.private_files import PRIVATE_FOLDER_MODE, create_private_file, make_private_folders
from storage.errors import StoreUnavailable
from storage.interface import UnitOfWork, UnitOfWorkFactory

logger = logging.getLogger("medasr.journal")

_SUFFIX = ".json"
# Paid answers of this process not yet in the store (their write is being retried), so
# that a process about to end at once (a second Ctrl-C) can journal them first.
_unrecorded: dict[int, tuple[Journal, PaidChunk | AcceptedDelivery]] = {}


@dataclass(frozen=True)
class PaidChunk:
    """One answered chunk as the store would record it, with the content it belongs to."""

    item_id: int
    source_uri: str
    sha256: str | None  # the content fingerprint the chunk was cut from
    index: int
    start_ms: int
    end_ms: int
    size_bytes: int
    text: str
    attempts: int
    txn_id: str | None
    latency_ms: float | None

    @property
    def journal_name(self) -> str:
        """What its file is named after."""
        return f"{self.item_id}-{self.index}"


@dataclass(frozen=True)
class AcceptedDelivery:
    """An upload the receiver accepted, as the store would record it."""

    delivery_id: int
    version: str  # the transcript version that was sent
    response: dict[str, Any]
    remote_id: str | None

    @property
    def journal_name(self) -> str:
        """What its file is named after."""
        return f"delivery-{self.delivery_id}"


Entry = TypeVar("Entry", PaidChunk, AcceptedDelivery)
_SUBFOLDER = {"PaidChunk": "", "AcceptedDelivery": "deliveries"}


@dataclass(frozen=True)
class ReplayResult:
    """What a replay did: entries recorded, dropped (stale), and left for later."""

    recorded: int = 0
    dropped: int = 0
    kept: int = 0


class Journal:
    """The folder of answers not yet in the store (deliveries in a subfolder of it)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._made: set[Path] = set()  # folders made (0700) by this object: once, not per entry
        # Entry names: this object's random part (workers on one host share the folder)
        # and a count. A random part per entry cost a getrandom call on the event loop
        # for every chunk answer (0.4 ms of wall on a busy run, its GIL given up).
        self._token = secrets.token_hex(6)
        self._count = itertools.count()

    @classmethod
    def in_data_dir(cls, data_dir: Path) -> Journal:
        """The journal of a MEDASR_DATA_DIR: its `journal` folder (made on first write)."""
        return cls(data_dir / "journal")

    def keep(self, paid: PaidChunk | AcceptedDelivery, *, durable: bool = True) -> Path:
        """Write one entry (0600, in a 0700 folder made here); returns its path. Raises OSError.

        `durable=False` skips the fsync: the entry outlives the process, not a power loss
        (a chunk answer on its way to a group commit: tasks/work/paid_answers.py)."""
        folder = self._folder_of(type(paid))
        if folder not in self._made:  # a stat per parent and a chmod: not per chunk answer
            self._make_folder(folder)
            self._made.add(folder)
        name = f"{paid.journal_name}-{self._token}{next(self._count):x}"
        partial = folder / f".{name}.tmp"
        final = folder / f"{name}{_SUFFIX}"
        try:
            descriptor = create_private_file(partial)
        except FileNotFoundError:  # the folder went away since: make it again
            self._make_folder(folder)
            descriptor = create_private_file(partial)
        # vars, not asdict: the fields are flat (asdict deep-copies); one write, no buffer
        _write_whole(descriptor, json.dumps(vars(paid)).encode("utf-8"), durable=durable)
        os.replace(partial, final)
        return final

    @staticmethod
    def make_durable(entry: Path) -> None:
        """fsync an entry written with `durable=False` (the store stayed down). Raises OSError."""
        descriptor = os.open(entry, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)

    def entries(self) -> Iterator[tuple[Path, PaidChunk | None]]:
        """Every whole chunk entry, oldest name first; None for one that cannot be read back."""
        return self._read(PaidChunk)

    def accepted_deliveries(self) -> Iterator[tuple[Path, AcceptedDelivery | None]]:
        """Every whole delivery entry, oldest name first; None for an unreadable one."""
        return self._read(AcceptedDelivery)

    def _read(self, kind: type[Entry]) -> Iterator[tuple[Path, Entry | None]]:
        folder = self._folder_of(kind)
        if not folder.is_dir():
            return
        for path in sorted(folder.glob(f"*{_SUFFIX}")):
            try:
                yield path, kind(**json.loads(path.read_text(encoding="utf-8")))
            except FileNotFoundError:
                continue  # its writer's commit is in, or another replay took it: done
            except (OSError, ValueError, TypeError):
                yield path, None

    def _folder_of(self, kind: type[PaidChunk | AcceptedDelivery]) -> Path:
        sub = _SUBFOLDER[kind.__name__]
        return self.folder / sub if sub else self.folder

    def check_writable(self) -> None:
        """Make the folder and write a probe in it, before the first paid request.

        Raises ConfigError (MEDASR_DATA_DIR): without a writable journal an answer the
        busy store cannot take is lost, and bought again by the next run.
        """
        try:
            self._make_folder()
            probe = self.folder / f".probe-{uuid.uuid4().hex[:12]}"
            descriptor = create_private_file(probe)
            os.close(descriptor)
            probe.unlink()
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise ConfigError(
                f"MEDASR_DATA_DIR: cannot write the journal of paid answers in {self.folder} "
                f"({reason}); make it writable or point MEDASR_DATA_DIR elsewhere"
            ) from None

    def _make_folder(self, target: Path | None = None) -> None:
        # Every folder made here is 0700 (the data dir too): mkdir(parents=True) would
        # make the missing parents 0755 whatever its mode.
        target = target or self.folder
        make_private_folders(target)
        for kept in {self.folder, target}:
            kept.chmod(PRIVATE_FOLDER_MODE)  # a folder made before keeps its own mode


def _write_whole(descriptor: int, data: bytes, *, durable: bool) -> None:
    """Write all of `data` to `descriptor` (fsynced if `durable`) and close it. Raises OSError."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(descriptor, view) :]
        if durable:
            os.fsync(descriptor)
    finally:
        os.close(descriptor)


def store_retries(*, retry_s: float) -> AsyncRetrying:
    """Attempts of one store write: again while the store is unavailable (busy, down),
    with jittered backoff up to 5 s, for `retry_s`; the last error is raised."""
    return AsyncRetrying(
        retry=retry_if_exception_type(StoreUnavailable),
        wait=wait_random_exponential(multiplier=0.1, max=5.0),
        stop=stop_after_delay(retry_s),
        reraise=True,
    )


async def record_paid_chunk(
    write: Callable[[], None],
    *,
    paid: PaidChunk | AcceptedDelivery,
    journal: Journal,
    retry_s: float,
) -> None:
    """Run the store write in a thread, retrying a busy or unreachable store for `retry_s`.

    If the store is still unavailable, the answer goes to the journal and
    StoreUnavailable is raised (the file cannot finish now; its answer is safe).
    LeaseLost and StoreFailed are raised at once: no retry helps them.
    """
    key = id(paid)
    _unrecorded[key] = (journal, paid)
    try:
        async for attempt in store_retries(retry_s=retry_s):
            with attempt:
                await asyncio.to_thread(write)
    except StoreUnavailable as exc:
        where = await asyncio.to_thread(journal.keep, paid)
        logger.error(
            "the store is unavailable; answer %s was kept in %s and will be "
            "recorded by the next run",
            paid.journal_name,
            where,
        )
        raise StoreUnavailable(f"{exc.message}; the paid answer was kept in the journal") from exc
    finally:
        _unrecorded.pop(key, None)


def keep_unrecorded_answers() -> int:
    """Journal every paid answer whose store write has not finished; returns how many.

    For a process that ends at once (a second Ctrl-C): the next run records them (an
    answer the store took meanwhile is recorded again, to the same text). Never raises.
    """
    kept = 0
    for journal, paid in list(_unrecorded.values()):
        try:
            journal.keep(paid)
            kept += 1
        except OSError:
            logger.exception("a paid answer could not be journaled before exit")
    return kept


def replay_journal(store: UnitOfWorkFactory, journal: Journal) -> ReplayResult:
    """Record every journal entry whose item still has the same content; delete what is done.

    An entry whose item is gone, done, or whose content changed is dropped (its answer is
    no longer wanted). Raises StoreError when the store cannot take them (entries kept).
    """

    def record(uow: UnitOfWork, paid: PaidChunk) -> bool:
        return uow.chunks.record_recovered_chunk(
            paid.item_id,
            source_uri=paid.source_uri,
            sha256=paid.sha256,
            index=paid.index,
            start_ms=paid.start_ms,
            end_ms=paid.end_ms,
            size_bytes=paid.size_bytes,
            text=paid.text,
            attempts=paid.attempts,
            txn_id=paid.txn_id,
            latency_ms=paid.latency_ms,
        )

    return _replay(store, journal.entries(), record, what="paid answers")


def replay_delivery_journal(
    store: UnitOfWorkFactory,
    journal: Journal,
    *,
    record: Callable[[UnitOfWork, AcceptedDelivery], bool] | None = None,
) -> ReplayResult:
    """Record every accepted upload kept in the journal (with `record`, by default
    `record_accepted`); delete what is done.

    An entry whose row is gone, delivered or of another version is dropped. Raises
    StoreError when the store cannot take them (entries kept).
    """
    recorder = record_accepted if record is None else record
    return _replay(store, journal.accepted_deliveries(), recorder, what="deliveries")


def record_accepted(uow: UnitOfWork, accepted: AcceptedDelivery) -> bool:
    """Record an accepted upload with no live claim (journaled, or its claim lapsed);
    False when the row moved on (gone, delivered, another version)."""
    return bool(
        uow.delivery_claims.record_recovered_delivery(
            accepted.delivery_id,
            version=accepted.version,
            response=accepted.response,
            remote_id=accepted.remote_id,
        )
    )


def _replay(
    store: UnitOfWorkFactory,
    entries: Iterator[tuple[Path, Entry | None]],
    record: Callable[[UnitOfWork, Entry], bool],
    *,
    what: str,
) -> ReplayResult:
    """Record each readable entry in a transaction of its own, then delete its file."""
    recorded = dropped = kept = 0
    for path, entry in entries:
        if entry is None:
            logger.error("journal entry %s cannot be read; left in place for a person", path)
            kept += 1
            continue
        with store.unit_of_work() as uow:
            taken = record(uow, entry)
        # Workers on one host share the data dir: the entry's writer (its group commit
        # in) or another worker's replay may have removed it first. Recording it again
        # wrote the same row (an upsert), so either way the answer is in the store.
        path.unlink(missing_ok=True)
        recorded, dropped = recorded + taken, dropped + (not taken)
    if recorded or dropped:
        logger.info("journal: %d %s recorded, %d no longer wanted", recorded, what, dropped)
    return ReplayResult(recorded=recorded, dropped=dropped, kept=kept)


__all__ = [
    "AcceptedDelivery",
    "Journal",
    "PaidChunk",
    "ReplayResult",
    "record_paid_chunk",
    "replay_delivery_journal",
    "replay_journal",
    "store_retries",
]
