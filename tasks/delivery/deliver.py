"""Deliver done transcripts to the patient record, exactly once per transcript version.

Plan (a pending `deliveries` row per new version), then claim rows under a lease in
batches of MEDASR_CONCURRENCY and upload them at once; each row is settled as soon as
its answer is in. Credentials rejected stop the whole delivery (rows claimed but not
sent go back to pending); any other failure costs one row. Nothing here logs a
document, a token or a key.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

from prefect import task
from prefect.cache_policies import NONE

from config.errors import (
    EXIT_CREDENTIALS,
    EXIT_OK,
    EXIT_SOME_FAILED,
    EXIT_USAGE,
    ConfigError,
    InternalError,
    MedasrError,
)
from config.settings import Settings
from service.errors import CredentialsRejected
from storage.database import Store
from storage.deliveries import WantedDelivery, item_version
from storage.errors import LeaseLost, StoreUnavailable
from storage.owners import new_lease_owner
from storage.records import DeliveryRecord
from tasks.delivery.documents import note_of, parse_docs_query
from tasks.delivery.senders import open_sender
from tasks.delivery.targets import Outgoing, Sender, Target, TargetKind, parse_target

logger = logging.getLogger("medasr.deliver")

_PAGE = 500
# Stops that are not the row's fault: the row goes back to pending.
_STOPPING = (CredentialsRejected, ConfigError)


@dataclass
class DeliveryStats:
    """Counts of one delivery run (no text, no secret)."""

    planned: int = 0
    requeued: int = 0
    delivered: int = 0
    failed: int = 0
    superseded: int = 0
    released: int = 0
    requests: int = 0
    retries: int = 0
    bytes_sent: int = 0
    stopped: MedasrError | None = field(default=None, repr=False)


def plan_deliveries(
    store: Store, *, language: str | None, format_name: str, max_attempts: int
) -> tuple[int, int]:
    """Queue every done transcript version not seen yet; returns (added, requeued)."""
    with store.repository() as repo:
        repo.release_dead_local_deliveries()  # a killed run's rows need not wait out the lease
        requeued = repo.requeue_delivery_failures(max_attempts=max_attempts)
    added, after = 0, 0
    while True:
        with store.repository() as repo:
            page = repo.done_items_page(language=language, after_id=after, limit=_PAGE)
            if not page:
                return added, requeued
            wanted = [
                WantedDelivery(
                    item_id=item.id,
                    language=item.language,
                    version=item_version(item),
                )
                for item in page
            ]
            added += repo.plan_deliveries(wanted, format_name=format_name)
        after = page[-1].id


async def deliver_pending(
    *,
    settings: Settings,
    store: Store,
    language: str | None,
    format_name: str,
    target: Target | None = None,
    sender: Sender | None = None,
) -> DeliveryStats:
    """Plan and send to `target` (MEDASR_DELIVERY__TARGET when None); returns the counts
    (`stopped` says what ended it early).

    Raises ConfigError for an unusable MEDASR_DOCS_QUERY or target before anything is sent.
    A given `sender` is used as it is (and left open).
    """
    query = parse_docs_query(settings.delivery.docs_query)
    target = target or configured_target(settings)
    stats = DeliveryStats()
    stats.planned, stats.requeued = plan_deliveries(
        store,
        language=language,
        format_name=format_name,
        max_attempts=settings.service.max_attempts,
    )
    owner = new_lease_owner()
    own = sender is None
    if sender is None:
        sender = open_sender(
            target, settings, format_name=format_name, query=query, on_retry=lambda _: _retry(stats)
        )
    try:
        run = _Run(settings=settings, store=store, sender=sender, owner=owner)
        await run.drain(language=language, stats=stats)
    finally:
        if own:
            await sender.aclose()
    return stats


def configured_target(settings: Settings) -> Target:
    """MEDASR_DELIVERY__TARGET, parsed; raises TargetInvalid (a ConfigError)."""
    return parse_target(
        settings.delivery.target, allow_insecure=settings.service.allow_insecure_http
    )


def _retry(stats: DeliveryStats) -> None:
    stats.retries += 1
    stats.requests += 1


@dataclass
class _Run:
    """One delivery run's fixed parts."""

    settings: Settings
    store: Store
    sender: Sender
    owner: str

    async def drain(self, *, language: str | None, stats: DeliveryStats) -> None:
        """Claim and send batches until none is left or a stop comes."""
        batch_size = self.settings.pipeline.concurrency
        while stats.stopped is None:
            with self.store.repository() as repo:
                claimed = repo.claim_deliveries(
                    owner=self.owner,
                    language=language,
                    limit=batch_size,
                    lease_s=self.settings.storage.lease_s,
                )
            if not claimed:
                return
            try:
                outcomes = await asyncio.gather(*(self._deliver_one(row) for row in claimed))
            except BaseException:  # Ctrl-C, cancellation: settled rows stay, the rest go back
                with self.store.repository() as repo:
                    repo.release_deliveries([row.id for row in claimed], owner=self.owner)
                raise
            self._count(claimed, outcomes, stats)

    def _count(
        self, claimed: list[DeliveryRecord], outcomes: list[_Outcome], stats: DeliveryStats
    ) -> None:
        stopping = [o.error for o in outcomes if isinstance(o.error, _STOPPING)]
        if stopping:
            stats.stopped = stopping[0]
        pairs = zip(claimed, outcomes, strict=True)
        released = [row.id for row, outcome in pairs if outcome.name == "released"]
        if released:
            with self.store.repository() as repo:
                repo.release_deliveries(released, owner=self.owner)
        for outcome in outcomes:
            setattr(stats, outcome.name, getattr(stats, outcome.name) + 1)
            stats.requests += outcome.requests
            stats.bytes_sent += outcome.bytes_sent

    async def _deliver_one(self, row: DeliveryRecord) -> _Outcome:
        try:
            return await self._send(row)
        except LeaseLost:
            logger.warning("delivery %d was taken over by another worker", row.id)
            return _Outcome("released")
        except _STOPPING as exc:
            return _Outcome("released", error=exc, requests=1)
        except _Unrecorded as exc:
            # Filed by the service but not in our store: the row stays ours until its lease
            # ends, then it is sent again. Say so loudly; there is nothing safer to do.
            logger.error(
                "delivery %d was accepted (answer fields %s) but could not be recorded: %s",
                row.id,
                sorted(exc.fields),
                exc.cause,
            )
            return _Outcome("failed", requests=1)
        except MedasrError as exc:
            self._settle_failed(row, exc)
            logger.warning("delivery %d failed: %s (%s)", row.id, exc.kind, exc)
            return _Outcome("failed", requests=1 if _was_sent(exc) else 0)
        except Exception as exc:  # a bug must cost this document only, not the run
            logger.error("delivery %d: unexpected %s", row.id, type(exc).__name__, exc_info=exc)
            internal = InternalError(f"unexpected {type(exc).__name__} while delivering")
            self._settle_failed(row, internal)
            return _Outcome("failed")

    async def _send(self, row: DeliveryRecord) -> _Outcome:
        with self.store.repository(read_only=True) as repo:
            item = repo.get_item(row.item_id)
            replaced = repo.get_delivery(row.replaces_id) if row.replaces_id else None
        if item is None or item.status != "done" or item_version(item) != row.version:
            with self.store.repository() as repo:
                repo.record_delivery_superseded(row.id, owner=self.owner)
            return _Outcome("superseded")
        note = note_of(
            item, version=row.version, replaces_version=replaced.version if replaced else None
        )
        outgoing = Outgoing(
            delivery_id=row.id, item=item, note=note, replaced_remote_id=_remote_id(replaced)
        )
        sent = await self.sender.send(outgoing)
        target = self.sender.target
        await self._record_delivered(row, sent.fields)  # as the target answered
        logger.info(
            "delivered item %d to %s (%d bytes) in %d attempt(s)",
            item.id,
            target.kind,
            sent.request_bytes,
            sent.attempts,
        )
        # HTTP retries are counted by on_retry; MLLP resends only here.
        requests = sent.attempts if target.kind is TargetKind.MLLP else 1
        return _Outcome("delivered", requests=requests, bytes_sent=sent.request_bytes)

    async def _record_delivered(self, row: DeliveryRecord, fields: dict[str, Any]) -> None:
        """The service has the document: a store that is briefly busy must not lose that."""
        for attempt in range(1, _RECORD_ATTEMPTS + 1):
            try:
                with self.store.repository() as repo:
                    repo.record_delivered(
                        row.id,
                        owner=self.owner,
                        response=fields,
                        format_name=self.sender.format_name,
                    )
                return
            except StoreUnavailable as exc:
                if attempt == _RECORD_ATTEMPTS:
                    raise _Unrecorded(fields, exc) from exc
                await asyncio.sleep(_RECORD_BACKOFF_S * attempt)

    def _settle_failed(self, row: DeliveryRecord, exc: MedasrError) -> None:
        try:
            with self.store.repository() as repo:
                repo.record_delivery_failed(
                    row.id,
                    owner=self.owner,
                    error_kind=exc.kind,
                    message=str(exc),
                    retryable=exc.transient or exc.kind in _FIXABLE_KINDS,
                )
        except LeaseLost:
            logger.warning("delivery %d was taken over by another worker", row.id)
        except MedasrError as store_error:  # the store is down: the lease will hand it back
            logger.error("delivery %d: failure not recorded (%s)", row.id, store_error.kind)


class _Unrecorded(Exception):
    """An accepted upload whose success could not be written to the store."""

    def __init__(self, fields: dict[str, Any], cause: MedasrError) -> None:
        super().__init__(str(cause))
        self.fields = fields
        self.cause = cause


_RECORD_ATTEMPTS = 3
_RECORD_BACKOFF_S = 0.5
# Failures an operator fixes in the manifest: worth another try on a later run.
_FIXABLE_KINDS = frozenset({"metadata_missing", "document_invalid"})


def _remote_id(replaced: DeliveryRecord | None) -> str | None:
    """The target's id of the replaced version (its response's `remote_id`, FHIR and MLLP)."""
    if replaced is None or not replaced.response:
        return None
    remote = replaced.response.get("remote_id")
    return remote if isinstance(remote, str) else None


def _was_sent(exc: MedasrError) -> bool:
    """False for failures found before any request (metadata, document, size check)."""
    return getattr(exc, "status", None) is not None or exc.transient


@dataclass(frozen=True)
class _Outcome:
    name: str  # a DeliveryStats counter: delivered, failed, superseded, released
    error: MedasrError | None = None
    requests: int = 0
    bytes_sent: int = 0


def delivery_summary(stats: DeliveryStats, *, dry_run: bool = False) -> dict[str, Any]:
    """Counts for the console, the artifact and the exit code."""
    summary: dict[str, Any] = {
        "documents_planned": stats.planned,
        "documents_requeued": stats.requeued,
        "documents_delivered": stats.delivered,
        "documents_failed": stats.failed,
        "documents_superseded": stats.superseded,
        "documents_released": stats.released,
        "requests": stats.requests,
        "retries": stats.retries,
        "bytes_sent": stats.bytes_sent,
        "credentials_rejected": isinstance(stats.stopped, CredentialsRejected),
        "stopped_by_configuration": isinstance(stats.stopped, ConfigError),
    }
    if dry_run:
        summary["sent"] = 0
    summary["exit_code"] = delivery_exit_code(summary)
    return summary


def delivery_exit_code(summary: dict[str, Any]) -> int:
    """3 credentials, 2 configuration, 1 any document failed, else 0."""
    if summary.get("credentials_rejected"):
        return EXIT_CREDENTIALS
    if summary.get("stopped_by_configuration"):
        return EXIT_USAGE
    return EXIT_SOME_FAILED if summary.get("documents_failed", 0) > 0 else EXIT_OK


class DeliveryContext:
    """What the delivery task needs. A plain class on purpose: Prefect does not walk it,
    so the settings (and their secrets) never become task inputs."""

    def __init__(self, *, settings: Settings, store: Store) -> None:
        self.settings = settings
        self.store = store


@task(name="deliver", tags=["medasr"], cache_policy=NONE, persist_result=False)
async def deliver_task(
    *, ctx: DeliveryContext, language: str | None, format_name: str
) -> dict[str, Any]:
    """The nightly deployment's delivery step (MEDASR_DELIVER=true); returns its summary."""
    stats = await deliver_pending(
        settings=ctx.settings, store=ctx.store, language=language, format_name=format_name
    )
    return delivery_summary(stats)
