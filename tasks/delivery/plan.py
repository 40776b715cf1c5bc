"""One plan for the real run and the dry run: which rows a delivery to a target sends.

The real run plans (requeue, resend what a deduplicating target may resend, a pending
row per new version) in short transactions, then claims rows on the work queue. The dry
run runs the very same steps and the same claims inside ONE transaction that it rolls
back, taking every claimed row as answered: what it counts is what the real run would
send to that target, in-doubt rows and failures that are not retried left out. Each
claimed row is prepared as the real run prepares it, and its document built as the
real run's sender builds it (tasks/delivery/builders.py) once the transaction is rolled
back: a document the target would refuse before sending is counted as that refusal,
never among the documents to send. On SQLite the dry run holds the write lock for that
transaction (seconds per 10^4 rows); the builds (tens of ms per MDM) come after it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from audit import command_actor
from config.errors import MedasrError
from storage.interface import UnitOfWorkFactory
from storage.owners import new_lease_owner
from storage.records import WantedDelivery
from storage.versions import item_version
from tasks.delivery.audit_trail import record_resent
from tasks.delivery.documents import DocsQuery
from tasks.delivery.errors import DocumentInvalid, MetadataInvalid, MetadataMissing
from tasks.delivery.identifiers import check_identifiers
from tasks.delivery.outgoing import Sending, prepare_outgoing
from tasks.delivery.targets import Outgoing, Target, TargetKind

_PAGE = 500
_DRY_RUN_LEASE_S = 3600.0  # never seen by anyone: the transaction is rolled back
# A refusal's kind -> the PlanPreview counter it is counted in (any other: a document).
_COUNTED_AS = {
    MetadataMissing.kind: "missing_metadata",
    MetadataInvalid.kind: "invalid_metadata",
    DocumentInvalid.kind: "invalid_documents",
}


def plan_deliveries(
    store: UnitOfWorkFactory,
    *,
    language: str | None,
    format_name: str,
    max_attempts: int,
    resend_in_doubt: bool = False,
    target: str = "docs",
) -> tuple[int, int]:
    """Queue every done transcript version not yet seen by `target` (its canonical name);
    returns (added, requeued).

    `resend_in_doubt`: the target's in-doubt rows go back to pending too (in requeued).
    """
    with store.unit_of_work() as uow:
        requeued = requeue_deliveries(
            uow,
            language=language,
            max_attempts=max_attempts,
            resend_in_doubt=resend_in_doubt,
            target=target,
        )
    added = 0
    after: int | None = 0
    while after is not None:
        with store.unit_of_work() as uow:
            more, after = plan_page(
                uow, language=language, after_id=after, format_name=format_name, target=target
            )
        added += more
    return added, requeued


def requeue_deliveries(
    uow: Any, *, language: str | None, max_attempts: int, resend_in_doubt: bool, target: str
) -> int:
    """Take back dead claims, requeue retryable failures (and the target's in-doubt rows
    when it may resend them); how many went back to pending."""
    uow.delivery_claims.release_dead_local_deliveries()  # sent ones become in_doubt
    requeued = int(uow.deliveries.requeue_delivery_failures(max_attempts=max_attempts))
    if resend_in_doubt:
        resent = uow.deliveries.in_doubt_deliveries(language=language, target=target)
        requeued += int(uow.deliveries.resend_in_doubt(language=language, target=target))
        record_resent(uow, resent, actor=command_actor())
    return requeued


def plan_page(
    uow: Any, *, language: str | None, after_id: int, format_name: str, target: str
) -> tuple[int, int | None]:
    """Plan one page of done items after `after_id`; (rows added, the next page's
    after_id, None once every page is planned)."""
    page = uow.item_queries.done_items_page(language=language, after_id=after_id, limit=_PAGE)
    if not page:
        return 0, None
    wanted = [
        WantedDelivery(item_id=i.id, language=i.language, version=item_version(i), target=target)
        for i in page
    ]
    return int(uow.deliveries.plan_deliveries(wanted, format_name=format_name)), page[-1].id


@dataclass
class PlanPreview:
    """What a real run to one target would do (counts of documents)."""

    documents_to_send: int = 0
    already_delivered: int = 0
    missing_metadata: int = 0
    invalid_metadata: int = 0  # an identifier every target refuses (metadata_invalid)
    invalid_documents: int = 0  # a document the target's builder refuses (document_invalid)
    unlinked: int = 0  # of those to send: no patient link, filed on purpose
    in_doubt: int = 0  # every target's, as the real run's summary counts them
    waiting: int = 0  # newer versions behind one in doubt
    not_retried: int = 0  # this target's failures no run retries (AR, attempts spent)


@dataclass(frozen=True)
class PlanRules:
    """What a document needs, as the real run's senders check it."""

    needed: tuple[str, ...]  # manifest columns without which it fails (metadata_missing)
    linked: Callable[[Mapping[str, str]], bool]  # whether it names its patient
    kind: TargetKind = TargetKind.DOCS  # the identifiers a document goes out under
    # builds the document the sender would send (builders.py); raises its refusal
    build: Callable[[Outgoing], bytes] | None = None


@dataclass(frozen=True)
class _ToBuild:
    """A document counted as to send, built once the transaction is rolled back."""

    outgoing: Outgoing
    linked: bool


class _RolledBack(Exception):
    def __init__(self, preview: PlanPreview, to_build: list[_ToBuild]) -> None:
        super().__init__("dry run")
        self.preview, self.to_build = preview, to_build


def preview_deliveries(
    store: UnitOfWorkFactory,
    *,
    language: str | None,
    format_name: str,
    max_attempts: int,
    resend_in_doubt: bool,
    target: str,
    rules: PlanRules,
    manifest: Mapping[str, Mapping[str, str]] | None = None,
) -> PlanPreview:
    """The real run's plan and claims, rolled back; `manifest` stored first as it would be."""
    try:
        with store.unit_of_work() as uow:
            if manifest:
                uow.items.set_item_metadata(manifest, language=language)
            preview = PlanPreview()
            requeue_deliveries(
                uow,
                language=language,
                max_attempts=max_attempts,
                resend_in_doubt=resend_in_doubt,
                target=target,
            )
            after: int | None = 0
            while after is not None:
                preview.already_delivered += _current_delivered(uow, language, after, target)
                _, after = plan_page(
                    uow, language=language, after_id=after, format_name=format_name, target=target
                )
            to_build = _claim_all(uow, preview, language=language, target=target, rules=rules)
            _count_left(uow, preview, target=target)
            raise _RolledBack(preview, to_build)
    except _RolledBack as done:
        if rules.build is not None:  # outside the transaction: no lock held while building
            _count_build_refusals(done.preview, done.to_build, build=rules.build)
        return done.preview


def _current_delivered(uow: Any, language: str | None, after_id: int, target: str) -> int:
    page = uow.item_queries.done_items_page(language=language, after_id=after_id, limit=_PAGE)
    delivered = uow.deliveries.delivered_versions([i.id for i in page], target=target)
    # the target holds the current version when it is the newest it was given
    return sum(1 for i in page if delivered.get(i.id, [])[-1:] == [item_version(i)])


def _claim_all(
    uow: Any, preview: PlanPreview, *, language: str | None, target: str, rules: PlanRules
) -> list[_ToBuild]:
    """Claim as the real run does, each claimed row taken as answered, until none is left;
    the documents counted as to send, for `rules.build`."""
    owner = new_lease_owner()
    sending = Sending(
        kind=rules.kind,
        store_id=str(uow.deliveries.store_identity()),
        roots=(),
        person_resends=False,
    )
    to_build: list[_ToBuild] = []
    while True:
        claimed = uow.delivery_claims.claim_deliveries(
            owner=owner, language=language, limit=_PAGE, lease_s=_DRY_RUN_LEASE_S, target=target
        )
        if not claimed:
            return to_build
        for row in claimed:
            built = _settle_claimed(uow, row, preview, rules=rules, sending=sending)
            to_build += [built] if built is not None else []


def _settle_claimed(
    uow: Any, row: Any, preview: PlanPreview, *, rules: PlanRules, sending: Sending
) -> _ToBuild | None:
    """One claimed row as the real run would settle it: refused, or sent and answered
    (then the document to build, when the rules build one)."""
    item = uow.item_queries.get_item(row.item_id)
    columns = item.metadata if item is not None else {}
    refused = _refusal(item, columns, rules)
    if refused is not None:
        _count_refusal(preview, refused)
        uow.delivery_claims.record_delivery_failed(
            row.id, lease_token=row.lease_token, error_kind=refused, message="", retryable=False
        )
        return None
    built = None
    if rules.build is not None:
        prepared = prepare_outgoing(uow, row, sending=sending)
        if prepared.outgoing is None:  # settled (superseded, in doubt) as the real run does
            return None
        built = _ToBuild(prepared.outgoing, linked=rules.linked(columns))
    preview.documents_to_send += 1
    preview.unlinked += not rules.linked(columns)
    uow.delivery_claims.record_delivered(row.id, lease_token=row.lease_token, response={})
    return built


def _count_refusal(preview: PlanPreview, kind: str) -> None:
    counter = _COUNTED_AS.get(kind, "invalid_documents")
    setattr(preview, counter, getattr(preview, counter) + 1)


def _count_build_refusals(
    preview: PlanPreview, to_build: list[_ToBuild], *, build: Callable[[Outgoing], bytes]
) -> None:
    """Each document counted as to send that its builder refuses is that refusal."""
    for document in to_build:
        refused = _build_refusal(document.outgoing, build)
        if refused is not None:
            preview.documents_to_send -= 1
            preview.unlinked -= not document.linked
            _count_refusal(preview, refused)


def _refusal(item: Any, columns: Mapping[str, str], rules: PlanRules) -> str | None:
    """Why the real run would refuse this document before building it, if it would."""
    if item is None or any(not columns.get(name) for name in rules.needed):
        return "metadata_missing"
    try:
        check_identifiers(columns, source="")
    except MetadataInvalid:
        return "metadata_invalid"
    return None


def _build_refusal(outgoing: Outgoing, build: Callable[[Outgoing], bytes]) -> str | None:
    """The kind of error the target's builder raises for this document, if it does."""
    try:
        build(outgoing)
    except MedasrError as exc:
        return exc.kind
    return None


def _count_left(uow: Any, preview: PlanPreview, *, target: str) -> None:
    for count in uow.deliveries.delivery_counts_by_target():
        mine = count.target == target
        if count.status == "in_doubt":
            preview.in_doubt += count.rows
        elif mine and count.status == "pending":
            preview.waiting += count.rows
        elif mine and count.status == "failed":
            refused = (
                preview.missing_metadata + preview.invalid_metadata + preview.invalid_documents
            )
            preview.not_retried += count.rows - refused


def plan_rules(
    target: Target,
    query: DocsQuery,
    *,
    allow_unlinked: bool,
    build: Callable[[Outgoing], bytes] | None = None,
) -> PlanRules:
    """Manifest columns a document needs: the query's for docs, patient_id for MDM (PID-3)
    and for FHIR (subject) unless filed unlinked on purpose; `build` builds the document
    as the target's sender would (builders.document_builder)."""
    if target.kind is TargetKind.DOCS:
        return PlanRules(
            needed=query.fields, linked=lambda _: bool(query.fields), kind=target.kind, build=build
        )
    needed = () if target.kind is TargetKind.FHIR and allow_unlinked else ("patient_id",)
    return PlanRules(
        needed=needed,
        linked=lambda columns: bool(columns.get("patient_id")),
        kind=target.kind,
        build=build,
    )
