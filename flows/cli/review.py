"""`medasr review`: the recordings the quality gate held back, and a person's decision on them.

Without options it lists the needs_review items (id, source, language, flags, audio,
why it waits: `flag: ...`, `author below 0.97`, `new author`, `sample`, `all`), never
their text; each recording is named by its path relative to the source of a
recorded run, escaped onto one line.
`--accept ID` makes an item done as it is (its words counted as read and right in the
quality figures: tasks/review/decisions.py); `--resend ID` forgets its
transcript and chunks and puts it back to pending, so the next `medasr run` over its
source sends every chunk again. All the decisions of one command are made in one
transaction: one ID that is not waiting for review changes nothing and exits 2.
Exit codes: 0 done, 2 usage (unknown ID, no database, conflicting options), 1 store error.
"""

from __future__ import annotations

from typing import Annotated

import typer

from audit import command_actor
from config.errors import ConfigError
from config.settings import load_settings
from flows.cli.console import print_store
from flows.cli.error_exits import command_errors
from service.contract import is_supported_language
from storage import open_review_store
from storage.database import database_exists
from storage.records import ItemRecord
from storage.review_interface import ReviewStore
from tasks.discovery.recording_names import one_line, recording_name
from tasks.review import decisions
from tasks.review.decisions import waiting_reason

_HEADER = "id\tsource\tlanguage\tflags\taudio_min\tupdated_at\treason"


def review_command(
    accept: Annotated[
        list[int] | None, typer.Option("--accept", help="Accept item ID as it is (done).")
    ] = None,
    resend: Annotated[
        list[int] | None,
        typer.Option("--resend", help="Re-queue item ID: its chunks are sent again."),
    ] = None,
    language: Annotated[
        str | None, typer.Option("--language", "-l", help="Only list items of this language.")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=0, help="List at most N (0: all).")] = 0,
) -> None:
    """List transcripts flagged by the quality gate; accept or re-queue them by ID."""
    with command_errors():
        accepted, resent = list(dict.fromkeys(accept or ())), list(dict.fromkeys(resend or ()))
        _check_options(accepted, resent, language=language)
        store = _open_store()
        try:
            if accepted or resent:
                _decide(store, accepted=accepted, resent=resent)
            else:
                _list(store, language=language, limit=limit)
        finally:
            store.dispose()


def _check_options(accepted: list[int], resent: list[int], *, language: str | None) -> None:
    """Raises ConfigError for an ID both accepted and re-sent, or an unknown language."""
    both = sorted(set(accepted) & set(resent))
    if both:
        raise ConfigError(f"item(s) {both} given to both --accept and --resend; choose one")
    if language is not None and not is_supported_language(language):
        raise ConfigError(f"unsupported language {language[:16]!r}")


def _open_store() -> ReviewStore:
    storage = load_settings().storage
    if not database_exists(storage.database_url):
        raise ConfigError(f"no database at {storage.database_url_redacted}: nothing to review")
    return open_review_store(storage)


def _decide(store: ReviewStore, *, accepted: list[int], resent: list[int]) -> None:
    """Accept and re-queue in one transaction (all or nothing), each decision's audit
    event committed with it (tasks/review/decisions.py); prints one line per item."""
    lines, actor = [], command_actor()
    with store.unit_of_work() as uow:
        roots = uow.runs.run_sources()
        for item_id in accepted:
            item = decisions.accept_as_is(uow, item_id=item_id, author=actor, base_revision=None)
            lines.append(f"accepted item {item.id} ({_source(item, roots)}): done")
        for item_id in resent:
            item = decisions.send_back(uow, item_id=item_id, author=actor, base_revision=None)
            lines.append(
                f"re-queued item {item.id} ({_source(item, roots)}): pending; "
                "the next `medasr run` over its source sends its chunks again"
            )
    for line in lines:
        typer.echo(line)


def _list(store: ReviewStore, *, language: str | None, limit: int) -> None:
    with store.unit_of_work(read_only=True) as uow:
        items = uow.reviews.list_needs_review(language=language, limit=limit)
        # The list is bounded by --limit; the count a reviewer reads must not be.
        waiting = uow.reviews.queue_size(language=language).waiting
        roots = uow.runs.run_sources()
    typer.echo(_HEADER)
    for item in items:
        minutes = f"{(item.duration_ms or 0) / 60_000:.1f}"
        flags = one_line(",".join(item.flags))
        updated = item.updated_at.isoformat(timespec="seconds")
        source, language = _source(item, roots), one_line(item.language)
        reason = one_line(waiting_reason(item))
        typer.echo(f"{item.id}\t{source}\t{language}\t{flags}\t{minutes}\t{updated}\t{reason}")
    shown = f" ({len(items)} shown, --limit {limit})" if len(items) < waiting else ""
    typer.echo(f"{waiting} item(s) need review{shown}", err=True)
    print_store(load_settings().storage.store_location, err=True)


def _source(item: ItemRecord, roots: list[str]) -> str:
    return recording_name(item.source_uri, roots=roots)
