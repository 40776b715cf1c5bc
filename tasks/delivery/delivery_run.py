"""One delivery run's claim loop: claim a batch, send each row, settle it, count.

tasks/delivery/deliverer.py prepares the run (target, journal, plan); this is the loop it
drains. Each claim has its own token; the LeaseKeeper renews every held lease on its
timer; store calls run off the event loop. Just before a request goes out its row is
marked sending (committed): from then on a row whose answer is not recorded is
`in_doubt`. An accepted upload whose store write fails is retried, then kept in the
journal (0600). Nothing here logs a document, a token or a key.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Any

from audit import AuditAction, command_actor
from config.errors import ConfigError, InternalError, MedasrError, RunInterrupted
from config.settings import Settings
from service.errors import CredentialsRejected
from service.retrying import may_have_arrived
from storage.errors import LeaseLost, StoreUnavailable
from storage.interface import UnitOfWorkFactory
from storage.owners import new_lease_owner
from storage.records import DeliveryRecord, SentIdentity
from tasks.delivery.audit_trail import record_delivery_event
from tasks.delivery.document_sender import remote_id_of
from tasks.delivery.errors import DeliveryInDoubt, ReceiverSilent, stored_message
from tasks.delivery.identifiers import check_identifiers
from tasks.delivery.outgoing import Prepared, Sending, prepare_outgoing
from tasks.delivery.stats import DeliveryStats, requests_of
from tasks.delivery.targets import Sender, Sent
from tasks.discovery.recording_names import one_line, reason_about, recording_name
from tasks.throttle.gate import operator_interrupted
from tasks.work.journal import AcceptedDelivery, Journal, record_accepted, record_paid_chunk
from tasks.work.lease_keeper import LeaseKeeper, renew_deliveries
from tasks.work.side_by_side import all_ended
from tasks.work.store_calls import in_store

__all__ = ["DeliveryRun"]

logger = logging.getLogger("medasr.deliver")

# Stops that are not the row's fault: the row goes back (pending, or in doubt if sent).
_STOPPING = (CredentialsRejected, ConfigError, ReceiverSilent, RunInterrupted)
# Stops raised before the request went out: the row goes back pending, nothing outstanding.
_UNSENT = (ReceiverSilent, RunInterrupted)
# Failures an operator fixes in the manifest: worth another try on a later run.
_FIXABLE_KINDS = frozenset({"metadata_missing", "metadata_invalid", "document_invalid"})


class DeliveryRun:
    """One delivery run's fixed parts and its claim loop."""

    def __init__(
        self,
        settings: Settings,
        store: UnitOfWorkFactory,
        sender: Sender,
        journal: Journal,
    ) -> None:
        self.settings, self.store, self.sender = settings, store, sender
        self.format_name, self.journal = sender.format_name, journal
        self.owner, self.actor = new_lease_owner(), command_actor()
        self.roots: tuple[str, ...] | None = None
        self.store_id: str | None = None
        self.person_resends = False  # `--resend-in-doubt`: a person checked the record
        lease_s = settings.storage.lease_s
        self.keeper = LeaseKeeper(store=store, lease_s=lease_s, renew=renew_deliveries)

    async def drain(self, *, language: str | None, stats: DeliveryStats) -> None:
        """Claim and send batches until none is left or a stop comes."""
        while stats.stopped is None and operator_interrupted() is None:  # Ctrl-C: no more
            claimed = await in_store(self.store, lambda uow: self._claim(uow, language))
            if not claimed:
                return
            try:
                async with self.keeper.holding(claimed):
                    outcomes = await all_ended(self._deliver_one(r) for r in claimed)
            except BaseException:  # Ctrl-C, cancellation: settled rows stay, the rest go back
                tokens = [r.lease_token for r in claimed if r.lease_token]
                await asyncio.shield(in_store(self.store, _releaser(tokens)))
                raise
            await self._count(claimed, outcomes, stats)

    def _roots(self, uow: Any) -> tuple[str, ...]:
        """The sources runs went over: a recording is named by its path inside one."""
        if self.roots is None:
            self.roots = tuple(uow.runs.run_sources())
        return self.roots

    def _reason(self, uow: Any, row: DeliveryRecord, exc: MedasrError) -> tuple[str, str]:
        """The row's recording named inside its source, and `exc`'s message on one line
        with the recording named the same way."""
        item = uow.item_queries.get_item(row.item_id)
        if item is None:
            return f"delivery {row.id}", one_line(str(exc))
        roots = self._roots(uow)
        name = recording_name(item.source_uri, roots=roots)
        return name, reason_about(str(exc), uri=item.source_uri, roots=roots)

    async def _name(self, row: DeliveryRecord) -> str:
        """The row's recording by its path inside its source (for a log line)."""
        try:
            name, _ = await in_store(
                self.store, lambda uow: self._reason(uow, row, InternalError("")), read_only=True
            )
        except MedasrError:  # the store is down: the row id is all there is
            return f"delivery {row.id}"
        return name

    def _audit(
        self, uow: Any, row: DeliveryRecord, action: AuditAction, *, receiver_id: str | None = None
    ) -> None:
        record_delivery_event(
            uow, row, action=action, actor=self.actor, target=self.sender.target.name,
            format_name=self.format_name, roots=self._roots(uow), receiver_id=receiver_id,
        )  # fmt: skip

    def _claim(self, uow: Any, language: str | None) -> list[DeliveryRecord]:
        return list(
            uow.delivery_claims.claim_deliveries(
                owner=self.owner,
                language=language,
                limit=self.settings.pipeline.concurrency,
                lease_s=self.settings.storage.lease_s,
                target=self.sender.target.name,
            )
        )

    async def _count(
        self, claimed: list[DeliveryRecord], outcomes: list[_Outcome], stats: DeliveryStats
    ) -> None:
        stopping = [o.error for o in outcomes if isinstance(o.error, _STOPPING)]
        if stopping:
            stats.stopped = stopping[0]
        pairs = zip(claimed, outcomes, strict=True)
        released = [r.lease_token for r, o in pairs if o.name == "released" and r.lease_token]
        if released:  # taken over, refused (401/403) or stopped before sending
            await in_store(self.store, _releaser(released, refused=True))
        for outcome in outcomes:
            if outcome.name != "in_doubt":  # counted from the store at the end
                setattr(stats, outcome.name, getattr(stats, outcome.name) + 1)
            stats.requests += outcome.requests
            stats.bytes_sent += outcome.bytes_sent

    async def _deliver_one(self, row: DeliveryRecord) -> _Outcome:
        try:
            return await self._send(row)
        except LeaseLost:
            logger.warning("delivery of %s was taken over by another worker", await self._name(row))
            return _Outcome("released")
        except _STOPPING as exc:
            unsent = isinstance(exc, _UNSENT)
            return _Outcome("released", error=exc, requests=0 if unsent else 1)
        except MedasrError as exc:
            await self._settle_failed(row, exc)
            return _Outcome("failed", requests=requests_of(exc))
        except Exception as exc:  # a bug must cost this document only, not the run
            name = await self._name(row)
            logger.error("delivery of %s: unexpected %s", name, type(exc).__name__, exc_info=exc)
            internal = InternalError(f"unexpected {type(exc).__name__} while delivering")
            await self._settle_failed(row, internal)
            return _Outcome("failed")

    async def _send(self, row: DeliveryRecord) -> _Outcome:
        prepared = await in_store(self.store, lambda uow: self._outgoing(uow, row))
        outgoing, name = prepared.outgoing, prepared.name
        if outgoing is None or prepared.sent is None:
            return _Outcome(prepared.outcome)  # a failed one is counted: a person decided
        check_identifiers(outgoing.note.metadata, source=name)  # before anything goes out
        await self.keeper.require(row)
        if (interrupted := operator_interrupted()) is not None:  # Ctrl-C: not sent, back
            raise interrupted
        await in_store(self.store, _marker(row, prepared.sent))
        try:
            sent = await self.sender.send(outgoing)
        except _STOPPING:
            raise
        except MedasrError as exc:
            if not (isinstance(exc, DeliveryInDoubt) or may_have_arrived(exc)):
                raise
            await self._settle_in_doubt(row, exc, name=name)
            return _Outcome("in_doubt", requests=1)
        await self._record_delivered(row, sent)
        logger.info("delivered %s (%s) in %d attempt(s)", name, self.format_name, sent.attempts)
        return _Outcome("delivered", requests=1, bytes_sent=sent.request_bytes)

    def _outgoing(self, uow: Any, row: DeliveryRecord) -> Prepared:
        if self.store_id is None:
            self.store_id = str(uow.deliveries.store_identity())
        sending = Sending(
            kind=self.sender.target.kind,
            store_id=self.store_id,
            roots=self._roots(uow),
            person_resends=self.person_resends,
        )
        return prepare_outgoing(uow, row, sending=sending)

    async def _record_delivered(self, row: DeliveryRecord, sent: Sent) -> None:
        """The receiver has the document: a store that is down must not lose that."""
        accepted = AcceptedDelivery(
            delivery_id=row.id,
            version=row.version,
            response=sent.fields,
            remote_id=(sent.remote_id or remote_id_of(sent.fields) or "")[:255] or None,
        )

        def write() -> None:
            with self.store.unit_of_work() as uow:
                try:
                    uow.delivery_claims.record_delivered(
                        row.id,
                        lease_token=row.lease_token,
                        response=accepted.response,
                        format_name=self.format_name,
                        remote_id=accepted.remote_id,
                    )
                except LeaseLost:  # the receiver has it all the same: say so if still ours
                    if not record_accepted(uow, accepted):
                        raise
                self._audit(uow, row, AuditAction.DELIVERED, receiver_id=accepted.remote_id)

        retry_s = self.settings.storage.store_retry_s
        # StoreUnavailable: kept in the journal, recorded as delivered at the next start.
        with contextlib.suppress(StoreUnavailable):
            await record_paid_chunk(write, paid=accepted, journal=self.journal, retry_s=retry_s)

    async def _settle_failed(self, row: DeliveryRecord, exc: MedasrError) -> None:
        name, said = await in_store(
            self.store, lambda uow: self._reason(uow, row, exc), read_only=True
        )
        logger.warning("delivery of %s failed: %s (%s)", name, exc.kind, said)
        retryable = exc.transient or exc.kind in _FIXABLE_KINDS
        spent = row.attempts >= self.settings.service.max_attempts  # no run requeues it
        await self._settle(
            row,
            lambda uow: uow.delivery_claims.record_delivery_failed(
                row.id,
                lease_token=row.lease_token,
                error_kind=exc.kind,
                message=stored_message(exc),
                retryable=retryable,
            ),
            action=None if retryable and not spent else AuditAction.DELIVERY_FAILED,
        )

    async def _settle_in_doubt(self, row: DeliveryRecord, exc: MedasrError, *, name: str) -> None:
        logger.error(
            "delivery of %s is in doubt: the request went out and no answer came (%s); "
            "check the record, then `medasr deliver --resend-in-doubt` if it is missing",
            name,
            exc.kind,
        )
        message = f"sent, no answer recorded: {stored_message(exc)}"
        await self._settle(
            row,
            lambda uow: uow.delivery_claims.record_delivery_in_doubt(
                row.id, lease_token=row.lease_token, error_kind=exc.kind, message=message
            ),
            action=AuditAction.DELIVERY_IN_DOUBT,
        )

    async def _settle(
        self, row: DeliveryRecord, call: Any, *, action: AuditAction | None = None
    ) -> None:
        """Record the outcome (and its audit event, in the same transaction)."""

        def settle(uow: Any) -> None:
            call(uow)
            if action is not None:
                self._audit(uow, row, action)

        try:
            await in_store(self.store, settle)
        except LeaseLost:
            logger.warning("delivery of %s was taken over by another worker", await self._name(row))
        except MedasrError as store_error:  # the store is down: the lease hands it back
            name = await self._name(row)
            logger.error("delivery of %s: outcome not recorded (%s)", name, store_error.kind)


def _marker(row: DeliveryRecord, sent: SentIdentity) -> Any:
    return lambda uow: uow.delivery_claims.mark_sending(
        row.id, lease_token=row.lease_token, sent=sent
    )


def _releaser(tokens: list[str], *, refused: bool = False) -> Any:
    return lambda uow: uow.delivery_claims.release_deliveries(tokens, refused=refused)


@dataclass(frozen=True)
class _Outcome:
    name: str  # a DeliveryStats counter: delivered, failed, superseded, released, in_doubt
    error: MedasrError | None = None
    requests: int = 0
    bytes_sent: int = 0
