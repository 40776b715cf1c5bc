"""`medasr quality` (reviewed notes' word accuracy by group) and `medasr quality corrections`
(the recurring substitutions reviewers made).

Reading figures is not access to patient data and is not recorded; writing them out as
jsonl or csv is an export, recorded as a `quality_exported` event after the rows are
written. Exit codes: 0 done, 2 a bad option or no database, 1 a store error.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Annotated, Any

import typer

from audit import AuditAction, command_actor, record_event
from audit.filters import parse_when
from config.errors import ConfigError
from config.settings import load_settings
from flows.cli.error_exits import command_errors
from flows.cli.quality_tables import (
    CORRECTION_COLUMNS,
    GROUP_COLUMNS,
    QualityFormat,
    correction_record,
    group_record,
    write_records,
)
from storage import open_review_store
from storage.accuracy_records import AccuracyFilter
from storage.database import database_exists
from storage.review_interface import ReviewStore
from tasks.review.quality_reading import (
    QualityQuestion,
    checked_grouping,
    checked_language,
    read_corrections,
    read_quality,
)

quality_app = typer.Typer(invoke_without_command=True)

_By = Annotated[
    str | None,
    typer.Option(
        "--by", help="Group by author, department, language, reviewer, month or a manifest column."
    ),
]
_Since = Annotated[
    str | None, typer.Option("--since", help="Notes reviewed at or after DATE (ISO, UTC).")
]
_Until = Annotated[
    str | None, typer.Option("--until", help="Notes reviewed before DATE's end (ISO, UTC).")
]
_Language = Annotated[str | None, typer.Option("--language", "-l", help="Only notes of CODE.")]
_Format = Annotated[
    QualityFormat,
    typer.Option("--format", help="table (default), jsonl or csv (an export: recorded)."),
]
# A reading's rows and the words after their count on stderr ("12 group(s), 900 note(s)").
Reading = tuple[list[dict[str, Any]], str]


@quality_app.callback()
def quality_command(
    ctx: typer.Context,
    by: _By = None,
    since: _Since = None,
    until: _Until = None,
    language: _Language = None,
    min_notes: Annotated[
        int, typer.Option("--min-notes", min=1, help="Leave out groups of fewer notes.")
    ] = 1,
    quality_format: _Format = QualityFormat.table,
) -> None:
    """Reviewed notes' word accuracy by group, with a 95 % interval and the change
    against the previous period; `medasr quality corrections` lists recurring fixes."""
    if ctx.invoked_subcommand is not None:
        return

    def figures(store: ReviewStore, question: QualityQuestion) -> Reading:
        groups = read_quality(store, question)
        notes = sum(group.notes for group in groups)
        return [group_record(group) for group in groups], f"group(s), {notes} note(s)"

    _write_reading(ctx, figures, what="figures", columns=GROUP_COLUMNS)


@quality_app.command("corrections")
def corrections_command(
    ctx: typer.Context,
    by: _By = None,
    since: _Since = None,
    until: _Until = None,
    language: _Language = None,
    top: Annotated[int, typer.Option("--top", min=1, help="The N most frequent per group.")] = 50,
    quality_format: _Format = QualityFormat.table,
) -> None:
    """The recurring substitutions (machine words -> final words), counted over notes,
    with how many authors; only from notes whose texts are still kept."""

    def corrections(store: ReviewStore, question: QualityQuestion) -> Reading:
        found = read_corrections(store, question, top=top)
        return [correction_record(correction) for correction in found], "correction(s)"

    _write_reading(ctx, corrections, what="corrections", columns=CORRECTION_COLUMNS)


def _write_reading(
    ctx: typer.Context,
    read: Callable[[ReviewStore, QualityQuestion], Reading],
    *,
    what: str,
    columns: Sequence[str],
) -> None:
    """Both commands' shape: the question from the options, the store read, the rows
    written, an export (jsonl, csv) recorded, and the rows counted on stderr."""
    options = ctx.params
    quality_format: QualityFormat = options["quality_format"]
    with command_errors():
        asked = _question(
            options["by"], since=options["since"], until=options["until"],
            language=options["language"], min_notes=options.get("min_notes", 1),
        )  # fmt: skip
        store = _open_store()
        try:
            records, counted = read(store, asked)
            count = write_records(
                records, sys.stdout, columns=columns, quality_format=quality_format
            )
            if quality_format is not QualityFormat.table:
                _record_export(store, what=what, count=count, ctx=ctx)
        finally:
            store.dispose()
    typer.echo(f"{count} {counted}", err=True)


def _question(
    by: str | None, *, since: str | None, until: str | None, language: str | None, min_notes: int
) -> QualityQuestion:
    language = checked_language(language)
    selection = AccuracyFilter(
        since=parse_when(since, option="--since") if since else None,
        until=parse_when(until, option="--until", end_of_day=True) if until else None,
        language=language,
    )
    return QualityQuestion(by=checked_grouping(by), selection=selection, min_notes=min_notes)


def _open_store() -> ReviewStore:
    storage = load_settings().storage
    if not database_exists(storage.database_url):
        raise ConfigError(f"no database at {storage.database_url_redacted}: nothing reviewed yet")
    return open_review_store(storage)


def _record_export(store: ReviewStore, *, what: str, count: int, ctx: typer.Context) -> None:
    """Figures left medasr as a file: one event with what was asked and how many rows."""
    asked: dict[str, Any] = {
        k: str(v)[:64] for k, v in ctx.params.items() if v is not None and k != "quality_format"
    }
    fmt = str(ctx.params.get("quality_format", ""))
    with store.unit_of_work() as uow:
        record_event(
            uow,
            action=AuditAction.QUALITY_EXPORTED,
            actor=command_actor(),
            target=fmt,
            detail={"what": what, "rows": count, "format": fmt, **asked},
        )
