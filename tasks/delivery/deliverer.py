"""Deliver done transcripts to the patient record, exactly once per version and target.

Plan (a pending `deliveries` row per new version), then claim rows on the one work queue
in batches of MEDASR_CONCURRENCY and upload them at once (the claim loop:
tasks/delivery/delivery_run.py). Each claim has its own token; the LeaseKeeper renews
every held lease on its timer; store calls run off the event loop. Just before a
request goes out its row is marked sending (committed): from then on a row whose
answer is not recorded is `in_doubt`, never re-sent blindly, only by
`medasr deliver --resend-in-doubt` or automatically by a sender that deduplicates. An
accepted upload whose store write fails is retried, then kept in the journal (0600) and
recorded at the next start. Nothing here logs a document, a token or a key.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from audit import command_actor
from config.errors import ConfigError
from config.settings import Settings
from service.docs_client import DocsClient
from storage.interface import UnitOfWorkFactory
from tasks.delivery.audit_trail import journal_recorder
from tasks.delivery.delivery_run import DeliveryRun
from tasks.delivery.document_sender import DocumentSender
from tasks.delivery.documents import DocsQuery, parse_docs_query, require_patient_link
from tasks.delivery.plan import plan_deliveries
from tasks.delivery.senders import configured_target, sender_for
from tasks.delivery.stats import DeliveryStats, delivery_summary, in_doubt_rows
from tasks.delivery.target_aliases import check_target_alias, seen_targets
from tasks.delivery.targets import Sender, Target, TargetKind
from tasks.discovery.recording_names import one_line
from tasks.work.journal import Journal, replay_delivery_journal
from tasks.work.store_calls import in_store

__all__ = [
    "DeliveryStats",
    "DocumentSender",
    "deliver_and_summarize",
    "deliver_pending",
    "delivery_summary",
    "plan_deliveries",
]

logger = logging.getLogger("medasr.deliver")


async def deliver_pending(
    *,
    settings: Settings,
    store: UnitOfWorkFactory,
    language: str | None,
    format_name: str,
    client: DocumentSender | DocsClient | None = None,
    resend_in_doubt: bool = False,
    target: Target | None = None,
    allow_unlinked: bool = False,
    new_target: bool = False,
) -> DeliveryStats:
    """Replay the journal, plan and send to `target` (MEDASR_DELIVERY__TARGET when None);
    returns the counts (`stopped`: what ended it). `client` stands in for the docs upload;
    `allow_unlinked` files notes with no patient link on purpose; `new_target`: another
    receiver at a known one's address. Raises, before anything is sent, ConfigError (an
    unusable MEDASR_DOCS_QUERY or target), PatientLinkMissing, TargetAlias."""
    query = parse_docs_query(settings.delivery.docs_query)
    target = await _checked_target(
        store, target or configured_target(settings), query, unlinked=allow_unlinked, new=new_target
    )
    stats = DeliveryStats()
    journal = await _replayed_journal(settings, store)
    sender = sender_for(
        target,
        settings,
        format_name=format_name,
        query=query,
        client=client,
        on_retry=lambda _: _retry(stats),
        allow_unlinked=allow_unlinked,
    )
    stats.planned, stats.requeued = await _planned(
        settings, store, sender, target.name, language, format_name, resend=resend_in_doubt
    )
    run = DeliveryRun(settings, store, sender, journal)
    run.person_resends = resend_in_doubt
    await _drain(run, language=language, stats=stats, close_sender=client is None)
    stats.in_doubt = await in_store(store, in_doubt_rows, read_only=True)
    return stats


async def _checked_target(
    store: UnitOfWorkFactory,
    target: Target,
    query: DocsQuery,
    *,
    unlinked: bool,
    new: bool,
) -> Target:
    """The target as the ledger knows it (`new`: another receiver at a known address); a
    docs upload must name its patient (unless `unlinked`)."""
    known = await in_store(store, seen_targets, read_only=True)
    target = check_target_alias(target, known=known, new_target=new)
    if target.kind is TargetKind.DOCS:
        require_patient_link(query, allow_unlinked=unlinked)
    return target


async def _planned(
    settings: Settings,
    store: UnitOfWorkFactory,
    sender: Sender,
    target_name: str,
    language: str | None,
    format_name: str,
    *,
    resend: bool,
) -> tuple[int, int]:
    """Plan the rows for `target_name`; (planned, requeued). In-doubt rows go back
    when a person says so (`resend`) or when the receiver deduplicates."""
    return await asyncio.to_thread(
        lambda: plan_deliveries(
            store,
            language=language,
            format_name=format_name,
            max_attempts=settings.service.max_attempts,
            resend_in_doubt=resend or sender.dedupes,
            target=target_name,
        )
    )


async def _replayed_journal(settings: Settings, store: UnitOfWorkFactory) -> Journal:
    """The journal, its accepted uploads of an earlier run recorded first."""
    journal = Journal.in_data_dir(settings.storage.data_dir)
    recorder = journal_recorder(actor=command_actor())
    await asyncio.to_thread(lambda: replay_delivery_journal(store, journal, record=recorder))
    return journal


async def _drain(
    run: DeliveryRun, *, language: str | None, stats: DeliveryStats, close_sender: bool
) -> None:
    """Claim and send until done; the lease keeper (and our own sender) closed after."""
    try:
        await run.drain(language=language, stats=stats)
    finally:
        await run.keeper.aclose()
        if close_sender:
            await run.sender.aclose()


def _retry(stats: DeliveryStats) -> None:
    stats.retries += 1
    stats.requests += 1


async def deliver_and_summarize(
    *, settings: Settings, store: UnitOfWorkFactory, language: str | None, format_name: str
) -> dict[str, Any]:
    """The nightly deployment's delivery step (MEDASR_DELIVER=true); returns its summary.
    A setting that stops it before anything is sent is in the summary, not raised."""
    try:
        stats = await deliver_pending(
            settings=settings, store=store, language=language, format_name=format_name
        )
    except ConfigError as exc:  # before anything was sent: the night's transcripts stay
        logger.error("delivery not started: %s", one_line(str(exc)))
        stats = DeliveryStats(stopped=exc)
    else:
        if isinstance(stats.stopped, ConfigError):  # e.g. a certificate that does not verify
            logger.error("delivery stopped: %s", one_line(str(stats.stopped)))
    return delivery_summary(stats)
