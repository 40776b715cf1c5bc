"""`medasr deliver`: file done transcripts in the patient record.

`--to` (or MEDASR_DELIVERY__TARGET) says where: `docs` (POST /mr/api/v2/docs, the
default), `mllp://HOST:PORT` / `mllps://` (HL7 v2.5.1 MDM) or `fhir+http(s)://BASE`.

Exit codes: 0 every document delivered (or nothing to do), 1 some failed, 2 usage or
configuration (settings, MEDASR_DOCS_QUERY, the manifest, no database), 3 credentials
rejected, 130 interrupted. Runs without Prefect: a delivery is a few requests, not a
backlog; the nightly deployment runs the same code as a task.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from config.errors import (
    EXIT_CREDENTIALS,
    EXIT_INTERRUPTED,
    ConfigError,
    MedasrError,
    exit_code_of,
)
from config.settings import Settings, load_settings
from flows.cli.console import print_summary
from flows.cli.error_exits import usage_error
from flows.cli.interrupts import run_interruptibly
from flows.cli.log_level import medasr_log_level
from service.contract import LANGUAGES, is_supported_language
from service.errors import CredentialsRejected
from service.preflight import check_service_config
from service.status import require_token
from storage import open_store
from storage.database import database_exists
from storage.interface import UnitOfWorkFactory
from storage.manifest import metadata_by_uri, read_manifest
from tasks.delivery.builders import document_builder
from tasks.delivery.deliverer import deliver_pending, delivery_summary
from tasks.delivery.documents import DocsQuery, parse_docs_query, require_patient_link
from tasks.delivery.plan import PlanRules, plan_rules, preview_deliveries
from tasks.delivery.senders import check_target_token, configured_target, target_dedupes
from tasks.delivery.target_aliases import check_target_alias, seen_targets
from tasks.delivery.targets import Target, TargetKind, parse_target
from tasks.discovery.recording_names import one_line
from tasks.throttle.gate import operator_interrupted


class DeliverFormat(StrEnum):
    """What `medasr deliver` uploads."""

    txt = "txt"
    fhir = "fhir"


def deliver_command(
    language: Annotated[
        str | None, typer.Option("--language", "-l", help="Only this language.")
    ] = None,
    deliver_format: Annotated[
        DeliverFormat | None,
        typer.Option("--format", help="txt, or fhir (a FHIR R4 DocumentReference)."),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print what would be sent; send nothing.")
    ] = False,
    manifest: Annotated[
        Path | None,
        typer.Option(
            "--manifest", help="Metadata CSV (column 'path' relative to the CSV's folder)."
        ),
    ] = None,
    to: Annotated[
        str | None,
        typer.Option(
            "--to",
            help="docs (default), mllp://HOST:PORT, mllps://HOST:PORT or fhir+https://BASE.",
        ),
    ] = None,
    resend_in_doubt: Annotated[
        bool,
        typer.Option(
            "--resend-in-doubt",
            help="Send again the deliveries in doubt (sent, no answer recorded): only once "
            "you checked the patient record does not hold them.",
        ),
    ] = False,
    allow_unlinked: Annotated[
        bool,
        typer.Option(
            "--allow-unlinked",
            help="File notes with no patient link on purpose (docs with no MEDASR_DOCS_QUERY "
            "column, FHIR with no patient_id); the dry run counts them.",
        ),
    ] = False,
    new_target: Annotated[
        bool,
        typer.Option(
            "--new-target",
            help="The target is another receiver, though its address is one delivered to "
            "under another spelling.",
        ),
    ] = False,
) -> None:
    """Send every done transcript not yet delivered in its current version."""
    settings, query = _checked_settings(language)
    target = _checked_target(settings, to)
    _require_database(settings)  # with no store there is nothing to deliver: say that first
    _check_before_sending(settings, target, query, allow_unlinked=allow_unlinked)
    store = _open_store(settings)
    try:
        choices = _Choices(
            language=language,
            format_name=(deliver_format or DeliverFormat(settings.delivery.format)).value,
            target=_known_target(store, target, new_target=new_target),
            resend_in_doubt=resend_in_doubt,
            allow_unlinked=allow_unlinked,
            new_target=new_target,
        )
        listed = {}
        if manifest is not None:
            listed = _apply_manifest(store, manifest, language=language, dry_run=dry_run)
            _say_unmatched_columns(listed, query)
        if dry_run:
            _print_plan(store, settings, choices, manifest=listed, query=query)
            return
        summary, stopped = _deliver(settings, store, choices)
    finally:
        store.dispose()
    title = f"medasr deliver ({_what(choices.target, choices.format_name)})"
    print_summary(summary, title=title, store=settings.storage.store_location)
    _say_why_it_stopped(summary, settings=settings, target=choices.target, stopped=stopped)
    raise typer.Exit(summary["exit_code"])


@dataclass(frozen=True)
class _Choices:
    """What the person chose for this delivery, checked."""

    language: str | None
    format_name: str
    target: Target
    resend_in_doubt: bool
    allow_unlinked: bool
    new_target: bool


def _say_why_it_stopped(
    summary: dict[str, Any], *, settings: Settings, target: Target, stopped: MedasrError | None
) -> None:
    """A line for each reason the run left documents for later or for a person."""
    if summary["stopped_by_configuration"] and stopped is not None:  # e.g. TLS not verified
        typer.echo(
            f"medasr: stopped: {one_line(str(stopped))}; undelivered documents stay pending",
            err=True,
        )
    if summary["credentials_rejected"]:
        typer.echo(
            "medasr: stopped: credentials rejected; undelivered documents stay pending "
            f"(set a valid {_token_variable(target)})",
            err=True,
        )
    if summary["receiver_silent"]:
        typer.echo(
            "medasr: stopped: the engine answered none of the last "
            f"{settings.delivery.hl7_stop_after_unanswered} documents; undelivered documents "
            "stay pending",
            err=True,
        )
    if summary["exit_code"] == EXIT_INTERRUPTED:
        _interrupted_line()
    if summary["documents_in_doubt"]:
        typer.echo(
            f"medasr: {summary['documents_in_doubt']} document(s) in doubt: sent, no answer "
            "recorded; check the patient record, then `medasr deliver --resend-in-doubt`",
            err=True,
        )


def _checked_settings(language: str | None) -> tuple[Settings, DocsQuery]:
    try:
        if language is not None and not is_supported_language(language):
            raise ConfigError(
                f"unsupported language {language!r}; use one of: {', '.join(LANGUAGES)}"
            )
        settings = load_settings()
        check_service_config(service=settings.service, encryption=settings.encryption)
        return settings, parse_docs_query(settings.delivery.docs_query)
    except ConfigError as exc:
        usage_error("configuration error", exc)


def _checked_target(settings: Settings, to: str | None) -> Target:
    try:
        if to is None:
            return configured_target(settings)
        return parse_target(to, allow_insecure=settings.service.allow_insecure_http)
    except ConfigError as exc:
        usage_error("configuration error", exc)


def _known_target(store: UnitOfWorkFactory, target: Target, *, new_target: bool) -> Target:
    """The target as the ledger knows it; a new spelling of a known address is exit 2."""
    with store.unit_of_work(read_only=True) as uow:
        known = seen_targets(uow)
    try:
        return check_target_alias(target, known=known, new_target=new_target)
    except ConfigError as exc:
        store.dispose()
        usage_error("configuration error", exc)


def _check_before_sending(
    settings: Settings, target: Target, query: DocsQuery, *, allow_unlinked: bool
) -> None:
    """What stops the real run before it sends anything stops the dry run the same way."""
    try:
        if target.kind is not TargetKind.MLLP:  # a missing token: configuration, exit 2
            fhir = target.kind is TargetKind.FHIR
            token = settings.delivery.fhir_token if fhir else settings.service.token
            require_token(token, setting=_token_variable(target))
        check_target_token(target, settings)
        if target.kind is TargetKind.DOCS:
            require_patient_link(query, allow_unlinked=allow_unlinked)
    except CredentialsRejected as exc:
        typer.echo(f"medasr: credentials rejected: {exc}", err=True)
        raise typer.Exit(EXIT_CREDENTIALS) from None
    except ConfigError as exc:
        usage_error("configuration error", exc)


def _token_variable(target: Target) -> str:
    return "MEDASR_FHIR_TOKEN" if target.kind is TargetKind.FHIR else "MEDASR_TOKEN"


def _what(target: Target, format_name: str) -> str:
    """`format` for the docs upload, the target otherwise."""
    return format_name if target.kind is TargetKind.DOCS else target.name


def _require_database(settings: Settings) -> None:
    storage = settings.storage
    try:
        if not database_exists(storage.database_url):
            where = storage.database_url_redacted
            raise ConfigError(f"no database at {where}: nothing to deliver")
    except ConfigError as exc:
        usage_error("configuration error", exc)
    except MedasrError as exc:
        usage_error("database error", exc)


def _open_store(settings: Settings) -> UnitOfWorkFactory:
    try:
        return open_store(settings.storage)
    except ConfigError as exc:
        usage_error("configuration error", exc)
    except MedasrError as exc:
        usage_error("database error", exc)


def _apply_manifest(
    store: UnitOfWorkFactory, path: Path, *, language: str | None, dry_run: bool
) -> dict[str, dict[str, str]]:
    """Store the manifest's columns on the recordings it names (not in a dry run).

    Returns the columns by source URI, which a dry run counts with instead.
    """
    try:
        rows = read_manifest(path)
    except ConfigError as exc:
        store.dispose()
        usage_error("manifest error", exc)
    by_uri = metadata_by_uri(rows, source_root=str(path.resolve().parent))
    if dry_run:
        typer.echo(f"manifest {path}: {len(by_uri)} row(s) read (a dry run stores nothing)")
        return by_uri
    with store.unit_of_work() as uow:
        changed = uow.items.set_item_metadata(by_uri, language=language)
    typer.echo(f"manifest {path}: {len(by_uri)} row(s), {changed} recording(s) updated", err=True)
    return by_uri


def _say_unmatched_columns(by_uri: dict[str, dict[str, str]], query: DocsQuery) -> None:
    """One line per MEDASR_DOCS_QUERY name that a manifest column matches only by case."""
    columns = {column for row in by_uri.values() for column in row}
    for name in query.fields:
        close = sorted(c for c in columns if c != name and c.casefold() == name.casefold())
        if name not in columns and close:
            typer.echo(
                f"medasr: manifest column {close[0]!r} is not {name!r}: MEDASR_DOCS_QUERY names "
                "match columns exactly (case included); rename the column",
                err=True,
            )


def _deliver(
    settings: Settings, store: UnitOfWorkFactory, choices: _Choices
) -> tuple[dict[str, Any], MedasrError | None]:
    """The delivery's summary and what stopped it. The first Ctrl-C or SIGTERM
    (run_interruptibly) lets the uploads on the wire end and be recorded and gives the
    other documents back: asyncio's own KeyboardInterrupt cancelled them mid-request,
    left in doubt for a person."""
    _print_lines_through_prefects_console()
    with medasr_log_level(settings.pipeline.log_level):
        try:
            delivery = deliver_pending(
                settings=settings,
                store=store,
                language=choices.language,
                format_name=choices.format_name,
                resend_in_doubt=choices.resend_in_doubt,
                target=choices.target,
                allow_unlinked=choices.allow_unlinked,
                new_target=choices.new_target,
            )
            stats = asyncio.run(run_interruptibly(delivery))
        except KeyboardInterrupt:  # before the handlers were in place
            _interrupted_line()
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except ConfigError as exc:
            usage_error("configuration error", exc)
    summary = delivery_summary(stats)
    if operator_interrupted() is not None:
        summary["exit_code"] = EXIT_INTERRUPTED
    return summary, stats.stopped


def _interrupted_line() -> None:
    typer.echo(
        "medasr: interrupted: delivered documents are recorded, those sent without "
        "an answer are in doubt (see `medasr status`), the others are pending; run "
        "the same command again to go on",
        err=True,
    )


def _print_lines_through_prefects_console() -> None:
    """A delivery's lines ("delivered …", a failure's warning) are log records, printed by
    the console handler Prefect's logging configuration gives medasr's loggers. `deliver`
    runs no flow, so it sets that configuration up itself."""
    import prefect.main  # noqa: F401  (its import runs setup_logging)


def _print_plan(
    store: UnitOfWorkFactory,
    settings: Settings,
    choices: _Choices,
    *,
    manifest: dict[str, dict[str, str]],
    query: DocsQuery,
) -> None:
    """What a real run would send: its own plan and claims, rolled back (with `manifest`
    stored first, as the real run stores it)."""
    target, format_name = choices.target, choices.format_name
    rules = _plan_rules(settings, choices, query)
    try:
        preview = preview_deliveries(
            store,
            language=choices.language,
            format_name=format_name,
            max_attempts=settings.service.max_attempts,
            resend_in_doubt=choices.resend_in_doubt or target_dedupes(target),
            target=target.name,
            rules=rules,
            manifest=manifest,
        )
    except MedasrError as exc:
        store.dispose()
        usage_error("database error", exc)
    summary: dict[str, Any] = {"target": target.name, **vars(preview), "sent": 0}
    # As the real run would end: a document it cannot send, or one in doubt, needs a person.
    summary["exit_code"] = exit_code_of(
        needs_a_person=preview.missing_metadata
        + preview.invalid_metadata
        + preview.invalid_documents
        + preview.in_doubt
        > 0
    )
    title = f"medasr deliver dry run ({_what(target, format_name)}): nothing sent"
    print_summary(summary, title=title, store=settings.storage.store_location)
    raise typer.Exit(summary["exit_code"])


def _plan_rules(settings: Settings, choices: _Choices, query: DocsQuery) -> PlanRules:
    """The rules the real run's plan follows: the patient link, the document built."""
    build = document_builder(
        choices.target,
        settings,
        format_name=choices.format_name,
        query=query,
        allow_unlinked=choices.allow_unlinked,
    )
    return plan_rules(choices.target, query, allow_unlinked=choices.allow_unlinked, build=build)
